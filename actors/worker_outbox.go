// Outbox: work kept in the database until an outside system has taken it (mail to the SMTP
// server, the sandbox's webhooks to the payment endpoint), delivered by a Worker.

package actors

import (
	"context"
	"errors"
	"time"
)

// Outbox delivers items a batch at a time: Claim leases a batch (so no other node takes the
// same items while it lasts), Deliver hands each to the outside system, and Delivered or
// Failed records the outcome (Failed schedules the retry, or gives up, as its store decides).
// Its Round is a Worker's round.
type Outbox[T any] struct {
	Batch     int // items claimed per round (default 20)
	Claim     func(ctx context.Context, limit int) ([]T, error)
	Deliver   func(ctx context.Context, item T) error
	Delivered func(ctx context.Context, item T) error
	Failed    func(ctx context.Context, item T, cause error) error
	// AfterRound, optional, runs after each round (a gauge of what is pending, say).
	AfterRound func(ctx context.Context)
}

// bookkeeping bounds recording an outcome: it must happen even when the round's context ends
// in the middle of a delivery (a shutdown), or a delivered item would be delivered again.
const bookkeeping = 5 * time.Second

// Round delivers one batch; more reports a full batch (there may be more due).
func (o Outbox[T]) Round(ctx context.Context) (more bool, err error) {
	batch := o.Batch
	if batch <= 0 {
		batch = 20
	}
	items, err := o.Claim(ctx, batch)
	if err != nil {
		return false, err
	}
	var errs []error
	for _, it := range items {
		derr := o.Deliver(ctx, it)
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeeping)
		if derr == nil {
			err = o.Delivered(bctx, it)
		} else {
			err = o.Failed(bctx, it, derr)
		}
		cancel()
		if err != nil {
			errs = append(errs, err) // the lease returns the item in time
		}
	}
	if o.AfterRound != nil {
		o.AfterRound(ctx)
	}
	return len(items) == batch && ctx.Err() == nil, errors.Join(errs...)
}
