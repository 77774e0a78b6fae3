package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tuma-sms/tuma/carriers/smpp"
)

// syncBuffer is output written by one goroutine and read by another.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runControlledSMSC runs `tuma smsc -control` with more flags until the test ends; it
// returns the SMPP address and the control's URL.
func runControlledSMSC(t *testing.T, flags ...string) (smppAddr, controlURL string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	args := append([]string{"-addr", "127.0.0.1:0", "-control", "127.0.0.1:0"}, flags...)
	go func() {
		done <- runSMSC(ctx, args, &out, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("tuma smsc: %v", err)
		}
	})
	addrs := regexp.MustCompile(`listening on (\S+) [\s\S]*control on (http://\S+) `)
	var m []string
	for deadline := time.Now().Add(5 * time.Second); m == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no addresses in %q", out.String())
		}
		m = addrs.FindStringSubmatch(out.String())
	}
	return m[1], m[2]
}

// controlBind binds an ESME to the SMSC at addr until the test ends.
func controlBind(t *testing.T, addr string, hooks smpp.BindHooks) *smpp.Bind {
	t.Helper()
	b, err := smpp.NewBind(smpp.BindConfig{Name: "t", Addr: addr, SystemID: "tuma", Password: "secret", Window: 10,
		EnquireLink: time.Second, ResponseTimeout: 2 * time.Second, ReconnectMin: 10 * time.Millisecond,
		ReconnectMax: 100 * time.Millisecond, ThrottlePause: 10 * time.Millisecond},
		hooks, slog.New(slog.NewTextHandler(io.Discard, nil)), smpp.NewMetrics(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// `tuma smsc -control` delivers a subscriber's message to the bound ESME on POST /mo: a long
// UCS-2 text in parts with a 16-bit reference reaches the bind's handler whole.
func TestSMSCControlSendsMO(t *testing.T) {
	smppAddr, control := runControlledSMSC(t)
	got := make(chan smpp.MO, 4)
	controlBind(t, smppAddr, smpp.BindHooks{MO: func(_ context.Context, mo smpp.MO) error { got <- mo; return nil }})
	long := strings.Repeat("Karibu 😀 ", 20) // UCS-2, 3 parts
	r, err := http.Post(control+"/mo", "application/json",
		strings.NewReader(`{"from":"254712345678","to":"22384","text":"`+long+`","concat":"udh16"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"parts":3}` {
		t.Fatalf("POST /mo = %d %s", r.StatusCode, body)
	}
	select {
	case mo := <-got:
		if mo.Text != long || mo.Source != "254712345678" || mo.Dest != "22384" || mo.Parts != 3 {
			t.Fatalf("the ESME got %+v", mo)
		}
	default:
		t.Fatal("answered 200 before the ESME's handler took the message")
	}
	r, err = http.Post(control+"/mo", "application/json", strings.NewReader(`{"from":"254712345678","to":"22384","text":""}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 400 {
		t.Errorf("POST /mo of an empty text = %d; want 400", r.StatusCode)
	}
}

// GET /stats answers the counters and the submits accepted in each second, which a drill
// checks against a network's TPS cap; since narrows the seconds and must be unix seconds.
func TestSMSCControlStats(t *testing.T) {
	smppAddr, control := runControlledSMSC(t, "-tps", "3", "-reject-prefix", "25400")
	b := controlBind(t, smppAddr, smpp.BindHooks{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.WaitBound(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Unix()
	submit := func(dest string) error {
		_, err := b.Submit(ctx, &smpp.PDU{SourceTON: 5, Source: "TUMA", DestTON: 1, DestNPI: 1, Dest: dest,
			ShortMessage: []byte("x")})
		return err
	}
	if err := submit("254001234567"); !errors.Is(err, smpp.StatusInvDstAdr) {
		t.Fatalf("refused destination: %v", err)
	}
	ok, throttled := 0, 0
	for ok < 4 || throttled == 0 { // past the cap of 3, into a second second
		switch err := submit("254712345678"); {
		case err == nil:
			ok++
		case errors.Is(err, smpp.StatusThrottled):
			throttled++
		default:
			t.Fatal(err)
		}
	}
	get := func(query string) (int, string, []byte) {
		t.Helper()
		r, err := http.Get(control + "/stats" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		body, _ := io.ReadAll(r.Body)
		return r.StatusCode, r.Header.Get("Content-Type"), body
	}
	code, ctype, body := get("")
	var st smscStats
	if err := json.Unmarshal(body, &st); code != 200 || ctype != "application/json" || err != nil {
		t.Fatalf("GET /stats = %d %s %s (%v)", code, ctype, body, err)
	}
	if st.Binds != 1 || st.Submits != uint64(ok) || st.Throttled != uint64(throttled) || st.Rejected != 1 {
		t.Fatalf("GET /stats = %s; sent %d accepted, %d throttled, 1 refused", body, ok, throttled)
	}
	sum := 0
	for _, c := range st.Seconds {
		sum += c.Submits
		if c.Submits > 3 || c.Second < start {
			t.Errorf("second %d: %d submits, under a cap of 3 since %d", c.Second, c.Submits, start)
		}
	}
	if sum != ok || len(st.Seconds) < 2 {
		t.Fatalf("seconds %+v sum to %d; want %d over 2 seconds at least", st.Seconds, sum, ok)
	}
	last := st.Seconds[len(st.Seconds)-1]
	code, _, body = get(fmt.Sprintf("?since=%d", last.Second))
	if want := fmt.Sprintf(`"seconds":[{"second":%d,"submits":%d}]}`, last.Second, last.Submits); code != 200 ||
		!strings.HasSuffix(strings.TrimSpace(string(body)), want) {
		t.Errorf("GET /stats?since=%d = %d %s; want it ending %s", last.Second, code, body, want)
	}
	code, _, body = get(fmt.Sprintf("?since=%d", time.Now().Unix()+60))
	if code != 200 || !strings.Contains(string(body), `"seconds":[]`) {
		t.Errorf("GET /stats from a minute ahead = %d %s; want no seconds", code, body)
	}
	for _, bad := range []string{"?since=yesterday", "?since=", "?since=1.5"} {
		if code, _, body := get(bad); code != 400 || !strings.Contains(string(body), "unix seconds") {
			t.Errorf("GET /stats%s = %d %s; want 400 asking for unix seconds", bad, code, body)
		}
	}
}
