package payments

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

// books is an in-memory Store and Applier with the database's guard: a payment is applied
// only by the confirmation that moves it to paid.
type books struct {
	mu       sync.Mutex
	payments map[string]*persistence.Payment
	credits  int
	syncs    int // SyncWallet calls
}

func (b *books) PaymentByReference(_ context.Context, ref string) (persistence.Payment, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.payments[ref]
	if !ok {
		return persistence.Payment{}, persistence.ErrNotFound
	}
	return *p, nil
}

func (b *books) MarkPayment(_ context.Context, ref string, status persistence.PaymentStatus, reason string) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.payments[ref]
	if p.Status != persistence.PaymentPending && p.Status != persistence.PaymentAbandoned {
		return false, nil
	}
	p.Status, p.FailureReason = status, &reason
	return true, nil
}

func (b *books) OpenPayments(_ context.Context, from, to time.Time, _ int) ([]persistence.Payment, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []persistence.Payment
	for _, p := range b.payments {
		if (p.Status == persistence.PaymentPending || p.Status == persistence.PaymentAbandoned) &&
			!p.CreatedAt.Before(from) && p.CreatedAt.Before(to) {
			out = append(out, *p)
		}
	}
	return out, nil
}

func (b *books) ExpirePayments(context.Context, time.Time) (int64, error) { return 0, nil }

func (b *books) SyncWallet(context.Context, uuid.UUID) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.syncs++
	return nil
}

func (b *books) ConfirmPayment(_ context.Context, _ uuid.UUID, c persistence.PaymentConfirmation) (persistence.ConfirmedPayment, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.payments[c.Reference]
	switch p.Status {
	case persistence.PaymentPaid:
		return persistence.ConfirmedPayment{Payment: *p}, nil
	case persistence.PaymentFailed:
		return persistence.ConfirmedPayment{}, persistence.ErrPaymentClosed
	}
	p.Status = persistence.PaymentPaid
	b.credits++
	return persistence.ConfirmedPayment{Payment: *p, Applied: true}, nil
}

// provider answers Verify from a table.
type provider map[string]Transaction

func (p provider) Verify(_ context.Context, ref string) (Transaction, error) {
	if ref == "TUMA-DOWN" {
		return Transaction{}, ErrUnavailable
	}
	tx, ok := p[ref]
	if !ok {
		return Transaction{}, ErrUnknownReference
	}
	return tx, nil
}

func newBooks(now time.Time, refs ...string) *books {
	b := &books{payments: map[string]*persistence.Payment{}}
	for _, r := range refs {
		b.payments[r] = &persistence.Payment{Reference: r, AmountCents: 50000, Currency: "KES", Status: persistence.PaymentPending,
			Purpose: persistence.PurposeTopup, CreatedAt: now.Add(-time.Hour)}
	}
	return b
}

func TestConfirmOutcomes(t *testing.T) {
	now := time.Now()
	ok := func(ref string) Transaction {
		return Transaction{Status: "success", Reference: ref, Amount: 50000, Currency: "KES"}
	}
	prov := provider{
		"TUMA-PAID":       ok("TUMA-PAID"),
		"TUMA-FEES":       {Status: "success", Reference: "TUMA-FEES", Amount: 50750, RequestedAmount: 50000, Currency: "KES"},
		"TUMA-LOW":        {Status: "success", Reference: "TUMA-LOW", Amount: 49999, Currency: "KES"},
		"TUMA-REQLOW":     {Status: "success", Reference: "TUMA-REQLOW", Amount: 50000, RequestedAmount: 100, Currency: "KES"},
		"TUMA-USD":        {Status: "success", Reference: "TUMA-USD", Amount: 50000, Currency: "USD"},
		"TUMA-OTHERREF":   ok("TUMA-SOMETHINGELSE"),
		"TUMA-ABANDONED":  {Status: "abandoned", Reference: "TUMA-ABANDONED"},
		"TUMA-DECLINED":   {Status: "failed", Reference: "TUMA-DECLINED"},
		"TUMA-ONGOING":    {Status: "ongoing", Reference: "TUMA-ONGOING"},
		"TUMA-LATE":       ok("TUMA-LATE"),
		"TUMA-WASFAILED":  ok("TUMA-WASFAILED"),
		"TUMA-NEVERHEARD": {},
	}
	delete(prov, "TUMA-NEVERHEARD")
	b := newBooks(now, "TUMA-PAID", "TUMA-FEES", "TUMA-LOW", "TUMA-REQLOW", "TUMA-USD", "TUMA-OTHERREF", "TUMA-ABANDONED",
		"TUMA-DECLINED", "TUMA-ONGOING", "TUMA-LATE", "TUMA-WASFAILED", "TUMA-NEVERHEARD", "TUMA-DOWN")
	b.payments["TUMA-LATE"].Status = persistence.PaymentAbandoned // the payer came back and paid after all
	b.payments["TUMA-WASFAILED"].Status = persistence.PaymentFailed
	var logs bytes.Buffer
	c := NewConfirmer(prov, b, b, slog.New(slog.NewTextHandler(&logs, nil)), func() time.Time { return now })
	cases := []struct {
		ref     string
		status  persistence.PaymentStatus
		reason  string
		applied bool
	}{
		{"TUMA-PAID", "paid", "", true},
		{"TUMA-FEES", "paid", "", true},
		{"TUMA-LOW", "failed", "amount_mismatch", false},
		{"TUMA-REQLOW", "failed", "amount_mismatch", false},
		{"TUMA-USD", "failed", "currency_mismatch", false},
		{"TUMA-OTHERREF", "failed", "reference_mismatch", false},
		{"TUMA-ABANDONED", "abandoned", "cancelled", false},
		{"TUMA-DECLINED", "abandoned", "declined", false},
		{"TUMA-ONGOING", "pending", "pending", false},
		{"TUMA-LATE", "paid", "", true},
		{"TUMA-WASFAILED", "failed", "", false},
		{"TUMA-NEVERHEARD", "pending", "unknown_to_provider", false},
	}
	for _, tc := range cases {
		out, err := c.Confirm(context.Background(), tc.ref, "test")
		if err != nil {
			t.Errorf("%s: %v", tc.ref, err)
			continue
		}
		if out.Status != tc.status || out.Reason != tc.reason || out.Applied != tc.applied {
			t.Errorf("%s: %+v; want status %s reason %q applied %v", tc.ref, out, tc.status, tc.reason, tc.applied)
		}
	}
	if b.credits != 3 {
		t.Errorf("%d credits; want 3", b.credits)
	}
	for _, want := range []string{"amount_mismatch", "currency_mismatch", "reference=TUMA-LOW", "priced_cents=50000 paid_cents=49999"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, logs.String())
		}
	}
	// A second confirmation of a paid payment applies nothing, and hands the wallet to the
	// account's tenant again (the first may have failed at its commit, unseen by it).
	if b.syncs != 0 {
		t.Errorf("%d wallet syncs before any repeat; want 0", b.syncs)
	}
	if out, err := c.Confirm(context.Background(), "TUMA-PAID", "test"); err != nil || out.Applied || out.Status != "paid" {
		t.Errorf("repeat: %+v %v", out, err)
	}
	if b.syncs != 1 {
		t.Errorf("%d wallet syncs after a repeat of a paid payment; want 1", b.syncs)
	}
	if _, err := c.Confirm(context.Background(), "TUMA-NOPE", "test"); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("unknown reference: %v", err)
	}
	if _, err := c.Confirm(context.Background(), "TUMA-DOWN", "test"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("provider down: %v", err)
	}
	if b.credits != 3 {
		t.Errorf("%d credits after the repeats; want 3", b.credits)
	}
	// A declined attempt closes nothing: the payer tries again on the same checkout and pays.
	prov["TUMA-DECLINED"] = ok("TUMA-DECLINED")
	if out, err := c.Confirm(context.Background(), "TUMA-DECLINED", "test"); err != nil || !out.Applied || out.Status != "paid" {
		t.Errorf("paid after a declined attempt: %+v %v; want it credited", out, err)
	}
	if b.credits != 4 {
		t.Errorf("%d credits after the declined one was paid; want 4", b.credits)
	}
}

func TestReconcileCreditsWhatNobodyConfirmed(t *testing.T) {
	now := time.Now()
	b := newBooks(now, "TUMA-A", "TUMA-B")
	b.payments["TUMA-B"].CreatedAt = now.Add(-30 * time.Second) // too young: its webhook may still come
	prov := provider{
		"TUMA-A": {Status: "success", Reference: "TUMA-A", Amount: 50000, Currency: "KES"},
		"TUMA-B": {Status: "success", Reference: "TUMA-B", Amount: 50000, Currency: "KES"},
	}
	c := NewConfirmer(prov, b, b, slog.New(slog.DiscardHandler), func() time.Time { return now })
	if _, err := c.Reconcile(context.Background(), ReconcileOptions{Every: time.Minute, After: 2 * time.Minute, Expire: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if b.payments["TUMA-A"].Status != persistence.PaymentPaid || b.payments["TUMA-B"].Status != persistence.PaymentPending || b.credits != 1 {
		t.Errorf("after reconciling: A %s, B %s, %d credits; want A paid, B pending, 1 credit",
			b.payments["TUMA-A"].Status, b.payments["TUMA-B"].Status, b.credits)
	}
}
