// The recorder: successes written together, each write forming the next deliveries of the
// endpoints whose lanes they freed.

package webhooks

import (
	"context"
	"errors"
	"log/slog"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

// success is an attempt that succeeded, handed to the recorder.
type success struct {
	w persistence.WebhookDelivery
	a persistence.WebhookAttempt
}

// maxRecorded bounds the successes of one write.
const maxRecorded = 256

// record writes the successes attempts hand over until they stop (Run closes the channel once
// its attempts have ended): those that ended while a write ran go together in the next one. A
// transaction and its round trips cost more than the rows of a delivery, so a busy node
// records many deliveries for the price of one; an idle one writes each at once.
func (d *Deliverer) record(ctx context.Context, successes <-chan success) {
	for s := range successes {
		batch := []success{s}
	gather:
		for len(batch) < maxRecorded {
			select {
			case s, ok := <-successes:
				if !ok {
					break gather
				}
				batch = append(batch, s)
			default:
				break gather
			}
		}
		d.recordSuccesses(ctx, batch)
	}
}

// recordSuccesses writes a batch of successes and, in the same transaction, forms the next
// deliveries of their endpoints at once: their lanes are free and the later events their
// deliveries held may go now. Waiting for a round instead would leave each endpoint's
// deliveries a round apart (the order of a message's events makes its later events wait for
// the delivery of its message.sent). Rounds still form the rest.
func (d *Deliverer) recordSuccesses(ctx context.Context, batch []success) {
	as := make([]persistence.WebhookAttempt, len(batch))
	var forms []persistence.WebhookForm
	reserved := 0
	seen := make(map[uuid.UUID]bool, len(batch))
	for i, s := range batch {
		as[i] = s.a
		if ctx.Err() != nil || seen[s.w.EndpointID] {
			continue // stopping: nothing new is formed
		}
		seen[s.w.EndpointID] = true
		if free := d.reserve(d.opts.Lanes); free > 0 {
			reserved += free
			forms = append(forms, persistence.WebhookForm{Endpoint: s.w.EndpointID, Batch: s.w.BatchSize, Limit: free})
		}
	}
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeeping)
	defer cancel()
	res, err := d.store.WebhookSucceeded(bctx, as, forms, persistence.WebhookClaim{Lanes: d.opts.Lanes, Lease: d.opts.Lease})
	if err != nil {
		d.inflight.Add(-int64(reserved))
		d.opts.Wake()
		d.log.Error("record webhook successes; their leases will lapse and they go again", slog.Any("error", err),
			slog.Int("deliveries", len(batch)))
		return
	}
	lost := make(map[uuid.UUID]bool, len(res.Lost))
	for _, id := range res.Lost {
		lost[id] = true
	}
	for _, s := range batch {
		if lost[s.w.ID] {
			d.recordFailed(persistence.ErrLeaseLost, s.w, s.a)
		}
	}
	if res.Unformed != nil {
		d.log.Error("form webhook deliveries; a round forms them once the secret opens", slog.Any("error", res.Unformed))
	}
	_ = d.dispatch(ctx, res.Formed, reserved)
	d.opts.Wake() // places reserved and not filled are free again
}

// recordFailed logs an attempt whose outcome was not recorded.
func (d *Deliverer) recordFailed(err error, w persistence.WebhookDelivery, a persistence.WebhookAttempt) {
	if errors.Is(err, persistence.ErrLeaseLost) {
		// Its lease lapsed (an attempt longer than the lease, a pause) and another node may
		// have taken it: that node's outcome is the delivery's, this one is dropped.
		d.log.Warn("webhook attempt outlived its lease; its outcome is dropped", slog.String("delivery", w.ID.String()),
			slog.Duration("took", a.Duration))
		return
	}
	d.log.Error("record webhook attempt; its lease will lapse and it goes again", slog.Any("error", err),
		slog.String("delivery", w.ID.String()))
}
