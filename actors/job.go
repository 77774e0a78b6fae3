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

// jobActor streams one job's messages to the links with per-network credit: at most
// JobWindow messages of a network are outstanding, and a message stops being outstanding when
// its submit outcome is durable. Its state outlives its own restarts (see jobState).
type jobActor struct {
	e      *Engine
	st     *jobState
	timers timers
}

// jobState is kept by the actor's producer, so a panic-restart resumes exactly where the job
// was instead of resubmitting or forgetting what is in flight.
type jobState struct {
	start       jobStart
	tenant      *actor.PID
	fence       int64              // its tenant's epoch: every submit mark carries it
	job         persistence.NewJob // once known: given at accept, or read from the store
	known       bool
	variants    [carriers.NetworkSlots]variant
	started     bool
	ready       bool
	queues      [carriers.NetworkSlots][]dispatchMsg
	outstanding [carriers.NetworkSlots]int
	loadDelay   time.Duration
	// A campaign's job written a chunk at a time: its audience, decoded once, and how many of
	// it are written.
	audience []persistence.Member
	expanded int
	// Reading a stored job a page at a time.
	cursor  uuid.UUID
	more    bool // the database may hold more open messages past cursor
	loading bool
	// inline: accepted by this incarnation with its messages in hand (not read from the store);
	// handedOff: its slot was given back once every message was in a link's hands, and budget
	// is what of the engine's HandOffBudget its messages still take.
	inline, handedOff bool
	budget            int
	// cancelled: its campaign was cancelled; settling/settled: what it never handed over is
	// being, or has been, failed and refunded.
	cancelled, settling, settled bool
	// blocked: its window on a network is used up with more to send (counted in the
	// engine's jobsBlocked, which tells a link running dry that outcomes are awaited).
	blocked [carriers.NetworkSlots]bool
	// quiet: the account's quiet hours when the job started (nil: none); holding: a promotional
	// job stopping for them (job_hold.go).
	quiet   *persistence.QuietHours
	holding bool
	// suspects: messages whose numbers were suppressed since they were screened, held back
	// to be looked up (screening: a look-up is under way) — job_screen.go.
	// screenAfter: the last look-up failed, the next waits until then (screenArmed: a timer
	// wakes the job for it).
	suspects               []dispatchMsg
	screening, screenArmed bool
	screenAfter            time.Time
}

// dispatchMsg is a message in flight through the engine, kept compact: the text is shared by
// every message of a job on the same network.
type dispatchMsg struct {
	id   uuid.UUID
	body *string // personalised text, else the job's variant
	// screened: when its number was last known not to be suppressed (Unix ms): a number
	// suppressed since is looked up before the message goes (suppressedSince).
	screened int64
	nsn      uint32
	network  carriers.Network
	// unsettled: marked for submission before a crash and still queued, so the network may
	// have it already; the link asks before submitting it again.
	unsettled bool
}

// variant is the text, sender and segmentation of a job on one network.
type variant struct {
	text     string
	sender   string
	prefixed bool
	parts    int
	encoding carriers.Encoding
}

// To a job.
type (
	// outcomesDurable: submit outcomes of this many messages per network are recorded.
	outcomesDurable struct{ n [carriers.NetworkSlots]int }
)

func (j *jobActor) Receive(ctx actor.Context) {
	st := j.st
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		if st.started { // restarted after a panic: what was in flight still reports here
			st.screenArmed = false // its timers went with the old incarnation
			if !st.loading && (!st.ready || st.more) {
				j.load(ctx)
			}
			j.pump(ctx)
			return
		}
		st.started = true
		j.e.jobs.Store(st.start.id, ctx.Self())
		j.e.m.jobsActive.Inc()
		if js := st.start; js.job != nil {
			st.job, st.known, st.variants = *js.job, true, js.variants
		}
		if st.start.inline != nil {
			msgs := st.start.inline
			st.start.inline, st.inline = nil, true
			if j.quietNow() { // its messages wait in the store
				j.hold(ctx)
				st.ready = true
				j.pump(ctx)
				return
			}
			if j.e.mayBeSuppressed(st.job.AccountID, st.start.id, false) {
				j.screenInline(ctx, msgs)
				return
			}
			st.ready = true
			sec, nsec := st.start.id.Time().UnixTime() // its tenant screened it as it was accepted
			j.enqueue(msgs, time.Unix(sec, nsec).Add(-suppressionMargin).UnixMilli())
			j.pump(ctx)
			return
		}
		j.load(ctx)
	case *actor.Restarting, *actor.Stopping:
		j.timers.stop()
	case *jobReady:
		if msg.from == st { // a predecessor's read (same PID, before a tenant restart) is not ours
			j.ready(ctx, msg)
		}
	case *reloadJob:
		j.load(ctx)
	case *cancelJob:
		j.cancel(ctx)
		j.pump(ctx)
	case *holdJob:
		j.hold(ctx)
		j.pump(ctx)
	case *remainderCancelled:
		j.remainderSettled(ctx, msg)
	case *settleRetry:
		j.pump(ctx)
	case *suspectMsg:
		j.suspect(ctx, msg)
	case *suspectsScreened:
		j.screened(ctx, msg)
	case *screenRetry:
		st.screenArmed = false
		j.pump(ctx)
	case *fenced: // a link refused its submits: its tenant was replaced
		ctx.Send(st.tenant, msg)
	case *outcomesDurable:
		done := 0
		for n := range msg.n {
			st.outstanding[n] = max(st.outstanding[n]-msg.n[n], 0)
			done += msg.n[n]
		}
		j.giveBack(min(done, st.budget))
		j.pump(ctx)
	case *actor.Stopped:
		for n := range st.blocked {
			j.setBlocked(carriers.Network(n), false)
		}
		j.e.jobs.CompareAndDelete(st.start.id, ctx.Self())
		j.e.m.jobsActive.Dec()
		j.giveBack(st.budget)
	case *panicNow:
		panic("job: panic requested")
	}
}

// screenInline looks up a small job's recipients among the numbers suppressed since it was
// accepted before any is submitted; the answer comes back as the job's first page.
func (j *jobActor) screenInline(ctx actor.Context, msgs []dispatchMsg) {
	st := j.st
	st.loading = true
	self, root, job := ctx.Self(), j.e.root, st.job
	j.e.goIO(time.Minute, func(c context.Context) {
		r := j.screenPage(c, &jobReady{msgs: msgs}, job, false)
		r.from = st
		root.Send(self, r)
	})
}

func (j *jobActor) ready(ctx actor.Context, msg *jobReady) {
	st := j.st
	st.loading = false
	if msg.err != nil {
		st.loadDelay = min(max(2*st.loadDelay, 100*time.Millisecond), 10*time.Second)
		if !errors.Is(msg.err, errMarksUnread) {
			j.e.log.Error("load job", slog.String("job_id", st.start.id.String()), slog.Any("error", msg.err),
				slog.Duration("retry_in", st.loadDelay))
		}
		j.timers.after(j.e.root, ctx.Self(), st.loadDelay, &reloadJob{})
		return
	}
	st.loadDelay = 0
	if msg.record != nil {
		st.job, st.known, st.variants = msg.record.NewJob, true, variantsOf(msg.record.NewJob)
		st.cancelled = st.cancelled || msg.record.Cancelled
		st.expanded, st.audience = msg.record.Expanded, nil
	}
	if msg.audience != nil {
		st.audience = msg.audience
	}
	if msg.expanded > 0 {
		st.expanded = msg.expanded
		if !msg.more { // the last chunk is written: the job is an ordinary stored one now
			st.job.Pending, st.audience = nil, nil
		}
	}
	if msg.stale {
		st.known = false
	}
	st.ready = true
	st.more = msg.more
	if msg.last != uuid.Nil {
		st.cursor = msg.last
	}
	j.enqueue(msg.msgs, msg.screened)
	if st.cancelled {
		j.cancel(ctx)
	}
	if st.holding || j.quietNow() {
		j.hold(ctx)
	}
	j.askAbout(msg.pending)
	j.pump(ctx)
}

func (j *jobActor) enqueue(msgs []dispatchMsg, screened int64) {
	for _, m := range msgs {
		m.screened = screened
		j.st.queues[m.network] = append(j.st.queues[m.network], m)
	}
}

// askAbout sends the messages that were sent before a restart to their links' live status
// check: their pushed receipts were lost with the old process.
func (j *jobActor) askAbout(pending []pendingReceipt) {
	var byNet [carriers.NetworkSlots][]string
	for _, p := range pending {
		byNet[p.network] = append(byNet[p.network], p.providerID)
	}
	for n, ids := range byNet {
		if len(ids) > 0 {
			j.e.root.Send(j.e.links[n], &queryMany{ids: ids, retryFor: j.e.opts.ReceiptTimeout})
		}
	}
}

// pump hands messages to the links while the windows allow, and finishes the job when
// everything it held has a durable outcome.
func (j *jobActor) pump(ctx actor.Context) {
	st := j.st
	if !st.ready {
		return
	}
	window := j.e.opts.JobWindow
	if st.job.CampaignID != nil {
		window = j.e.opts.CampaignWindow
	}
	queued := 0
	for n := 1; n < 4; n++ {
		queued += len(st.queues[n])
	}
	if st.more && !st.loading && queued < jobPage/2 {
		j.load(ctx) // read ahead while what is in memory drains
	}
	done := !st.more && !st.loading
	acct := st.job.AccountID
	for n := 1; n < 4; n++ {
		q := st.queues[n]
		i := 0
		for ; i < len(q) && st.outstanding[n] < window; i++ {
			if !q[i].unsettled && j.e.suppressedSince(acct, q[i].nsn, q[i].screened) {
				st.suspects = append(st.suspects, q[i]) // looked up first (job_screen.go)
				continue
			}
			ctx.Send(j.e.links[n], &submitReq{account: acct, fence: st.fence, msg: q[i], variant: &st.variants[n], job: ctx.Self()})
			st.outstanding[n]++
		}
		clear(q[:i])
		st.queues[n] = q[i:]
		if len(st.queues[n]) > 0 || st.outstanding[n] > 0 {
			done = false
		}
		j.setBlocked(carriers.Network(n), len(st.queues[n]) > 0)
	}
	if len(st.suspects) > 0 || st.screening {
		j.screenSuspects(ctx)
		done = false
	}
	if done && st.cancelled && !st.settled {
		j.settleCancelled(ctx)
		return
	}
	if done && st.holding && !st.cancelled {
		j.held(ctx)
		return
	}
	if done {
		ctx.Send(st.tenant, &jobDispatched{id: st.start.id})
		ctx.Stop(ctx.Self())
		return
	}
	// A job whose messages came in hand at accept gives its slot back once the links hold them
	// all: waiting for the outcomes is no dispatching, and holding the slot would let one
	// unreachable or slow network stop the tenant's other jobs (and so its other networks)
	// once its slots are full. Memory stays bounded as before: those messages were in memory
	// since the accept. Jobs read from the store keep their slot, which bounds how much of a
	// backlog is read into memory.
	if st.inline && !st.handedOff && !j.e.opts.Faults.holdSlots() && !st.more && !st.loading && inHand(st) == 0 {
		// Only within the engine's budget: past it, a network that is down holds the slots again
		// rather than letting every accepted message pile up in memory at its link.
		held := 0
		for _, o := range st.outstanding {
			held += o
		}
		if j.e.takeHandOff(held) {
			st.handedOff, st.budget = true, held
			ctx.Send(st.tenant, &jobHandedOff{id: st.start.id})
		}
	}
}

// setBlocked notes whether the job waits for outcomes on network n to send more.
func (j *jobActor) setBlocked(n carriers.Network, b bool) {
	if j.st.blocked[n] == b {
		return
	}
	j.st.blocked[n] = b
	if b {
		j.e.jobsBlocked[n].Add(1)
	} else {
		j.e.jobsBlocked[n].Add(-1)
	}
}

// giveBack returns n messages' worth of the hand-off budget.
func (j *jobActor) giveBack(n int) {
	if n > 0 {
		j.st.budget -= n
		j.e.handedOff.Add(-int64(n))
	}
}

// inHand counts the messages the job holds that no link has yet.
func inHand(st *jobState) int {
	n := len(st.suspects)
	if st.screening {
		n++ // a look-up's answer is on its way
	}
	for _, q := range st.queues {
		n += len(q)
	}
	return n
}
