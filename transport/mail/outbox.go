package mail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tuma-sms/tuma/persistence"
)

// Store is where the outbox keeps its emails.
type Store interface {
	ClaimEmails(ctx context.Context, lease time.Duration, limit int) ([]persistence.Email, error)
	RenewEmail(ctx context.Context, e persistence.Email, lease time.Duration) (persistence.Email, error)
	EmailSent(ctx context.Context, e persistence.Email) error
	EmailFailed(ctx context.Context, e persistence.Email, cause string, after, giveUp time.Duration) (gaveUp bool, err error)
	PendingEmails(ctx context.Context) (int64, error)
}

// OutboxOptions tunes delivery.
type OutboxOptions struct {
	Poll     time.Duration // how often to look for due mail when not woken (5s)
	RetryMin time.Duration // first retry delay; it doubles per attempt (5s)
	RetryMax time.Duration // longest retry delay (10m)
	GiveUp   time.Duration // an email queued this long ago is marked failed at its next failure (0: never)
}

// Outbox is the mail side of an outbox of emails (actors.Outbox runs its rounds): it claims
// queued emails, hands each to the mail server and records the outcome, retrying with
// back-off and giving up after GiveUp. Requests never wait for mail: they queue it in their
// own transaction and wake the outbox's worker.
type Outbox struct {
	store  Store
	sender Sender
	log    *slog.Logger
	opts   OutboxOptions

	sent, failed, retries prometheus.Counter
	pending               prometheus.Gauge
}

// NewOutbox returns an outbox whose metrics are registered on reg (nil: not exported).
func NewOutbox(store Store, sender Sender, opts OutboxOptions, log *slog.Logger, reg prometheus.Registerer) (*Outbox, error) {
	if opts.Poll <= 0 {
		opts.Poll = 5 * time.Second
	}
	if opts.RetryMin <= 0 {
		opts.RetryMin = 5 * time.Second
	}
	if opts.RetryMax < opts.RetryMin {
		opts.RetryMax = max(10*time.Minute, opts.RetryMin)
	}
	o := &Outbox{store: store, sender: sender, log: log, opts: opts,
		sent: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "mail", Name: "sent_total",
			Help: "Emails delivered to the mail server."}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "mail", Name: "failed_total",
			Help: "Emails given up on after TUMA_MAIL_GIVE_UP of failed attempts (marked failed, never retried)."}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "mail", Name: "retries_total",
			Help: "Failed delivery attempts that will be retried."}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tuma", Subsystem: "mail", Name: "outbox_pending",
			Help: "Emails queued and neither delivered nor given up, as of the outbox's last round."}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{o.sent, o.failed, o.retries, o.pending} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register mail metrics: %w", err)
			}
		}
	}
	return o, nil
}

// Poll is how often the outbox's worker looks for due mail when nobody wakes it.
func (o *Outbox) Poll() time.Duration { return o.opts.Poll }

// leaseFor bounds how long a claimed email is held before another worker may take it.
const leaseFor = time.Minute

// Claim leases up to limit emails that are due; each carries its lease, renewed as it goes.
func (o *Outbox) Claim(ctx context.Context, limit int) ([]*persistence.Email, error) {
	emails, err := o.store.ClaimEmails(ctx, leaseFor, limit)
	if err != nil {
		return nil, fmt.Errorf("claim emails: %w", err)
	}
	out := make([]*persistence.Email, len(emails))
	for i := range emails {
		out[i] = &emails[i]
	}
	return out, nil
}

// Deliver hands one email to the mail server, once its lease is renewed: a round of slow
// deliveries can outlast the claim's lease, and another node's worker then takes the rest.
func (o *Outbox) Deliver(ctx context.Context, e *persistence.Email) error {
	renewed, err := o.store.RenewEmail(ctx, *e, leaseFor)
	if err != nil {
		return err
	}
	*e = renewed
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return o.sender.Send(ctx, *e)
}

// Delivered records an email the mail server took.
func (o *Outbox) Delivered(ctx context.Context, e *persistence.Email) error {
	o.sent.Inc()
	if err := o.store.EmailSent(ctx, *e); err != nil {
		return fmt.Errorf("record email sent: %w", err)
	}
	return nil
}

// Failed schedules a retry, or records that the email is given up on.
func (o *Outbox) Failed(ctx context.Context, e *persistence.Email, cause error) error {
	if errors.Is(cause, persistence.ErrEmailLeaseLost) {
		return nil // another worker has it: not ours to record
	}
	after := o.backoff(e.Attempts)
	gaveUp, err := o.store.EmailFailed(ctx, *e, cause.Error(), after, o.opts.GiveUp)
	if err != nil {
		return fmt.Errorf("record email failure: %w", err)
	}
	attrs := []any{slog.String("to", e.To), slog.String("purpose", e.Purpose), slog.Int("attempt", e.Attempts+1), slog.Any("error", cause)}
	if gaveUp {
		o.failed.Inc()
		o.log.Error("email not delivered; giving up (TUMA_MAIL_GIVE_UP)", append(attrs, slog.Duration("after", o.opts.GiveUp))...)
		return nil
	}
	o.retries.Inc()
	o.log.Warn("email not delivered; will retry", append(attrs, slog.Duration("retry_in", after))...)
	return nil
}

// CountPending refreshes the pending gauge: one count over a small partial index per round.
func (o *Outbox) CountPending(ctx context.Context) {
	n, err := o.store.PendingEmails(ctx)
	if err != nil {
		if ctx.Err() == nil {
			o.log.Warn("count pending emails", slog.Any("error", err))
		}
		return
	}
	o.pending.Set(float64(n))
}

func (o *Outbox) backoff(attempts int) time.Duration {
	d := float64(o.opts.RetryMin) * math.Pow(2, float64(min(attempts, 30)))
	return time.Duration(min(d, float64(o.opts.RetryMax)))
}
