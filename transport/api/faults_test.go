//go:build faults

package api

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/admission"
)

// keyBook claims every key and counts the keys given back.
type keyBook struct{ released int }

func (b *keyBook) ClaimIdempotencyKey(_ context.Context, k persistence.IdempotencyKey, _ []byte, _ time.Duration) (persistence.IdempotencyKey, *persistence.StoredResponse, error) {
	return k, nil, nil
}

func (b *keyBook) ReleaseIdempotencyKey(context.Context, persistence.IdempotencyKey) error {
	b.released++
	return nil
}

// Each fault does what the drill that turns it on looks for, and nothing without it.
func TestFaultHooks(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, on := range []bool{false, true} {
		// ReleaseKeys: a key is given back after a failure of unknown outcome.
		book := &keyBook{}
		keys := NewKeys(book, Options{Faults: Faults{ReleaseKeys: on}}, log)
		var rc fasthttp.RequestCtx
		rc.Request.Header.Set("Idempotency-Key", "k1")
		_ = keys.Run(context.Background(), &rc, Op{}, func(*persistence.IdempotencyKey) error { return errors.New("timeout, maybe") })
		if got := book.released == 1; got != on {
			t.Errorf("ReleaseKeys %v: released %d keys after an unknown outcome", on, book.released)
		}

		// NoShed: admission has no bound.
		s, err := New(Options{MaxInFlight: 4, Faults: Faults{NoShed: on}}, Deps{Log: log, Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.admit.Bound(admission.Write) == 0; got != on {
			t.Errorf("NoShed %v: admission bound %d", on, s.admit.Bound(admission.Write))
		}

		// LogSecrets: the front logs each request's credentials.
		var out bytes.Buffer
		s.opts.Faults.LogSecrets = on
		f := NewFront(0, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(&out, nil)))
		f.Attach(s)
		var req fasthttp.RequestCtx
		req.Request.SetRequestURI("/healthz")
		req.Request.Header.Set("X-API-Key", "sk_live_secret")
		f.handle(&req)
		if got := strings.Contains(out.String(), "sk_live_secret"); got != on {
			t.Errorf("LogSecrets %v: the log %q", on, out.String())
		}
	}
}
