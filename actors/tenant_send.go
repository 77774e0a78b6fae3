// A tenant's sends: how it prices a send, picks its senders and reserves its cost until the
// commit, and what it does with the commit's answer.

package actors

import (
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

type (
	sendCmd struct {
		req SendRequest
		at  time.Time
	}
	acceptDone struct {
		req    *acceptReq
		result persistence.AcceptResult
		err    error
	}
)

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

// pricedSend is a send routed, segmented and priced as the tenant would accept it now.
type pricedSend struct {
	job      persistence.NewJob      // its units, network counts and cost set
	to       []persistence.Recipient // the request's recipients less the suppressed ones
	vars     [carriers.NetworkSlots]variant
	pricing  Pricing
	lifetime int64 // the volume the price was read at
}

// priceSend prices a send at the account's tier now, with its senders routed and each
// network's text segmented. Send and Quote both call it, so a quote is the charge.
func (t *tenantActor) priceSend(req SendRequest) pricedSend {
	to, suppressed := t.unsuppressed(req.Recipients)
	job, pricing, lifetime := t.newJob(req.Sender, len(to))
	job.Source, job.Message, job.Idempotency, job.Reference = req.Source, req.Message, req.Idempotency, req.Reference
	job.Receipt = req.Receipt
	job.Suppressed = suppressed
	if req.Promotional {
		job.Promotional, job.OptOut = true, t.optOutSuffix(req.Message)
	}
	for _, r := range to {
		job.NetworkCounts[r.Network]++
	}
	vars := variantsOf(job)
	for _, n := range carriers.Networks() {
		job.Units += int64(job.NetworkCounts[n]) * int64(vars[n].parts)
	}
	job.CostCents = job.Units * pricing.PriceCents
	return pricedSend{job: job, to: to, vars: vars, pricing: pricing, lifetime: lifetime}
}

func (t *tenantActor) send(ctx actor.Context, cmd *sendCmd, reply *actor.PID) {
	p := t.priceSend(cmd.req)
	job, vars, to := p.job, p.vars, p.to
	if len(to) == 0 && job.Suppressed > 0 {
		ctx.Send(reply, ErrAllSuppressed)
		return
	}
	if !t.afford(ctx, reply, &job, p.pricing, p.lifetime) {
		return
	}
	var inline []dispatchMsg
	if len(to) <= t.e.opts.InlineLimit {
		job.Inline = make([]persistence.NewMessage, len(to))
		inline = make([]dispatchMsg, len(to))
		for i, r := range to {
			job.Inline[i] = newMessage(job, vars[r.Network], r)
			if len(to) == 1 && cmd.req.MessageID != uuid.Nil {
				job.Inline[i].ID = cmd.req.MessageID
			}
			inline[i] = dispatchMsg{id: job.Inline[i].ID, nsn: r.NSN, network: r.Network}
		}
	} else {
		job.Pending = persistence.EncodeRecipients(to)
	}
	t.write(ctx, &acceptReq{job: job, reply: reply, start: cmd.at, inline: inline, variant: vars})
}

// newJob starts a job of n recipients priced at the account's tier now, its senders routed.
func (t *tenantActor) newJob(explicit *persistence.Sender, n int) (persistence.NewJob, Pricing, int64) {
	lifetime := t.wallet.LifetimeSMS + t.pending.pendingUnits
	pricing := PricingFor(lifetime, t.tier, t.intern)
	job := persistence.NewJob{ID: persistence.NewID(), AccountID: t.id, PriceCents: pricing.PriceCents, Recipients: n}
	for _, n := range carriers.Networks() {
		sender, prefixed := t.route(explicit, n)
		job.Senders[n], job.Prefixed[n] = sender, prefixed
		if prefixed {
			job.SharedPrefix = t.sharedPrefix()
		}
	}
	return job, pricing, lifetime
}

// available is the balance a send is checked against: the committed balance less what sends
// waiting for their commit have reserved.
func (t *tenantActor) available() int64 { return t.wallet.BalanceCents - t.pending.reserved }

// afford checks a priced job's cost against the balance not yet reserved, and adds the
// tier-upgrade notice it earns; false (the caller answered 402) when it cannot be paid.
func (t *tenantActor) afford(ctx actor.Context, reply *actor.PID, job *persistence.NewJob, pricing Pricing, lifetime int64) bool {
	if available := t.available(); job.CostCents > available {
		ctx.Send(reply, &InsufficientBalanceError{AvailableCents: available, CostCents: job.CostCents})
		return false
	}
	if !pricing.Override && !pricing.Internal {
		before, after := TierIndex(lifetime), TierIndex(lifetime+job.Units)
		if after > before {
			title, text := tierUpgradeNotice(after)
			job.Notices = append(job.Notices, persistence.NewNotification{Type: "tier_upgrade", Title: title, Message: text})
		}
	}
	return true
}

// write reserves a priced job's cost until its commit answers and hands it to the writer.
func (t *tenantActor) write(ctx actor.Context, req *acceptReq) {
	t.pending.reserved += req.job.CostCents
	t.pending.pendingUnits += req.job.Units
	t.pending.accepting++
	req.tenant, req.epoch = ctx.Self(), t.epoch
	req.job.Fence = t.pending.fence
	ctx.Send(t.e.writerFor(t.id), req)
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
func variantsOf(j persistence.NewJob) [carriers.NetworkSlots]variant {
	var vars [carriers.NetworkSlots]variant
	for _, n := range carriers.Networks() {
		text := j.Message + j.OptOut
		if j.Prefixed[n] {
			text = j.SharedPrefix + text
		}
		seg := carriers.Segment(text)
		vars[n] = variant{text: text, sender: j.Senders[n], prefixed: j.Prefixed[n], parts: seg.Parts, encoding: seg.Encoding}
	}
	return vars
}

// accepted settles a send's reservation once its commit answered, replies to the caller and
// queues the job for dispatch. A job accepted for an earlier incarnation (this tenant panicked
// meanwhile) is resumed from the store instead: its inline messages may already be in flight.
func (t *tenantActor) accepted(ctx actor.Context, d *acceptDone) {
	req, p := d.req, t.pending
	p.accepting = max(p.accepting-1, 0)
	p.reserved = max(p.reserved-req.job.CostCents, 0)
	p.pendingUnits = max(p.pendingUnits-req.job.Units, 0)
	switch {
	case d.err != nil:
		ctx.Send(req.reply, d.err)
		return
	case errors.Is(d.result.Err, persistence.ErrFenced):
		t.e.fencedWrite("debit")
		ctx.Send(req.reply, ErrFenced)
		t.retire(ctx, ErrFenced)
		return
	case errors.Is(d.result.Err, persistence.ErrInsufficientBalance):
		ctx.Send(req.reply, &InsufficientBalanceError{AvailableCents: t.available(), CostCents: req.job.CostCents})
		return
	case d.result.Err != nil:
		ctx.Send(req.reply, d.result.Err)
		return
	}
	t.adopt(d.result.Wallet)
	var ids []uuid.UUID
	if len(req.job.Inline) > 0 {
		ids = make([]uuid.UUID, len(req.job.Inline))
		for i := range req.job.Inline {
			ids[i] = req.job.Inline[i].ID
		}
	}
	ctx.Send(req.reply, &SendResult{JobID: req.job.ID, Recipients: req.job.Recipients, Suppressed: req.job.Suppressed,
		Units: req.job.Units, CostCents: req.job.CostCents, MessageIDs: ids})
	t.alertLowBalance(ctx)
	if why := t.pending.retired; why != nil { // committed before it retired: the successor resumes its job
		t.retire(ctx, why)
		return
	}

	m := t.e.m
	m.acceptLatency.Observe(time.Since(req.start).Seconds())
	m.debited.Add(float64(req.job.CostCents))
	for _, n := range carriers.Networks() {
		if c := req.job.NetworkCounts[n]; c > 0 {
			m.net[n].accepted.Add(float64(c))
		}
	}
	if c := req.job.Campaign; c != nil && c.ScheduledAt != nil {
		return // its job opens when the scheduler finds it due (StartScheduled)
	}
	if req.job.Promotional && t.quietNow() {
		t.holdBack(ctx) // it waits in the store, resumed when the quiet hours end
		return
	}
	if req.epoch != t.epoch {
		t.enqueue(jobStart{id: req.job.ID, resumed: true})
	} else {
		job := req.job
		job.Inline, job.Notices, job.Idempotency, job.Campaign = nil, nil, nil, nil
		t.enqueue(jobStart{id: job.ID, job: &job, inline: req.inline, variants: req.variant})
	}
	t.startJobs(ctx)
}
