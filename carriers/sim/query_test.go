package sim

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

func TestQueryLifecycle(t *testing.T) {
	const delay = 100 * time.Millisecond
	ctx := context.Background()
	c := &collector{}
	n := newNetwork(t, Options{Network: carriers.Safaricom, ReceiptDelay: delay, Rejected: 1, OnReceipt: c.onReceipt})
	start := time.Now()
	id, err := n.Submit(ctx, submission())
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}
	r, err := n.Query(ctx, id)
	if err != nil {
		t.Fatalf("Query(%q) = %v", id, err)
	}
	if time.Since(start) < delay-time.Millisecond {
		want := Receipt{ProviderID: id, State: Enroute, ProviderStatus: "ENROUTE", ErrorCode: "000", SubmittedAt: r.SubmittedAt}
		if r != want || r.SubmittedAt.IsZero() {
			t.Errorf("Query(%q) right after submit = %+v; want %+v", id, r, want)
		}
	}
	waitFor(t, 5*time.Second, "a final state", func() bool {
		r, err = n.Query(ctx, id)
		return err != nil || r.State != Enroute
	})
	if err != nil || r.State != Failed || r.ProviderStatus != "REJECTD" || r.ErrorCode != "013" {
		t.Errorf("Query(%q) after the delay = %+v, %v; want failed REJECTD 013", id, r, err)
	}
	if d := r.DoneAt.Sub(r.SubmittedAt); d != delay {
		t.Errorf("DoneAt - SubmittedAt = %v; want %v", d, delay)
	}
	waitFor(t, 5*time.Second, "the receipt", func() bool { return c.len() == 1 })
	if rs, _ := c.snapshot(); rs[0] != r {
		t.Errorf("pushed receipt %+v; Query gave %+v", rs[0], r)
	}
}

func TestQueryAgreesWithReceiptsAcrossRestart(t *testing.T) {
	ctx := context.Background()
	c := &collector{}
	opts := Options{
		Network: carriers.Telkom, ReceiptDelay: time.Millisecond, ReceiptJitter: 20 * time.Millisecond,
		Delivered: 1, Undeliverable: 1, Expired: 1, Rejected: 1,
	}
	withReceipts := opts
	withReceipts.OnReceipt = c.onReceipt
	old := newNetwork(t, withReceipts)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 125 {
				if _, err := old.Submit(ctx, submission()); err != nil {
					t.Errorf("Submit = %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	waitFor(t, 10*time.Second, "all receipts", func() bool { return c.len() == 500 })
	old.Close()

	restarted := newNetwork(t, opts)
	foreign := newNetwork(t, Options{Network: carriers.Airtel})
	rs, _ := c.snapshot()
	statuses := map[string]int{}
	for _, want := range rs {
		statuses[want.ProviderStatus]++
		if got, err := restarted.Query(ctx, want.ProviderID); err != nil || got != want {
			t.Errorf("Query(%q) after restart = %+v, %v; want %+v", want.ProviderID, got, err, want)
		}
		if got, err := foreign.Query(ctx, want.ProviderID); !errors.Is(err, ErrUnknownMessage) {
			t.Errorf("Query(%q) on another network = %+v, %v; want ErrUnknownMessage", want.ProviderID, got, err)
		}
	}
	if len(statuses) != 4 {
		t.Errorf("statuses %v; want all four outcomes among 500 receipts", statuses)
	}
	if _, err := old.Query(ctx, rs[0].ProviderID); !errors.Is(err, ErrClosed) {
		t.Errorf("Query on a closed network = %v; want ErrClosed", err)
	}
}

func TestQueryUnknown(t *testing.T) {
	ctx := context.Background()
	n := newNetwork(t, Options{Network: carriers.Safaricom})
	id, err := n.Submit(ctx, submission())
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}
	body := id[:len(id)-checkDigits]
	foreign := (idFields{network: carriers.Airtel, submitMs: 1, seq: 1}).format()
	tests := []struct {
		name string
		id   string
	}{
		{"other network", foreign},
		{"empty", ""},
		{"garbage", "hello"},
		{"uuid", "0f8fad5b-d9cb-469f-a165-70867728950e"},
		{"upper case", upper(id)},
		{"last char changed", id[:len(id)-1] + flip(id[len(id)-1])},
		{"outcome changed", id[:1] + "r" + id[2:]},
		{"truncated", id[:len(id)-1]},
		{"extended", id + "0"},
		{"space", " " + id},
		// Well-formed check digits over a body that is not an id.
		{"leading zero in delay", withCheck(body[:fixedLen] + "0" + body[fixedLen:])},
		{"sequence overflow", withCheck(body[:fixedLen] + "1-vvvvvvvvvvvvv")},
		{"delay above max", withCheck(body[:fixedLen] + "vvvvvv-1")},
		{"zero sequence", withCheck(body[:fixedLen] + "1-0")},
		{"no dash", withCheck(body[:fixedLen] + "1")},
		{"two dashes", withCheck(body[:fixedLen] + "1-1-1")},
		{"unknown network letter", withCheck("x" + body[1:])},
		{"unknown outcome letter", withCheck(body[:1] + "z" + body[2:])},
		{"digit beyond base 32", withCheck(body[:fixedLen] + "w-1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r, err := n.Query(ctx, tt.id); !errors.Is(err, ErrUnknownMessage) {
				t.Errorf("Query(%q) = %+v, %v; want ErrUnknownMessage", tt.id, r, err)
			}
		})
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := n.Query(cancelled, id); !errors.Is(err, context.Canceled) {
		t.Errorf("Query with a cancelled ctx = %v; want context.Canceled", err)
	}
}

// withCheck appends the check digits to body.
func withCheck(body string) string {
	return string(appendFixed([]byte(body), checksum(body), checkDigits))
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func flip(c byte) string {
	if c == '0' {
		return "1"
	}
	return "0"
}

func FuzzQuery(f *testing.F) {
	n, err := New(Options{Network: carriers.Airtel, ReceiptDelay: time.Second})
	if err != nil {
		f.Fatal(err)
	}
	defer n.Close()
	for range 3 {
		id, err := n.Submit(context.Background(), submission())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(id)
	}
	f.Add((idFields{network: carriers.Airtel, outcome: outRejected, submitMs: 1, tag: 2, delayMs: maxDelayMs, seq: math.MaxUint64}).format())
	f.Add((idFields{network: carriers.Safaricom, outcome: outDelivered, submitMs: 1, tag: 2, delayMs: 0, seq: 1}).format())
	f.Add("")
	f.Add("ad000000000000000-1zzz")
	f.Fuzz(func(t *testing.T, id string) {
		r, err := n.Query(context.Background(), id)
		if err != nil {
			if !errors.Is(err, ErrUnknownMessage) {
				t.Fatalf("Query(%q) = %v; want nil or ErrUnknownMessage", id, err)
			}
			return
		}
		f, ok := parseID(id)
		if !ok || f.network != carriers.Airtel || f.format() != id || r.ProviderID != id {
			t.Fatalf("Query(%q) = %+v accepted an id that does not round-trip (%+v, %t)", id, r, f, ok)
		}
		if len(id) >= 40 || r.SubmittedAt.UnixMilli() != f.submitMs || r.State == 0 {
			t.Fatalf("Query(%q) = %+v; inconsistent with %+v", id, r, f)
		}
	})
}
