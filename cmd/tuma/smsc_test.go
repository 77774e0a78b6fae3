package main

import (
	"bytes"
	"context"
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

// `tuma smsc -control` delivers a subscriber's message to the bound ESME on POST /mo: a long
// UCS-2 text in parts with a 16-bit reference reaches the bind's handler whole.
func TestSMSCControlSendsMO(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runSMSC(ctx, []string{"-addr", "127.0.0.1:0", "-control", "127.0.0.1:0"}, &out, io.Discard)
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
	got := make(chan smpp.MO, 4)
	b, err := smpp.NewBind(smpp.BindConfig{Name: "t", Addr: m[1], SystemID: "tuma", Password: "secret", Window: 10,
		EnquireLink: time.Second, ResponseTimeout: 2 * time.Second, ReconnectMin: 10 * time.Millisecond,
		ReconnectMax: 100 * time.Millisecond, ThrottlePause: 10 * time.Millisecond},
		smpp.BindHooks{MO: func(_ context.Context, mo smpp.MO) error { got <- mo; return nil }},
		slog.New(slog.NewTextHandler(io.Discard, nil)), smpp.NewMetrics(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	long := strings.Repeat("Karibu 😀 ", 20) // UCS-2, 3 parts
	r, err := http.Post(m[2]+"/mo", "application/json",
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
	r, err = http.Post(m[2]+"/mo", "application/json", strings.NewReader(`{"from":"254712345678","to":"22384","text":""}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 400 {
		t.Errorf("POST /mo of an empty text = %d; want 400", r.StatusCode)
	}
}
