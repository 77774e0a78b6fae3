// Low balance: a tenant tells its account once per crossing of the threshold.

package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// alertLowBalance raises low_balance when a send has left the balance under the threshold,
// once until the balance recovers; the store's flag keeps it once across restarts and nodes.
func (t *tenantActor) alertLowBalance(ctx actor.Context) {
	limit := t.e.opts.LowBalanceCents
	if limit <= 0 || t.lowAlerted || t.wallet.BalanceCents >= limit {
		return
	}
	t.lowAlerted = true
	notice := lowBalanceNotice(t.wallet.BalanceCents, limit)
	t.lowBalanceWrite(ctx, func(c context.Context) error {
		_, err := t.e.store.LowBalanceAlert(c, t.id, notice)
		return err
	})
}

// rearmLowBalance lets the next crossing notify again once a credit has lifted the balance to
// the threshold.
func (t *tenantActor) rearmLowBalance(ctx actor.Context) {
	limit := t.e.opts.LowBalanceCents
	if !t.lowAlerted || t.wallet.BalanceCents < limit {
		return
	}
	t.lowAlerted = false
	t.lowBalanceWrite(ctx, func(c context.Context) error { return t.e.store.LowBalanceRecovered(c, t.id) })
}

// lowBalanceWrite runs the account's low-balance flag writes one at a time, in order: a
// re-arm racing the next alert would otherwise leave the flag set and swallow a notification.
func (t *tenantActor) lowBalanceWrite(ctx actor.Context, w func(context.Context) error) {
	t.lowWrites = append(t.lowWrites, w)
	if len(t.lowWrites) == 1 {
		t.nextLowBalanceWrite(ctx)
	}
}

func (t *tenantActor) nextLowBalanceWrite(ctx actor.Context) {
	if len(t.lowWrites) == 0 {
		return
	}
	w, self, root, id, epoch := t.lowWrites[0], ctx.Self(), t.e.root, t.id, t.epoch
	t.e.goIO(10*time.Second, func(c context.Context) {
		if err := w(c); err != nil {
			t.e.log.Error("low balance notification", slog.String("account_id", id.String()), slog.Any("error", err))
		}
		root.Send(self, &lowBalanceWritten{epoch: epoch})
	})
}
