package sandbox

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/payments"
)

// hookBook records what the sender tells the store.
type hookBook struct {
	done   []string
	after  []time.Duration
	giveUp []bool
}

func (b *hookBook) ClaimSandboxHooks(context.Context, time.Duration, int) ([]persistence.SandboxTx, error) {
	return nil, nil
}

func (b *hookBook) SandboxHookDone(_ context.Context, code string) error {
	b.done = append(b.done, code)
	return nil
}

func (b *hookBook) SandboxHookFailed(_ context.Context, _, _ string, after time.Duration, giveUp bool) error {
	b.after, b.giveUp = append(b.after, after), append(b.giveUp, giveUp)
	return nil
}

// A webhook is a charge.success event signed as Paystack signs them, which Tuma's own check
// accepts; anything but 200 is a failure.
func TestHooksPostSignedEvents(t *testing.T) {
	const secret = "sk_test_secret"
	status := http.StatusOK
	var got payments.Event
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		schemes := payments.Schemes{payments.PaystackHMAC{Secret: []byte(secret)}}
		if _, err := schemes.Verify(r.Header.Get, body); err != nil {
			t.Errorf("signature: %v", err)
		}
		ev, err := payments.ParseEvent(body)
		if err != nil {
			t.Errorf("event %s: %v", body, err)
		}
		got = ev
		w.WriteHeader(status)
	}))
	defer srv.Close()
	h := NewHooks(&hookBook{}, srv.URL, []byte(secret), time.Second, slog.New(slog.DiscardHandler))
	paid := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	tx := persistence.SandboxTx{AccessCode: "code", Reference: "SBX-1", Amount: 150000, Currency: "KES", Email: "a@b.co",
		Status: "success", PaidAt: &paid, CreatedAt: paid, Metadata: []byte(`{}`)}
	if err := h.Deliver(context.Background(), tx); err != nil {
		t.Fatalf("Deliver = %v; want nil", err)
	}
	if got.Event != payments.EventChargeSuccess || got.Data.Reference != "SBX-1" || got.Data.Amount != 150000 || got.Data.Status != "success" {
		t.Errorf("event = %+v; want charge.success of SBX-1, 150000, success", got)
	}
	status = http.StatusInternalServerError
	if err := h.Deliver(context.Background(), tx); err == nil {
		t.Error("Deliver answered 500 = nil; want an error")
	}
}

// Failures back off by doubling, at most an hour, and the sender gives up after its last
// attempt.
func TestHooksBackOff(t *testing.T) {
	book := &hookBook{}
	h := NewHooks(book, "http://unused", nil, time.Second, slog.New(slog.DiscardHandler))
	for _, prior := range []int{0, 1, 2, maxHookAttempts - 1} {
		if err := h.Failed(context.Background(), persistence.SandboxTx{AccessCode: "c", HookAttempt: prior}, io.EOF); err != nil {
			t.Fatal(err)
		}
	}
	slow := NewHooks(book, "http://unused", nil, 10*time.Minute, slog.New(slog.DiscardHandler))
	if err := slow.Failed(context.Background(), persistence.SandboxTx{AccessCode: "c", HookAttempt: 3}, io.EOF); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 2048 * time.Second, time.Hour}
	for i, w := range want {
		if book.after[i] != w {
			t.Errorf("retry %d after %v; want %v", i, book.after[i], w)
		}
	}
	if book.giveUp[2] || !book.giveUp[3] {
		t.Errorf("gave up %v; want only after attempt %d", book.giveUp, maxHookAttempts)
	}
}
