package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tuma-sms/tuma/persistence"
)

// reconcilerActor periodically asks the networks about messages sent longer than the receipt
// timeout ago that still have no receipt: carriers lose receipts, and a node may have died
// before writing one.
type reconcilerActor struct {
	e       *Engine
	running bool
}

type reconcileTick struct{}

type reconcileDone struct {
	stale []persistence.StaleMessage
	err   error
}

// reconcileBatch bounds one round; a backlog drains over successive rounds.
const reconcileBatch = 5000

func (r *reconcilerActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		r.arm(ctx)
	case *reconcileTick:
		if r.running {
			return
		}
		r.running = true
		self, root := ctx.Self(), r.e.root
		r.e.goIO(time.Minute, func(c context.Context) {
			stale, err := r.e.store.StaleSent(c, time.Now().Add(-r.e.opts.ReceiptTimeout), reconcileBatch)
			root.Send(self, &reconcileDone{stale: stale, err: err})
		})
	case *reconcileDone:
		r.running = false
		if msg.err != nil {
			r.e.log.Error("find messages without receipts", slog.Any("error", msg.err))
		}
		var byNet [4][]string
		for _, s := range msg.stale {
			byNet[s.Network] = append(byNet[s.Network], s.ProviderID)
		}
		for n, ids := range byNet {
			if len(ids) > 0 {
				ctx.Send(r.e.links[n], &queryMany{ids: ids}) // one pass; the next round asks again
			}
		}
		if len(msg.stale) > 0 {
			r.e.log.Info("asked networks about messages without receipts", slog.Int("messages", len(msg.stale)))
		}
		r.arm(ctx)
	}
}

func (r *reconcilerActor) arm(ctx actor.Context) {
	self, root := ctx.Self(), r.e.root
	time.AfterFunc(r.e.opts.ReconcileInterval, func() { root.Send(self, &reconcileTick{}) })
}
