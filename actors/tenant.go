package actors

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// tenantActor owns an account's spendable balance and pricing while it lives. Reservations
// happen inside Receive, so concurrent sends are serialised without locks; the committed
// balance comes back as versioned snapshots from every transaction that changes it.
type tenantActor struct {
	e  *Engine
	id uuid.UUID

	loaded bool
	stash  []stashed // commands that arrived before the state loaded
	// Loads are numbered: a reload answers its caller only once a load that started after the
	// request has been applied, and a slow, older load never overwrites a newer one.
	loadGen, appliedGen int
	reloaders           []reloader
	company             string
	sender              *persistence.Sender // the account's default sender, if any
	wallet              persistence.WalletSnapshot
	tier                *string
	intern              bool
	// lowAlerted: the account was told its balance is low and has not recovered since.
	lowAlerted bool
	lowWrites  []func(context.Context) error // the head is running

	reserved     int64 // cents of sends waiting for their commit
	lifetime     int64 // committed lifetime SMS units
	pendingUnits int64 // units of sends waiting for their commit
	accepting    int   // sends waiting for their commit

	dispatching map[uuid.UUID]bool
	waiting     []jobStart
}

type stashed struct {
	msg   any
	reply *actor.PID
}

type reloader struct {
	gen   int
	reply *actor.PID
}

// jobStart is a job waiting for a dispatch slot.
type jobStart struct {
	job      persistence.NewJob
	inline   []dispatchMsg
	variants [4]variant
	resumed  bool
}

func (t *tenantActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		t.dispatching = map[uuid.UUID]bool{}
		ctx.SetReceiveTimeout(t.e.opts.TenantIdle)
		t.load(ctx)
	case *reloadTenant:
		t.load(ctx)
		if ctx.Sender() != nil {
			t.reloaders = append(t.reloaders, reloader{gen: t.loadGen, reply: ctx.Sender()})
		}
	case *tenantLoaded:
		t.loadedState(ctx, msg)
	case *sendCmd, *creditCmd, *pricingCmd, *paymentCmd:
		if !t.loaded {
			t.stash = append(t.stash, stashed{msg: msg, reply: ctx.Sender()})
			return
		}
		t.command(ctx, msg, ctx.Sender())
	case *acceptDone:
		t.accepted(ctx, msg)
	case *creditDone:
		if msg.err != nil {
			ctx.Send(msg.reply, msg.err)
			return
		}
		t.adopt(msg.wallet)
		t.rearmLowBalance(ctx)
		t.e.m.credited.Add(float64(msg.cents))
		w := msg.wallet
		ctx.Send(msg.reply, &w)
	case *paymentDone:
		if msg.err != nil {
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
	case *pricingDone:
		if msg.err == nil {
			t.tier, t.intern = msg.cmd.tier, msg.cmd.internal
		}
		ctx.Send(msg.reply, errOrOK(msg.err))
	case *walletChanged:
		t.adopt(msg.wallet)
		t.rearmLowBalance(ctx)
	case *resumeJob:
		j := msg.job.NewJob
		t.waiting = append(t.waiting, jobStart{job: j, variants: variantsOf(j), resumed: true})
		t.e.m.jobsWaiting.Inc()
		t.startJobs(ctx)
	case *jobDispatched:
		delete(t.dispatching, msg.id)
		t.startJobs(ctx)
	case *actor.ReceiveTimeout:
		if t.loaded && t.accepting == 0 && len(t.dispatching) == 0 && len(t.waiting) == 0 && len(t.lowWrites) == 0 {
			ctx.Send(ctx.Parent(), &passivating{id: t.id})
		}
	case *lowBalanceWritten:
		t.lowWrites[0] = nil
		t.lowWrites = t.lowWrites[1:]
		t.nextLowBalanceWrite(ctx)
	case *panicNow:
		panic("tenant: panic requested")
	}
}

func (t *tenantActor) load(ctx actor.Context) {
	self, root := ctx.Self(), t.e.root
	t.loadGen++
	gen := t.loadGen
	t.e.goIO(10*time.Second, func(c context.Context) {
		st, err := t.e.store.TenantState(c, t.id)
		root.Send(self, &tenantLoaded{state: st, err: err, gen: gen})
	})
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
	if msg.err != nil {
		t.e.log.Error("load tenant state", slog.String("account_id", t.id.String()), slog.Any("error", msg.err))
		self, root := ctx.Self(), t.e.root
		time.AfterFunc(time.Second, func() { root.Send(self, &reloadTenant{}) })
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
	t.lifetime = max(t.lifetime, st.LifetimeSMS)
	t.lowAlerted = st.LowBalanceAlerted
	t.adopt(st.Wallet)
	t.loaded = true
	stash := t.stash
	t.stash = nil
	for _, s := range stash {
		t.command(ctx, s.msg, s.reply)
	}
}

// adopt takes a committed wallet snapshot if it is newer than the one held.
func (t *tenantActor) adopt(w persistence.WalletSnapshot) {
	if w.Version > t.wallet.Version || t.wallet.AccountID == uuid.Nil {
		t.wallet = w
	}
}

func (t *tenantActor) command(ctx actor.Context, msg any, reply *actor.PID) {
	switch m := msg.(type) {
	case *sendCmd:
		t.send(ctx, m, reply)
	case *creditCmd:
		self, root := ctx.Self(), t.e.root
		t.e.goIO(10*time.Second, func(c context.Context) {
			w, err := t.e.store.Credit(c, m.c)
			root.Send(self, &creditDone{wallet: w, err: err, reply: reply, cents: m.c.Cents})
		})
	case *paymentCmd:
		self, root := ctx.Self(), t.e.root
		t.e.goIO(10*time.Second, func(c context.Context) {
			res, err := t.e.store.ConfirmPayment(c, m.c)
			root.Send(self, &paymentDone{res: res, err: err, reply: reply})
		})
	case *pricingCmd:
		self, root := ctx.Self(), t.e.root
		t.e.goIO(10*time.Second, func(c context.Context) {
			err := t.e.store.SetPricing(c, t.id, m.tier, m.internal)
			root.Send(self, &pricingDone{cmd: m, err: err, reply: reply})
		})
	}
}

// route picks the sender of a network's messages: the explicit sender if it covers the
// network, else the account default if it does, else the shared sender with the company
// prefix.
func (t *tenantActor) route(explicit *persistence.Sender, n carriers.Network) (sender string, prefixed bool) {
	if explicit != nil && explicit.Covers(n) {
		return explicit.Name, false
	}
	if t.sender != nil && t.sender.Covers(n) {
		return t.sender.Name, false
	}
	return t.e.opts.SharedSender, t.company != ""
}

func (t *tenantActor) sharedPrefix() string {
	if t.company == "" {
		return ""
	}
	return t.company + ": "
}

func (t *tenantActor) send(ctx actor.Context, cmd *sendCmd, reply *actor.PID) {
	req := cmd.req
	pricing := PricingFor(t.lifetime+t.pendingUnits, t.tier, t.intern)
	var counts [4]int
	for _, r := range req.Recipients {
		counts[r.Network]++
	}
	job := persistence.NewJob{
		ID: persistence.NewID(), AccountID: t.id, Source: req.Source, Message: req.Message,
		PriceCents: pricing.PriceCents, Recipients: len(req.Recipients), Idempotency: req.Idempotency,
	}
	var vars [4]variant
	for _, n := range carriers.Networks() {
		sender, prefixed := t.route(req.Sender, n)
		job.Senders[n-1], job.Prefixed[n-1] = sender, prefixed
		if prefixed {
			job.SharedPrefix = t.sharedPrefix()
		}
	}
	vars = variantsOf(job)
	for _, n := range carriers.Networks() {
		job.Units += int64(counts[n]) * int64(vars[n].parts)
	}
	job.CostCents = job.Units * pricing.PriceCents
	if available := t.wallet.BalanceCents - t.reserved; job.CostCents > available {
		ctx.Send(reply, &InsufficientBalanceError{AvailableCents: available, CostCents: job.CostCents})
		return
	}
	if !pricing.Override && !pricing.Internal {
		before, after := TierIndex(t.lifetime+t.pendingUnits), TierIndex(t.lifetime+t.pendingUnits+job.Units)
		if after > before {
			title, text := tierUpgradeNotice(after)
			job.Notices = append(job.Notices, persistence.NewNotification{Type: "tier_upgrade", Title: title, Message: text})
		}
	}
	var inline []dispatchMsg
	if len(req.Recipients) <= t.e.opts.InlineLimit {
		job.Inline = make([]persistence.NewMessage, len(req.Recipients))
		inline = make([]dispatchMsg, len(req.Recipients))
		for i, r := range req.Recipients {
			job.Inline[i] = newMessage(job, vars[r.Network], r)
			inline[i] = dispatchMsg{id: job.Inline[i].ID, nsn: r.NSN, network: r.Network}
		}
	} else {
		job.Pending = persistence.EncodeRecipients(req.Recipients)
	}
	t.reserved += job.CostCents
	t.pendingUnits += job.Units
	t.accepting++
	ctx.Send(t.e.writerFor(t.id), &acceptReq{job: job, reply: reply, tenant: ctx.Self(), start: cmd.at, inline: inline, variant: vars})
}

// newMessage is the row of one recipient of a job.
func newMessage(j persistence.NewJob, v variant, r persistence.Recipient) persistence.NewMessage {
	return persistence.NewMessage{
		ID: persistence.NewID(), Recipient: r.E164(), Network: r.Network, Sender: v.sender, Prefixed: v.prefixed,
		Parts: v.parts, Encoding: v.encoding, CostCents: int64(v.parts) * j.PriceCents,
	}
}

// variantsOf derives, per network, the exact text and segmentation a job sends. The same
// function prices a send and builds what goes out, so the quote is the charge.
func variantsOf(j persistence.NewJob) [4]variant {
	var vars [4]variant
	for _, n := range carriers.Networks() {
		text := j.Message
		if j.Prefixed[n-1] {
			text = j.SharedPrefix + j.Message
		}
		seg := carriers.Segment(text)
		vars[n] = variant{text: text, sender: j.Senders[n-1], prefixed: j.Prefixed[n-1], parts: seg.Parts, encoding: seg.Encoding}
	}
	return vars
}

func (t *tenantActor) accepted(ctx actor.Context, d *acceptDone) {
	req := d.req
	t.accepting = max(t.accepting-1, 0)
	t.reserved = max(t.reserved-req.job.CostCents, 0)
	t.pendingUnits = max(t.pendingUnits-req.job.Units, 0)
	switch {
	case d.err != nil:
		ctx.Send(req.reply, d.err)
		return
	case errors.Is(d.result.Err, persistence.ErrInsufficientBalance):
		ctx.Send(req.reply, &InsufficientBalanceError{AvailableCents: t.wallet.BalanceCents - t.reserved, CostCents: req.job.CostCents})
		return
	case d.result.Err != nil:
		ctx.Send(req.reply, d.result.Err)
		return
	}
	t.adopt(d.result.Wallet)
	t.lifetime += req.job.Units
	ctx.Send(req.reply, &SendResult{JobID: req.job.ID, Recipients: req.job.Recipients, CostCents: req.job.CostCents})
	t.alertLowBalance(ctx)

	m := t.e.m
	m.acceptLatency.Observe(time.Since(req.start).Seconds())
	m.debited.Add(float64(req.job.CostCents))
	var counts [4]int
	if req.job.Inline != nil {
		for _, msg := range req.job.Inline {
			counts[msg.Network]++
		}
	} else if rs, err := persistence.DecodeRecipients(req.job.Pending); err == nil {
		for _, r := range rs {
			counts[r.Network]++
		}
	}
	for _, n := range carriers.Networks() {
		if counts[n] > 0 {
			m.accepted.WithLabelValues(n.String()).Add(float64(counts[n]))
		}
	}
	job := req.job
	job.Inline, job.Notices, job.Idempotency = nil, nil, nil
	t.waiting = append(t.waiting, jobStart{job: job, inline: req.inline, variants: req.variant})
	t.e.m.jobsWaiting.Inc()
	t.startJobs(ctx)
}

// startJobs spawns waiting jobs while the tenant has dispatch slots.
func (t *tenantActor) startJobs(ctx actor.Context) {
	for len(t.waiting) > 0 && len(t.dispatching) < t.e.opts.MaxDispatchingJob {
		js := t.waiting[0]
		t.waiting[0] = jobStart{}
		t.waiting = t.waiting[1:]
		t.e.m.jobsWaiting.Dec()
		st := &jobState{start: js, tenant: ctx.Self()}
		_, err := ctx.SpawnNamed(t.e.props(func() actor.Actor { return &jobActor{e: t.e, st: st} }), "job-"+js.job.ID.String())
		if err != nil {
			// Already dispatching (a resume raced a live job): nothing to do.
			t.e.log.Debug("job already running", slog.String("job_id", js.job.ID.String()))
			continue
		}
		t.dispatching[js.job.ID] = true
	}
}

func errOrOK(err error) any {
	if err != nil {
		return err
	}
	return &struct{}{}
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
		_, err := t.e.store.LowBalanceAlert(c, t.id, limit, notice)
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
	t.lowBalanceWrite(ctx, func(c context.Context) error { return t.e.store.LowBalanceRecovered(c, t.id, limit) })
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
	w, self, root, id := t.lowWrites[0], ctx.Self(), t.e.root, t.id
	t.e.goIO(10*time.Second, func(c context.Context) {
		if err := w(c); err != nil {
			t.e.log.Error("low balance notification", slog.String("account_id", id.String()), slog.Any("error", err))
		}
		root.Send(self, &lowBalanceWritten{})
	})
}
