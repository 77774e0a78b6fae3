package mail

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

// Store is where the outbox keeps its emails.
type Store interface {
	ClaimEmails(ctx context.Context, lease time.Duration, limit int) ([]persistence.Email, error)
	EmailSent(ctx context.Context, id uuid.UUID) error
	EmailFailed(ctx context.Context, id uuid.UUID, cause string, after time.Duration) error
}

// OutboxOptions tunes delivery.
type OutboxOptions struct {
	Poll     time.Duration // how often to look for due mail when not woken (5s)
	RetryMin time.Duration // first retry delay; it doubles per attempt (5s)
	RetryMax time.Duration // longest retry delay (10m)
}

// Outbox delivers queued emails with retries and back-off. Requests never wait for mail:
// they queue it in their own transaction and Wake the outbox.
type Outbox struct {
	store  Store
	sender Sender
	log    *slog.Logger
	opts   OutboxOptions
	wake   chan struct{}
}

// NewOutbox returns an outbox; call Run to start delivering.
func NewOutbox(store Store, sender Sender, opts OutboxOptions, log *slog.Logger) *Outbox {
	if opts.Poll <= 0 {
		opts.Poll = 5 * time.Second
	}
	if opts.RetryMin <= 0 {
		opts.RetryMin = 5 * time.Second
	}
	if opts.RetryMax < opts.RetryMin {
		opts.RetryMax = max(10*time.Minute, opts.RetryMin)
	}
	return &Outbox{store: store, sender: sender, log: log, opts: opts, wake: make(chan struct{}, 1)}
}

// Wake makes the outbox look for mail now.
func (o *Outbox) Wake() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// leaseFor bounds how long a claimed email is held before another worker may take it.
const leaseFor = time.Minute

// Run delivers until ctx ends.
func (o *Outbox) Run(ctx context.Context) {
	t := time.NewTicker(o.opts.Poll)
	defer t.Stop()
	for {
		for o.deliverDue(ctx) {
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-o.wake:
		}
	}
}

// deliverDue sends one batch of due emails; it reports whether there may be more.
func (o *Outbox) deliverDue(ctx context.Context) bool {
	const batch = 20
	emails, err := o.store.ClaimEmails(ctx, leaseFor, batch)
	if err != nil {
		if ctx.Err() == nil {
			o.log.Error("claim emails", slog.Any("error", err))
		}
		return false
	}
	for _, e := range emails {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := o.sender.Send(sctx, e)
		cancel()
		// Bookkeeping must not be lost to a shutdown that starts mid-send.
		bctx, bcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if err != nil {
			after := o.backoff(e.Attempts)
			o.log.Warn("email not delivered; will retry", slog.String("to", e.To), slog.String("purpose", e.Purpose),
				slog.Int("attempt", e.Attempts+1), slog.Duration("retry_in", after), slog.Any("error", err))
			if ferr := o.store.EmailFailed(bctx, e.ID, err.Error(), after); ferr != nil {
				o.log.Error("record email failure", slog.Any("error", ferr))
			}
		} else if serr := o.store.EmailSent(bctx, e.ID); serr != nil {
			o.log.Error("record email sent", slog.Any("error", serr))
		}
		bcancel()
	}
	return len(emails) == batch && ctx.Err() == nil
}

func (o *Outbox) backoff(attempts int) time.Duration {
	d := float64(o.opts.RetryMin) * math.Pow(2, float64(min(attempts, 30)))
	return time.Duration(min(d, float64(o.opts.RetryMax)))
}
