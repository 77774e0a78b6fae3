// A tenant's jobs: dispatch slots, the queue of jobs waiting for one, and resuming the jobs
// earlier runs left unfinished.

package actors

import (
	"bytes"
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

type (
	// startJob queues a job opened outside the tenant (a scheduled campaign now due, a
	// keyword's confirmation).
	startJob struct{ id uuid.UUID }
	// openJobsRead is a page of the tenant's unfinished jobs, read to resume them.
	openJobsRead struct {
		ids   []uuid.UUID
		held  bool // promotional jobs were left out (quiet hours) and some exist
		err   error
		epoch int64
	}
	readOpenJobs struct{} // read the next page of unfinished jobs (a retry after an error)
	// jobDispatched: the job has submitted everything; its slot is free.
	jobDispatched struct{ id uuid.UUID }
	// jobHandedOff: a job accepted with its messages in hand has given every one to the links;
	// it only waits for their outcomes, so its slot is free (see jobActor.pump).
	jobHandedOff struct{ id uuid.UUID }
)

// jobStart is a job waiting for a dispatch slot: either accepted by this incarnation (job and
// its inline messages in hand) or resumed by id, its job actor reading it from the store.
type jobStart struct {
	id       uuid.UUID
	job      *persistence.NewJob // nil when resumed
	inline   []dispatchMsg
	variants [carriers.NetworkSlots]variant
	resumed  bool
}

// resumeState walks the account's unfinished jobs of earlier runs: those accepted before
// this incarnation started, in id order, a page at a time as dispatch slots free up.
type resumeState struct {
	before  uuid.UUID // with the fence (OpenJobs): jobs accepted from now on under it are its own
	after   uuid.UUID // the walk's cursor
	more    bool      // the store may hold more
	reading bool      // a page is being read
	again   bool      // walk again once this walk ends (the quiet hours ended meanwhile)
	// seen: the jobs queued or running here, so that a walk queues none of them twice.
	seen map[uuid.UUID]bool
}

func (r *resumeState) done() bool { return !r.more && !r.reading }

// resumePage is how many unfinished jobs a tenant reads at a time.
func (t *tenantActor) resumePage() int { return 2 * t.e.opts.MaxDispatchingJob }

// startResume begins the walk of jobs left unfinished by earlier runs or incarnations.
func (t *tenantActor) startResume(ctx actor.Context) {
	t.resume = resumeState{before: persistence.NewID(), more: !t.e.opts.Faults.skipResume(), seen: map[uuid.UUID]bool{}}
	t.readOpenJobs(ctx)
}

// readOpenJobs reads the walk's next page once the account is loaded: inside its quiet hours
// the walk leaves its promotional jobs in the store, and notes that it did.
func (t *tenantActor) readOpenJobs(ctx actor.Context) {
	r := &t.resume
	if !r.more || r.reading || !t.loaded {
		return
	}
	r.reading = true
	self, root, id, after, before, limit, epoch := ctx.Self(), t.e.root, t.id, r.after, r.before, t.resumePage(), t.epoch
	promotional, fence := !t.quietNow(), t.pending.fence
	t.e.goIO(time.Minute, func(c context.Context) {
		ids, err := t.e.store.OpenJobs(c, id, after, before, fence, limit, promotional)
		held := false
		if err == nil && !promotional && after == uuid.Nil {
			held, err = t.e.store.HeldPromotional(c, id)
		}
		root.Send(self, &openJobsRead{ids: ids, held: held, err: err, epoch: epoch})
	})
}

// walkAgain walks the unfinished jobs again, from the first: the promotional jobs a walk inside
// quiet hours left in the store, and those held since, are queued now.
func (t *tenantActor) walkAgain(ctx actor.Context) {
	r := &t.resume
	if !r.done() {
		r.again = true
		return
	}
	r.before, r.after, r.more, r.again = persistence.NewID(), uuid.Nil, true, false
	t.readOpenJobs(ctx)
}

func (t *tenantActor) openJobsRead(ctx actor.Context, msg *openJobsRead) {
	r := &t.resume
	r.reading = false
	if msg.err != nil {
		t.e.log.Error("read unfinished jobs", slog.String("account_id", t.id.String()), slog.Any("error", msg.err))
		t.timers.after(t.e.root, ctx.Self(), loadRetry, &readOpenJobs{})
		return
	}
	r.more = len(msg.ids) == t.resumePage()
	if msg.held {
		t.holdBack(ctx)
	}
	for _, id := range msg.ids {
		r.after = id
		if !t.resume.seen[id] {
			t.enqueue(jobStart{id: id, resumed: true})
		}
	}
	if r.again && !r.more {
		t.walkAgain(ctx)
	}
	t.startJobs(ctx)
}

// enqueue queues a job for a dispatch slot; a job of an earlier run is queued once. Waiting
// jobs keep their messages in memory up to Options.WaitingInline of them on the node (a tenant sending
// one message a request, over SMPP or the API, queues thousands of one-message jobs a second,
// and reading each back would bound its dispatch at a few hundred a second); past that a job
// reads its messages back from the store when its turn comes, so however many sends wait, the
// tenant holds a bounded number of them.
func (t *tenantActor) enqueue(js jobStart) {
	if js.inline != nil {
		if t.e.inlineWaiting.Add(int64(len(js.inline))) > t.e.opts.WaitingInline {
			t.e.inlineWaiting.Add(-int64(len(js.inline)))
			js = jobStart{id: js.id}
		} else {
			t.inlineWaiting += len(js.inline)
		}
	}
	if t.resume.seen[js.id] {
		return
	}
	t.resume.seen[js.id] = true
	if bytes.Compare(js.id[:], t.resume.before[:]) < 0 {
		js.resumed = true
	}
	t.waiting = append(t.waiting, js)
	t.e.m.jobsWaiting.Inc()
}

// startJobs spawns waiting jobs while the tenant has dispatch slots, and reads more
// unfinished jobs when it runs out of waiting ones.
func (t *tenantActor) startJobs(ctx actor.Context) {
	if !t.loaded || t.pending.retired != nil {
		return // a job's quiet hours come with the account; a fenced tenant starts nothing
	}
	for len(t.waiting) > 0 && len(t.dispatching) < t.e.opts.MaxDispatchingJob {
		js := t.waiting[0]
		t.waiting[0] = jobStart{}
		t.waiting = t.waiting[1:]
		t.leftQueue(js)
		st := &jobState{start: js, tenant: ctx.Self(), fence: t.pending.fence, cancelled: t.cancelled[js.id], quiet: t.quiet}
		pid, err := ctx.SpawnNamed(t.e.props(func() actor.Actor { return &jobActor{e: t.e, st: st} }), "job-"+js.id.String())
		if err != nil {
			t.e.log.Debug("job already running", slog.String("job_id", js.id.String()))
			delete(t.resume.seen, js.id)
			continue
		}
		t.dispatching[js.id] = true
		t.live[js.id] = pid
	}
	if len(t.waiting) == 0 && len(t.dispatching) < t.e.opts.MaxDispatchingJob {
		t.readOpenJobs(ctx)
	}
}

// leftQueue accounts for a job taken out of the waiting queue.
func (t *tenantActor) leftQueue(js jobStart) {
	t.e.m.jobsWaiting.Dec()
	if js.inline != nil {
		t.inlineWaiting -= len(js.inline)
		t.e.inlineWaiting.Add(-int64(len(js.inline)))
	}
}

func (t *tenantActor) jobDispatched(ctx actor.Context, id uuid.UUID) {
	delete(t.resume.seen, id)
	delete(t.dispatching, id)
	delete(t.cancelled, id)
	delete(t.live, id)
	delete(t.handedOff, id)
	t.startJobs(ctx)
}

// jobHandedOff frees the slot of a job that now only waits for its outcomes.
func (t *tenantActor) jobHandedOff(ctx actor.Context, id uuid.UUID) {
	if !t.dispatching[id] {
		return
	}
	delete(t.dispatching, id)
	t.handedOff[id] = true
	t.startJobs(ctx)
}
