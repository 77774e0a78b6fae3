package smpplink

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/bench/npmtest"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/carriers/smpp"
)

// nodeSMSC is the SMSC of testdata/nodesmsc, on node-smpp: an SMPP implementation nobody on
// this project wrote.
type nodeSMSC struct {
	t      *testing.T
	port   int
	stdin  io.WriteCloser
	mu     sync.Mutex
	events []map[string]any
}

// nodeSMSCFixture is carriers/smpp's node-smpp SMSC, installed once.
var nodeSMSCFixture = &npmtest.Fixture{Src: filepath.Join("..", "..", "carriers", "smpp", "testdata", "nodesmsc"),
	Files: []string{"package.json", "package-lock.json", "smsc.js"}}

// installNodeSMPP installs the fixture's locked packages into a temporary folder, once.
func installNodeSMPP(t *testing.T) string {
	t.Helper()
	dir, err := nodeSMSCFixture.Dir()
	if err != nil {
		t.Fatalf("node-smpp fixture (Node.js and npm are installed by deploy/dev/test-tools.sh): %v", err)
	}
	return dir
}

func startNodeSMSC(t *testing.T, flags ...string) *nodeSMSC {
	t.Helper()
	dir := installNodeSMPP(t)
	cmd := exec.Command("node", append([]string{filepath.Join(dir, "smsc.js")}, flags...)...)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("node: %v", err)
	}
	s := &nodeSMSC{t: t, stdin: stdin}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				s.mu.Lock()
				s.events = append(s.events, ev)
				s.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		<-read
	})
	ev := s.wait("listening", func(map[string]any) bool { return true })
	s.port = int(ev["port"].(float64))
	return s
}

// all returns the events of a kind so far.
func (s *nodeSMSC) all(kind string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, ev := range s.events {
		if ev["event"] == kind {
			out = append(out, ev)
		}
	}
	return out
}

func (s *nodeSMSC) wait(kind string, match func(map[string]any) bool) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, ev := range s.all(kind) {
			if match(ev) {
				return ev
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.t.Fatalf("node SMSC: no %s event", kind)
	return nil
}

// submitsTo waits for n submit events to dest (the fixture's stdout may trail its resps).
func (s *nodeSMSC) submitsTo(dest string, n int) []map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var out []map[string]any
		for _, ev := range s.all("submit") {
			if ev["destination_addr"] == dest {
				out = append(out, ev)
			}
		}
		if len(out) >= n || time.Now().After(deadline) {
			return out
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// receipts collects what the links hand the engine.
type receipts struct {
	mu sync.Mutex
	m  map[string][]actors.CarrierStatus
}

func (r *receipts) sink(_ carriers.Network, id string, st actors.CarrierStatus) {
	r.mu.Lock()
	r.m[id] = append(r.m[id], st)
	r.mu.Unlock()
}

func (r *receipts) get(id string) []actors.CarrierStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]actors.CarrierStatus(nil), r.m[id]...)
}

func nodeLink(t *testing.T, s *nodeSMSC, query string) (actors.Carrier, *receipts) {
	t.Helper()
	binds, err := smpp.ParseBinds("safaricom", fmt.Sprintf("smpp://tuma:secret@127.0.0.1:%d?reconnect=20ms-200ms&throttle_pause=50ms&%s", s.port, query))
	if err != nil {
		t.Fatal(err)
	}
	set, err := New(map[carriers.Network][]smpp.BindConfig{carriers.Safaricom: binds},
		slog.New(slog.NewTextHandler(io.Discard, nil)), smpp.NewMetrics(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	rs := &receipts{m: map[string][]actors.CarrierStatus{}}
	set.Deliver(rs.sink)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := set.WaitBound(ctx); err != nil {
		t.Fatal(err)
	}
	return set.Carriers()[carriers.Safaricom], rs
}

func outgoing(dest, text string) actors.Outgoing {
	seg := carriers.Segment(text)
	return actors.Outgoing{MessageID: uuid.New(), Sender: "TUMA", Destination: dest, Text: text, Parts: seg.Parts, Encoding: seg.Encoding}
}

// submit retries throttled submits as the link actor would.
func submit(t *testing.T, c actors.Carrier, m actors.Outgoing) (id string, throttled int) {
	t.Helper()
	for {
		id, err := c.Submit(context.Background(), m)
		if errors.Is(err, actors.ErrThrottled) {
			throttled++
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatalf("submit to %s: %v", m.Destination, err)
		}
		return id, throttled
	}
}

func waitReceipt(t *testing.T, rs *receipts, id string) actors.CarrierStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if got := rs.get(id); len(got) > 0 {
			return got[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no receipt for %s", id)
	return actors.CarrierStatus{}
}

func TestNodeSMPPInterop(t *testing.T) {
	s := startNodeSMSC(t, "--receipt-delay-ms", "30")
	c, rs := nodeLink(t, s, "")
	s.wait("bind", func(ev map[string]any) bool { return ev["command"] == "bind_transceiver" })

	// A GSM text with extension characters goes out unpacked, data_coding 0.
	id, _ := submit(t, c, outgoing("+254712000001", "Habari {jina} €5"))
	sub := s.submitsTo("254712000001", 1)
	if len(sub) != 1 || sub[0]["data_coding"] != 0.0 || sub[0]["dest_addr_ton"] != 1.0 || sub[0]["source_addr_ton"] != 5.0 {
		t.Fatalf("GSM submit: %v", sub)
	}
	if got := sub[0]["short_message_hex"]; got != hex.EncodeToString([]byte("Habari \x1b(jina\x1b) \x1be5")) {
		t.Fatalf("GSM octets %v", got)
	}
	if st := waitReceipt(t, rs, id); !st.Delivered || !st.Final || st.ProviderStatus != "DELIVRD" {
		t.Fatalf("GSM receipt %+v", st)
	}

	// A 3-part UCS-2 text: three submits, UDH numbered 1/3, 2/3, 3/3 with one reference, and
	// one receipt for the message, under the first part's id, once every part is delivered.
	long := strings.Repeat("ж", 134) + "🙏"
	id, _ = submit(t, c, outgoing("+254712000002", long))
	parts := s.submitsTo("254712000002", 3)
	if len(parts) != 3 {
		t.Fatalf("%d parts went", len(parts))
	}
	var text bytes.Buffer
	var ref byte
	for i, p := range parts {
		b, _ := hex.DecodeString(p["short_message_hex"].(string))
		if p["esm_class"] != 64.0 || p["data_coding"] != 8.0 || len(b) < 6 || b[0] != 5 || b[1] != 0 || b[2] != 3 || b[4] != 3 || b[5] != byte(i+1) {
			t.Fatalf("part %d: esm_class %v data_coding %v UDH % x", i+1, p["esm_class"], p["data_coding"], b[:min(6, len(b))])
		}
		if i == 0 {
			ref = b[3]
		} else if b[3] != ref {
			t.Fatalf("part %d has reference %d, part 1 %d", i+1, b[3], ref)
		}
		text.Write(b[6:])
	}
	if got, _ := smpp.DecodeText(smpp.CodingUCS2, text.Bytes()); got != long {
		t.Fatal("the parts do not join back into the text")
	}
	if st := waitReceipt(t, rs, id); !st.Delivered {
		t.Fatalf("3-part receipt %+v", st)
	}
	for _, p := range parts[1:] {
		if got := rs.get(smpp.NormalizeID(p["message_id"].(string))); len(got) != 0 {
			t.Fatalf("a later part's receipt reached the engine on its own: %v", got)
		}
	}

	// query_sm.
	st, err := c.Query(context.Background(), id)
	if err != nil || !st.Delivered {
		t.Fatalf("query_sm: %+v %v", st, err)
	}
	if _, err := c.Query(context.Background(), "ffffffff"); !errors.Is(err, actors.ErrUnknownMessage) {
		t.Fatalf("query_sm of an unknown id: %v", err)
	}
}

// The bind's TON/NPI options replace the choice by the sender's form.
func TestNodeSMPPAddressTypes(t *testing.T) {
	s := startNodeSMSC(t)
	c, _ := nodeLink(t, s, "source_ton=1&source_npi=1&dest_ton=2&dest_npi=8")
	submit(t, c, outgoing("+254712000009", "ton"))
	sub := s.submitsTo("254712000009", 1)
	if len(sub) != 1 || sub[0]["source_addr_ton"] != 1.0 || sub[0]["source_addr_npi"] != 1.0 ||
		sub[0]["dest_addr_ton"] != 2.0 || sub[0]["dest_addr_npi"] != 8.0 {
		t.Fatalf("submit %v", sub)
	}
}

func TestNodeSMPPThrottling(t *testing.T) {
	s := startNodeSMSC(t, "--tps", "20", "--receipt-delay-ms", "10")
	c, rs := nodeLink(t, s, "")
	var wg sync.WaitGroup
	ids := make([]string, 60)
	var mu sync.Mutex
	throttled := 0
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, n := submit(t, c, outgoing(fmt.Sprintf("+2547130%05d", i), "throttle me"))
			mu.Lock()
			ids[i], throttled = id, throttled+n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if throttled == 0 || len(s.all("throttled")) == 0 {
		t.Fatal("60 submits at once against 20 per second were never throttled")
	}
	for _, id := range ids {
		if st := waitReceipt(t, rs, id); !st.Delivered {
			t.Fatalf("%s: %+v", id, st)
		}
	}
	t.Logf("60 messages, %d throttled answers, all delivered", throttled)
}

func TestNodeSMPPReceiptForms(t *testing.T) {
	cases := []struct {
		name  string
		flags []string
		query string
	}{
		{"decimal ids in receipt texts", []string{"--receipt-mode", "text", "--receipt-id", "dec"}, "ids=hex-dec"},
		{"upper-case ids in receipt texts", []string{"--receipt-mode", "text", "--receipt-id", "hex-upper"}, ""},
		{"decimal resp ids, hex receipt texts", []string{"--receipt-mode", "text", "--id-format", "dec", "--receipt-id", "hex"}, "ids=dec-hex"},
		{"receipt before its resp", []string{"--receipt-before-resp"}, ""},
		{"undelivered", []string{"--fail-dest", "254714"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startNodeSMSC(t, tc.flags...)
			c, rs := nodeLink(t, s, tc.query)
			id, _ := submit(t, c, outgoing("+254714000001", "hi"))
			long, _ := submit(t, c, outgoing("+254714000002", strings.Repeat("x", 200)))
			for _, id := range []string{id, long} {
				st := waitReceipt(t, rs, id)
				if want := tc.name != "undelivered"; st.Delivered != want || !st.Final {
					t.Fatalf("%s: %+v", id, st)
				}
			}
		})
	}
}
