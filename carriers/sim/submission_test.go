package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

func TestSubmitAccepts(t *testing.T) {
	c := &collector{}
	n := newNetwork(t, Options{Network: carriers.Airtel, OnReceipt: c.onReceipt})
	before := time.Now().Truncate(time.Millisecond)
	id, err := n.Submit(context.Background(), submission())
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}
	waitFor(t, 5*time.Second, "the receipt", func() bool { return c.len() == 1 })
	rs, _ := c.snapshot()
	r := rs[0]
	if r.ProviderID != id || r.State != Delivered || r.ProviderStatus != "DELIVRD" || r.ErrorCode != "000" {
		t.Errorf("receipt = %+v; want id %q delivered DELIVRD 000", r, id)
	}
	if r.SubmittedAt.Before(before) || r.SubmittedAt.After(time.Now()) || !r.DoneAt.Equal(r.SubmittedAt) {
		t.Errorf("receipt times %v → %v; want submitted after %v, done at once", r.SubmittedAt, r.DoneAt, before)
	}
	want := Stats{Submits: 1, Accepted: 1, Receipts: 1, MaxRate: 1}
	if got := n.Stats(); got != want {
		t.Errorf("Stats() = %+v; want %+v", got, want)
	}
}

func TestSubmitRejectsMalformed(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Submission)
	}{
		{"no plus", func(s *Submission) { s.Destination = "254712345678" }},
		{"local number", func(s *Submission) { s.Destination = "0712345678" }},
		{"letters", func(s *Submission) { s.Destination = "+2547123abc78" }},
		{"too long", func(s *Submission) { s.Destination = "+2547123456789012" }},
		{"too short", func(s *Submission) { s.Destination = "+254712" }},
		{"leading zero", func(s *Submission) { s.Destination = "+0254712345678" }},
		{"empty destination", func(s *Submission) { s.Destination = "" }},
		{"no parts", func(s *Submission) { s.Parts = 0 }},
		{"too many parts", func(s *Submission) { s.Parts = carriers.MaxParts + 1 }},
		{"no encoding", func(s *Submission) { s.Encoding = 0 }},
	}
	n := newNetwork(t, Options{Network: carriers.Safaricom})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := submission()
			tt.edit(&s)
			if id, err := n.Submit(context.Background(), s); !errors.Is(err, ErrRejected) {
				t.Errorf("Submit(%+v) = %q, %v; want ErrRejected", s, id, err)
			}
			if got := n.Stats().Rejected; got != uint64(i+1) {
				t.Errorf("Stats().Rejected = %d; want %d", got, i+1)
			}
		})
	}
}

func TestSubmitCancelled(t *testing.T) {
	tests := []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		wantErr error
	}{
		{"already cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
		{"cancelled while waiting", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"deadline while waiting", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		}, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &collector{}
			n := newNetwork(t, Options{Network: carriers.Safaricom, Latency: time.Hour, OnReceipt: c.onReceipt})
			ctx, cancel := tt.ctx()
			defer cancel()
			if id, err := n.Submit(ctx, submission()); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Submit = %q, %v; want %v", id, err, tt.wantErr)
			}
			if st := n.Stats(); st.Canceled != 1 || st.Accepted != 0 {
				t.Errorf("Stats() = %+v; want 1 cancelled, 0 accepted", st)
			}
		})
	}
}

func TestSubmitAllocations(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("instrumented build (race or cover): make test, and so CI, runs it again without the race detector")
	}
	n := newNetwork(t, Options{Network: carriers.Safaricom, OnReceipt: func(Receipt) {}})
	s := submission()
	ctx := context.Background()
	// One allocation: the id. In particular no timer at zero latency.
	if a := testing.AllocsPerRun(10000, func() {
		if _, err := n.Submit(ctx, s); err != nil {
			t.Fatal(err)
		}
	}); a > 1 {
		t.Errorf("Submit allocates %v times; want 1", a)
	}
}
