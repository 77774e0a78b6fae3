// A tenant's wallet: the committed snapshots it adopts, credits, payments and pricing changes,
// and the low-balance notice, raised once per crossing of the threshold.

package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

type (
	creditCmd  struct{ c persistence.NewCredit }
	creditDone struct {
		wallet persistence.WalletSnapshot
		err    error
		reply  *actor.PID
		cents  int64
	}
	pricingCmd struct {
		tier     *string
		internal bool
	}
	pricingDone struct {
		cmd   *pricingCmd
		err   error
		reply *actor.PID
	}
	// paymentCmd applies a payment the provider confirmed (a top-up credits the wallet).
	paymentCmd struct {
		c persistence.PaymentConfirmation
	}
	paymentDone struct {
		res   persistence.ConfirmedPayment
		err   error
		reply *actor.PID
	}
	// walletChanged carries a snapshot committed elsewhere (refunds, bonuses).
	walletChanged     struct{ wallet persistence.WalletSnapshot }
	lowBalanceWritten struct{ epoch int64 }
)

// adopt takes a committed wallet snapshot if it is newer than the one held.
func (t *tenantActor) adopt(w persistence.WalletSnapshot) {
	if w.Version > t.wallet.Version || t.wallet.AccountID == uuid.Nil {
		t.wallet = w
	}
}

// credit adds money to the wallet in the store; credited answers the caller.
func (t *tenantActor) credit(ctx actor.Context, m *creditCmd, reply *actor.PID) {
	self, root := ctx.Self(), t.e.root
	t.e.goIO(10*time.Second, func(c context.Context) {
		w, err := t.e.store.Credit(c, m.c)
		root.Send(self, &creditDone{wallet: w, err: err, reply: reply, cents: m.c.Cents})
	})
}

func (t *tenantActor) credited(ctx actor.Context, msg *creditDone) {
	if msg.err != nil {
		t.rereadWallet(ctx)
		ctx.Send(msg.reply, msg.err)
		return
	}
	t.adopt(msg.wallet)
	t.rearmLowBalance(ctx)
	t.e.m.credited.Add(float64(msg.cents))
	w := msg.wallet
	ctx.Send(msg.reply, &w)
}

// confirmPayment applies a confirmed payment in the store; paymentConfirmed answers the caller.
func (t *tenantActor) confirmPayment(ctx actor.Context, m *paymentCmd, reply *actor.PID) {
	self, root := ctx.Self(), t.e.root
	t.e.goIO(10*time.Second, func(c context.Context) {
		res, err := t.e.store.ConfirmPayment(c, m.c)
		root.Send(self, &paymentDone{res: res, err: err, reply: reply})
	})
}

func (t *tenantActor) paymentConfirmed(ctx actor.Context, msg *paymentDone) {
	if msg.err != nil {
		t.rereadWallet(ctx)
		ctx.Send(msg.reply, msg.err)
		return
	}
	if msg.res.Wallet != nil {
		t.adopt(*msg.res.Wallet)
		t.rearmLowBalance(ctx)
		t.e.m.credited.Add(float64(msg.res.Payment.AmountCents))
	}
	res := msg.res
	ctx.Send(msg.reply, &res)
}

// rereadWallet reads the wallet from the store and adopts it if newer: after a credit whose
// outcome is unknown (an error at its commit, a timeout), which may have committed. Without it
// the balance here stays below the store's, refusing sends the money pays for, until another
// change happens to carry a newer snapshot.
func (t *tenantActor) rereadWallet(ctx actor.Context) {
	self, root, id := ctx.Self(), t.e.root, t.id
	t.e.goIO(10*time.Second, func(c context.Context) {
		if w, err := t.e.store.WalletNow(c, id); err == nil {
			root.Send(self, &walletChanged{wallet: w})
		}
	})
}

// setPricing writes the account's tier and internal flag; pricingSet takes them once written.
func (t *tenantActor) setPricing(ctx actor.Context, m *pricingCmd, reply *actor.PID) {
	self, root := ctx.Self(), t.e.root
	t.e.goIO(10*time.Second, func(c context.Context) {
		err := t.e.store.SetPricing(c, t.id, m.tier, m.internal)
		root.Send(self, &pricingDone{cmd: m, err: err, reply: reply})
	})
}

func (t *tenantActor) pricingSet(ctx actor.Context, msg *pricingDone) {
	if msg.err == nil {
		t.tier, t.intern = msg.cmd.tier, msg.cmd.internal
	}
	ctx.Send(msg.reply, errOrOK(msg.err))
}

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

// lowBalanceWritten starts the next flag write once this incarnation's last one is done.
func (t *tenantActor) lowBalanceWritten(ctx actor.Context, msg *lowBalanceWritten) {
	if msg.epoch != t.epoch {
		return
	}
	t.lowWrites[0] = nil
	t.lowWrites = t.lowWrites[1:]
	t.nextLowBalanceWrite(ctx)
}

func (t *tenantActor) nextLowBalanceWrite(ctx actor.Context) {
	if len(t.lowWrites) == 0 {
		return
	}
	w, self, root, id, epoch := t.lowWrites[0], ctx.Self(), t.e.root, t.id, t.epoch
	t.e.goIO(lowBalanceTries*10*time.Second, func(c context.Context) {
		// Tried again on an error: both writes are idempotent (they change the flag only from
		// the other value), and a dropped alert would not come back until the balance
		// recovered and crossed again.
		pause := 100 * time.Millisecond
		for try := 1; ; try++ {
			err := w(c)
			if err == nil {
				break
			}
			t.e.log.Error("low balance notification", slog.String("account_id", id.String()), slog.Int("try", try), slog.Any("error", err))
			if try == lowBalanceTries || !sleepCtx(c, pause) {
				break
			}
			pause *= 4
		}
		root.Send(self, &lowBalanceWritten{epoch: epoch})
	})
}

// lowBalanceTries is how many times a low-balance flag write is made before it is given up
// (over about 10 s).
const lowBalanceTries = 5

// sleepCtx waits d, or less if ctx ends first; it says whether the wait was whole.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}
