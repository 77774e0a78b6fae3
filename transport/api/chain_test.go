package api

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/admission"
)

// Slow reads shrink the reads' bound only: the sends that come after them are admitted at
// the writes' full bound (one bound for both once shed a burst of sends after a bulk run's
// read-back of deep pages).
func TestSlowReadsShrinkOnlyTheReadsBound(t *testing.T) {
	s, err := New(Options{MaxInFlight: 64, ShedLatency: time.Millisecond}, Deps{Log: slog.New(slog.DiscardHandler), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	slow := s.chain("GET", "/sms/messages", Public, nil, func(context.Context, *fasthttp.RequestCtx) error {
		time.Sleep(5 * time.Millisecond)
		return nil
	})
	quick := s.chain("POST", "/sms/send", Public, nil, func(_ context.Context, rc *fasthttp.RequestCtx) error {
		rc.SetStatusCode(fasthttp.StatusAccepted)
		return nil
	})
	// 5 ms reads against a 1 ms target: each 100 ms window that closes shrinks the reads' bound.
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
		var rc fasthttp.RequestCtx
		slow(&rc)
	}
	if b := s.admit.Bound(admission.Read); b >= 64 {
		t.Fatalf("reads' bound %d after 1.5 s of reads 5× the target; want it shrunk", b)
	}
	if b := s.admit.Bound(admission.Write); b != 64 {
		t.Fatalf("writes' bound %d after reads only; want the ceiling 64", b)
	}
	var rc fasthttp.RequestCtx
	quick(&rc)
	if rc.Response.StatusCode() != fasthttp.StatusAccepted {
		t.Fatalf("a send after the slow reads = %d; want 202", rc.Response.StatusCode())
	}
}
