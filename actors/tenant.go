package actors

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

// tenantActor owns an account's spendable balance and pricing while it lives. Reservations
// happen inside Receive, so concurrent sends are serialised without locks; the committed
// balance comes back as versioned snapshots from every transaction that changes it.
//
// It also owns the account's dispatch: at most MaxDispatchingJob jobs run at once (its
// children), the rest wait. Unfinished jobs of earlier runs (or of an incarnation that
// panicked) are read from the store a page at a time and resumed like the rest.
type tenantActor struct {
	e       *Engine
	id      uuid.UUID
	pending *tenantPending
	timers  timers
	epoch   int64 // this incarnation, unique in the engine

	loaded bool
	stash  []stashed // commands that arrived before the state loaded
	// Loads are numbered: a reload answers its caller only once a load that started after the
	// request has been applied, and a slow, older load never overwrites a newer one.
	loadGen, appliedGen int
	reloaders           []reloader

	company string
	sender  *persistence.Sender // the account's default sender, if any
	// suppressed is the account's suppression list; suppressChanges the changes it was told
	// of since the oldest load that may not hold them (adoptSuppressed).
	suppressed      suppressedSet
	suppressChanges []suppressionChange
	wallet          persistence.WalletSnapshot
	optOut          string                  // the opt-out text of its promotional messages
	quiet           *persistence.QuietHours // nil: none
	quietWatch      quietWatch
	tier            *string
	intern          bool
	// lowAlerted: the account was told its balance is low and has not recovered since.
	lowAlerted bool
	lowWrites  []func(context.Context) error // the head is running

	dispatching map[uuid.UUID]bool
	handedOff   map[uuid.UUID]bool       // jobs alive only for their outcomes: no slot (jobHandedOff)
	cancelled   map[uuid.UUID]bool       // jobs whose campaign was cancelled: they start cancelled
	live        map[uuid.UUID]*actor.PID // job actors this incarnation spawned, until they end
	waiting     []jobStart
	// inlineWaiting counts the messages waiting jobs keep in memory (see enqueue).
	inlineWaiting int
	resume        resumeState
}

// tenantPending is what a tenant has handed to its writer and not heard back about. It
// survives the tenant's own restarts: the money reserved for those sends is still spoken for
// until their commits answer, whichever incarnation hears them.
type tenantPending struct {
	reserved     int64 // cents of sends waiting for their commit
	pendingUnits int64 // SMS units of sends waiting for their commit
	accepting    int   // sends waiting for their commit
	// fence is the epoch this tenant took when it first loaded (persistence.TakeFence): its
	// debits and its jobs' submit marks carry it, so none goes through once another
	// incarnation has replaced it. retired: that has happened (ErrFenced), or the account
	// moved to another node (errMoved); the tenant refuses commands with it and stops once
	// its pending commits have answered.
	fence   int64
	retired error
}

type stashed struct {
	msg   any
	reply *actor.PID
}

type reloader struct {
	gen   int
	reply *actor.PID
}

type (
	// reloadTenant reloads the account; sent as a request, it is answered once the new state is in.
	reloadTenant struct{}
	// Results of a tenant's own I/O carry the incarnation that started it (epoch): after a
	// restart, the successor has the same PID and must not take its predecessor's results.
	tenantLoaded struct {
		state persistence.TenantState
		fence int64 // taken by this load (the first); 0 otherwise
		err   error
		gen   int
		epoch int64
	}
	// fenced: a write for this tenant was refused because a newer incarnation holds the
	// account (from a job whose submits a link could not mark, or a refused debit).
	fenced struct{}
	// retire: the cluster placed the account on another node.
	retire struct{}
)

// loadRetry is how soon a tenant tries again to load its state after a failure.
const loadRetry = time.Second

func (t *tenantActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		t.epoch = t.e.epochs.Add(1)
		t.dispatching, t.handedOff, t.cancelled = map[uuid.UUID]bool{}, map[uuid.UUID]bool{}, map[uuid.UUID]bool{}
		t.live = map[uuid.UUID]*actor.PID{}
		ctx.SetReceiveTimeout(t.e.opts.TenantIdle)
		t.load(ctx)
		t.startResume(ctx)
	case *actor.Restarting, *actor.Stopping:
		if _, stopping := ctx.Message().(*actor.Stopping); stopping {
			// New commands must not reach a mailbox nobody will read: callers now ask the
			// supervisor, which holds them until this tenant's successor exists.
			t.e.tenants.CompareAndDelete(t.id, ctx.Self())
		}
		t.timers.stop()
		t.e.m.jobsWaiting.Sub(float64(len(t.waiting)))
		t.e.inlineWaiting.Add(-int64(t.inlineWaiting))
		t.waiting, t.inlineWaiting = nil, 0
	case *reloadTenant:
		t.load(ctx)
		if ctx.Sender() != nil {
			t.reloaders = append(t.reloaders, reloader{gen: t.loadGen, reply: ctx.Sender()})
		}
	case *tenantLoaded:
		if msg.epoch == t.epoch {
			t.loadedState(ctx, msg)
		}
	case *sendCmd, *quoteCmd, *campaignCmd, *cancelCmd, *creditCmd, *pricingCmd, *paymentCmd:
		if t.pending.retired != nil {
			ctx.Respond(t.pending.retired)
			return
		}
		if !t.loaded {
			t.stash = append(t.stash, stashed{msg: msg, reply: ctx.Sender()})
			return
		}
		t.command(ctx, msg, ctx.Sender())
	case *suppressCmd:
		t.suppress(ctx, msg)
	case *acceptDone:
		t.accepted(ctx, msg)
	case *creditDone:
		t.credited(ctx, msg)
	case *paymentDone:
		t.paymentConfirmed(ctx, msg)
	case *pricingDone:
		t.pricingSet(ctx, msg)
	case *walletChanged:
		t.adopt(msg.wallet)
		t.rearmLowBalance(ctx)
	case *openJobsRead:
		if msg.epoch == t.epoch {
			t.openJobsRead(ctx, msg)
		}
	case *readOpenJobs:
		t.readOpenJobs(ctx)
	case *cancelMarked:
		t.cancelMarked(ctx, msg)
	case *remainderCancelled:
		t.remainderCancelled(ctx, msg)
	case *startJob:
		t.enqueue(jobStart{id: msg.id})
		t.startJobs(ctx)
	case *jobDispatched:
		t.jobDispatched(ctx, msg.id)
	case *jobHandedOff:
		t.jobHandedOff(ctx, msg.id)
	case *jobHeld:
		t.jobHeld(ctx, msg.id)
	case *quietTick:
		t.quietWatch.armed = false
		t.checkQuiet(ctx)
	case *lowBalanceWritten:
		t.lowBalanceWritten(ctx, msg)
	case *actor.ReceiveTimeout:
		if t.idle() {
			ctx.Send(ctx.Parent(), &passivating{id: t.id, pid: ctx.Self()})
		} else {
			// protoactor cancels the timeout when it fires: a tenant busy at that moment (a job
			// waiting for its outcomes) would otherwise never stop once idle.
			ctx.SetReceiveTimeout(t.e.opts.TenantIdle)
		}
	case *fenced:
		t.retire(ctx, ErrFenced)
	case *retire:
		t.retire(ctx, errMoved)
	case *panicNow:
		panic("tenant: panic requested")
	}
}

// idle reports a tenant with nothing in hand, which may stop until it is needed again.
func (t *tenantActor) idle() bool {
	return t.loaded && t.pending.accepting == 0 && len(t.dispatching) == 0 && len(t.handedOff) == 0 && len(t.waiting) == 0 &&
		t.resume.done() && len(t.lowWrites) == 0 && len(t.reloaders) == 0 && !t.quietWatch.held
}

func (t *tenantActor) load(ctx actor.Context) {
	self, root := ctx.Self(), t.e.root
	t.loadGen++
	gen, epoch, fenced := t.loadGen, t.epoch, t.pending.fence != 0
	t.e.goIO(10*time.Second, func(c context.Context) {
		var fence int64
		if !fenced {
			f, err := t.takeFence(c)
			if err != nil {
				root.Send(self, &tenantLoaded{err: err, gen: gen, epoch: epoch})
				return
			}
			fence = f
		}
		st, err := t.e.store.TenantState(c, t.id)
		root.Send(self, &tenantLoaded{state: st, fence: fence, err: err, gen: gen, epoch: epoch})
	})
}

// takeFence takes the account's next epoch. When it replaces an incarnation of another node,
// the messages that node marked and left queued may have reached a network: they are noted
// as unsettled before any job of this one reads them, so each is asked about, not resent.
func (t *tenantActor) takeFence(c context.Context) (int64, error) {
	f, err := t.e.store.TakeFence(c, t.id, t.e.opts.NodeID)
	if err != nil {
		return 0, err
	}
	if f.Replaced && f.Previous != t.e.opts.NodeID {
		t.e.m.takeovers.Inc()
		marked, err := t.e.store.AccountMarks(c, t.id)
		if err != nil {
			return 0, err
		}
		now := time.Now()
		for _, m := range marked {
			var fm foreignMark
			if wait := t.e.opts.TakeoverSettle - m.Age; wait > 0 {
				fm.askAfter = now.Add(wait).UnixNano()
			}
			t.e.unsettled.LoadOrStore(m.ID, fm)
		}
	}
	return f.Epoch, nil
}

// retire stops a tenant a newer incarnation replaced (ErrFenced) or whose account the cluster
// placed on another node (errMoved): its jobs stop (their submits still in the links go out
// under its fence until the successor takes the account's next one, and are refused after),
// commands are refused, and it asks to be stopped once the commits it waits for have answered.
func (t *tenantActor) retire(ctx actor.Context, why error) {
	if t.pending.retired == nil {
		t.pending.retired = why
		if !errors.Is(why, ErrFenced) {
			t.e.m.handoffs.WithLabelValues("moved").Inc()
		} else {
			t.e.m.handoffs.WithLabelValues("fenced").Inc()
			t.e.log.Warn("tenant fenced: a newer incarnation holds the account", slog.String("account_id", t.id.String()),
				slog.Int64("epoch", t.pending.fence))
		}
		for _, pid := range t.live {
			ctx.Stop(pid)
		}
		t.live, t.dispatching, t.handedOff = map[uuid.UUID]*actor.PID{}, map[uuid.UUID]bool{}, map[uuid.UUID]bool{}
		t.e.m.jobsWaiting.Sub(float64(len(t.waiting)))
		t.e.inlineWaiting.Add(-int64(t.inlineWaiting))
		t.waiting, t.inlineWaiting = nil, 0
		for _, s := range t.stash {
			ctx.Send(s.reply, why)
		}
		t.stash = nil
	}
	if t.pending.accepting == 0 {
		ctx.Send(ctx.Parent(), &passivating{id: t.id, pid: ctx.Self()})
	}
}

// answerReloads tells the callers whose reload is covered by the applied state (or failed).
func (t *tenantActor) answerReloads(ctx actor.Context, err error) {
	keep := t.reloaders[:0]
	for _, r := range t.reloaders {
		switch {
		case err != nil:
			ctx.Send(r.reply, err)
		case r.gen <= t.appliedGen:
			ctx.Send(r.reply, &struct{}{})
		default:
			keep = append(keep, r)
		}
	}
	t.reloaders = keep
}

func (t *tenantActor) loadedState(ctx actor.Context, msg *tenantLoaded) {
	if msg.fence != 0 {
		t.pending.fence = msg.fence
	}
	if msg.err != nil {
		t.e.log.Error("load tenant state", slog.String("account_id", t.id.String()), slog.Any("error", msg.err))
		t.timers.after(t.e.root, ctx.Self(), loadRetry, &reloadTenant{})
		if !t.loaded && len(t.stash) > 0 {
			// Callers should not wait out their whole deadline for a database that is down.
			for _, s := range t.stash {
				ctx.Send(s.reply, msg.err)
			}
			t.stash = nil
		}
		t.answerReloads(ctx, msg.err)
		return
	}
	if msg.gen < t.appliedGen {
		return // a newer load has been applied already
	}
	t.appliedGen = msg.gen
	defer t.answerReloads(ctx, nil)
	st := msg.state
	t.company, t.sender, t.tier, t.intern = st.CompanyName, st.DefaultSender, st.PricingTier, st.Internal
	t.lowAlerted = st.LowBalanceAlerted
	t.optOut, t.quiet = st.OptOutText, st.Quiet
	t.adoptSuppressed(st.Suppressed, msg.gen)
	t.adopt(st.Wallet)
	// A balance that recovered while no tenant was here to hear of it (a credit's news is
	// dropped when the account has no tenant): the next crossing notifies again.
	t.rearmLowBalance(ctx)
	first := !t.loaded
	t.loaded = true
	t.checkQuiet(ctx)
	if first { // jobs start once the quiet hours are known
		t.readOpenJobs(ctx)
		t.startJobs(ctx)
	}
	stash := t.stash
	t.stash = nil
	for _, s := range stash {
		t.command(ctx, s.msg, s.reply)
	}
}

func (t *tenantActor) command(ctx actor.Context, msg any, reply *actor.PID) {
	switch m := msg.(type) {
	case *sendCmd:
		t.send(ctx, m, reply)
	case *quoteCmd:
		t.quote(ctx, m, reply)
	case *campaignCmd:
		t.campaign(ctx, m, reply)
	case *cancelCmd:
		t.cancel(ctx, m, reply)
	case *creditCmd:
		t.credit(ctx, m, reply)
	case *paymentCmd:
		t.confirmPayment(ctx, m, reply)
	case *pricingCmd:
		t.setPricing(ctx, m, reply)
	}
}

func errOrOK(err error) any {
	if err != nil {
		return err
	}
	return &struct{}{}
}
