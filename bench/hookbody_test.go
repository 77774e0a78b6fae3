package bench

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// wantEvents reads a body with encoding/json, generically (so keys are exact), into what
// scanHookBody reports, or the error it must report.
func wantEvents(body []byte) ([]hookEvent, error) {
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("not an object")
	}
	str := func(v any, into *[]byte) error {
		switch v := v.(type) {
		case nil:
			*into = nil
		case string:
			*into = []byte(v)
		default:
			return errors.New("not a string")
		}
		return nil
	}
	var out []hookEvent
	evs, has := top["events"]
	if !has {
		return nil, nil
	}
	list, ok := evs.([]any)
	if !ok {
		return nil, errors.New("events is not an array")
	}
	for _, e := range list {
		obj, ok := e.(map[string]any)
		if !ok {
			return nil, errors.New("an event is not an object")
		}
		var ev hookEvent
		for k, into := range map[string]*[]byte{"id": &ev.ID, "type": &ev.Type, "created_at": &ev.CreatedAt} {
			if v, has := obj[k]; has {
				if err := str(v, into); err != nil {
					return nil, err
				}
			}
		}
		switch d := obj["data"].(type) {
		case nil:
		case map[string]any:
			if err := str(d["message_id"], &ev.MessageID); err != nil {
				return nil, err
			}
		default:
			return nil, errors.New("data is not an object")
		}
		out = append(out, ev)
	}
	return out, nil
}

func TestScanHookBody(t *testing.T) {
	for _, tt := range []struct {
		body string
		ok   bool
	}{
		{`{"events":[{"id":"evt_1","type":"message.sent","created_at":"2026-11-26T10:00:00.5Z","data":{"message_id":"m1","n":[1,-2.5e3,true,false,null,{}]}}]}`, true},
		{` { "other" : {"events":1}, "events" : [ {"data":null,"id":"a\"b\u00e9\n"} , {} ] } `, true},
		{`{"events":[{"id":"x","data":{"message_id":"m","message_id":"n"}}]}`, true}, // the last key wins
		{`{"events":[{"id":"x"}],"events":[{"id":"y","data":{"message_id":"m"},"data":{}}]}`, true},
		{`{"events":[{"\u0069d":"x","id":null,"type":"\u00e9` + "\xff" + `"}]}`, true},
		{`{"events":[{"tYpe":"x"}]}`, true},
		{`{"events":[null]}`, false},
		{`{"events":[{"data":"text"}]}`, false},
		{`{"events":[{"id":1}]}`, false},
		{`{"events":{}}`, false},
		{`{"events":[{"id":"a"}]} x`, false},
		{`{"events":[{"id":"a` + "\x01" + `"}]}`, false},
		{`{"events":[{"id":"a\x"}]}`, false},
		{`{"events":[{"id":"a"},]}`, false},
		{`{"n":01}`, false},
		{`{"n":1.}`, false},
		{`{"n":-}`, false},
		{`{"n":tru}`, false},
		{`{"events":[{"id":"a"}]`, false},
		{``, false},
	} {
		got, err := scanHookBody([]byte(tt.body), nil)
		if (err == nil) != tt.ok {
			t.Errorf("%s: error %v, want ok %v", tt.body, err, tt.ok)
			continue
		}
		if !tt.ok {
			continue
		}
		want, werr := wantEvents([]byte(tt.body))
		if werr != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %q; encoding/json reads %q (%v)", tt.body, got, want, werr)
		}
	}
}

// The scanner accepts what encoding/json accepts and reads from it what encoding/json reads.
func FuzzScanHookBody(f *testing.F) {
	f.Add([]byte(`{"events":[{"id":"evt_1","type":"message.sent","created_at":"2026-11-26T10:00:00Z","data":{"message_id":"m"}}]}`))
	f.Add([]byte(`{"events":[{"id":"a\u0041\\","data":null},{"x":[1e5,{"y":"z"}]}],"more":null}`))
	f.Add([]byte(`{"events":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := scanHookBody(body, nil)
		want, werr := wantEvents(body)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: scanner %v, encoding/json %v", body, err, werr)
		}
		if err == nil && !json.Valid(body) {
			t.Fatalf("accepted %q, which is not JSON", body)
		}
		if err == nil && fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%q: read %q; encoding/json reads %q", body, got, want)
		}
	})
}

// The receiver's CPU per event, on deliveries of 100 events shaped as the server's.
func BenchmarkHookReceive(b *testing.B) {
	rcv := &hookReceiver{seed: maphash.MakeSeed(), secrets: map[int][]byte{0: []byte("0123456789abcdef0123456789abcdef")}, events: map[uint64]struct{}{},
		messages: map[uuid.UUID]uint8{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hook/{n}", rcv.receive)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	mk := func(k int) []byte {
		var sb strings.Builder
		sb.WriteString(`{"events":[`)
		for i := range 100 {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"id":"evt_%016x","type":"message.sent","created_at":%q,"data":{"message_id":"0b0e7a36-4f6f-4c55-9d0e-%012x",`+
				`"job_id":"0b0e7a36-4f6f-4c55-9d0e-6c2f8a1d0001","campaign_id":null,"reference":null,"recipient":"+254712345678",`+
				`"network":"safaricom","sender_id":"TUMA","status":"sent","provider_status":"ENROUTE","provider_message_id":"abc-%d",`+
				`"parts":1,"cost_kes":"0.80","sent_at":%q,"delivered_at":null}}`, k*100+i, now, k*100+i, k*100+i, now)
		}
		sb.WriteString(`]}`)
		return []byte(sb.String())
	}
	sign := func(body []byte) http.Header {
		h := http.Header{}
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		m := hmac.New(sha256.New, rcv.secrets[0])
		fmt.Fprintf(m, "msg_1.%s.", ts)
		m.Write(body)
		h.Set("webhook-id", "msg_1")
		h.Set("webhook-timestamp", ts)
		h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
		return h
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		body := mk(i)
		req := httptest.NewRequest("POST", "/hook/0", bytes.NewReader(body))
		req.Header = sign(body)
		w := httptest.NewRecorder()
		b.StartTimer()
		mux.ServeHTTP(w, req)
		if w.Code != http.StatusNoContent {
			b.Fatalf("answered %d", w.Code)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/event")
}

// plainRun stops at the first quote, backslash or control character, wherever it falls in
// the eight bytes it tests at once, and at no other byte.
func TestPlainRun(t *testing.T) {
	naive := func(b []byte) int {
		for i, c := range b {
			if c == '"' || c == '\\' || c < 0x20 {
				return i
			}
		}
		return len(b)
	}
	for n := 0; n <= 19; n++ {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := bytes.Repeat([]byte{'a'}, n)
				for i := range b { // bytes around it of every kind that is not a stop
					b[i] = []byte{'a', 0x20, 0x7f, 0x80, 0xff, '!', '#', '[', ']'}[(i*7+pos)%9]
				}
				b[pos] = byte(c)
				if pos+1 < n {
					b[pos+1] = 0 // a stop after it must not hide it
				}
				if got, want := plainRun(b), naive(b); got != want {
					t.Fatalf("plainRun(%q) = %d, want %d", b, got, want)
				}
			}
		}
	}
}
