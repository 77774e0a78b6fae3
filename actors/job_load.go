// Loading a job's messages: expanding a job accepted in compact form, or reading what is
// still open of a stored one, a page at a time.

package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

type (
	jobReady struct { // a batch of its messages is in memory
		from    *jobState              // the incarnation that read it (a predecessor's reads are ignored)
		record  *persistence.JobRecord // the job, when it was read from the store (a resumed job)
		msgs    []dispatchMsg
		pending []pendingReceipt
		last    uuid.UUID // the id to read on from (uuid.Nil: nothing was read)
		more    bool      // the database may hold more of its open messages
		err     error
		// A campaign's job, written chunk by chunk: its decoded audience (once decoded), how
		// many recipients are written now (0: unchanged), and stale: the store's job is not
		// where this incarnation thought (re-read it).
		audience []persistence.Member
		expanded int
		stale    bool
		// screened: when the page's numbers were known not to be suppressed (Unix ms).
		screened int64
	}
	reloadJob struct{}
)

// pendingReceipt is a message already sent whose receipt we must ask for (after a restart).
type pendingReceipt struct {
	providerID string
	network    carriers.Network
}

// jobPage is how many open messages a job reads from the database at a time.
const jobPage = 2000

// errMarksUnread: a resumed job waits until recovery has read the submit marks, so it knows
// which of its queued messages may have reached a network already.
var errMarksUnread = errors.New("submit marks not read yet")

// load brings the job's messages into memory: expanding a job accepted in compact form, or
// reading what is still open of a job accepted earlier (a resumed job).
func (j *jobActor) load(ctx actor.Context) {
	st := j.st
	self, root, after := ctx.Self(), j.e.root, st.cursor
	var known *persistence.NewJob
	if st.known {
		job := st.job
		known = &job
	}
	id, resumed, vars, expanded, members := st.start.id, st.start.resumed, st.variants, st.expanded, st.audience
	st.loading = true
	j.e.goIO(5*time.Minute, func(c context.Context) {
		r := j.loadMessages(c, id, resumed, known, vars, after, expanded, members)
		r.from = st
		root.Send(self, r)
	})
}

// loadMessages expands a job accepted in compact form (a send's all at once: at most 10,000
// recipients; a campaign's a chunk at a time), or reads the next page of a stored job's open
// messages. A resumed job is read from the store first.
func (j *jobActor) loadMessages(ctx context.Context, id uuid.UUID, resumed bool, job *persistence.NewJob, vars [carriers.NetworkSlots]variant,
	after uuid.UUID, expanded int, members []persistence.Member) *jobReady {
	if resumed && !j.e.marksRead.Load() {
		return &jobReady{err: errMarksUnread}
	}
	r := &jobReady{}
	if job == nil {
		rec, err := j.e.store.JobRecord(ctx, id)
		if err != nil {
			return &jobReady{err: err}
		}
		r.record, job, vars, expanded, members = &rec, &rec.NewJob, variantsOf(rec.NewJob), rec.Expanded, nil
	}
	if job.CampaignID != nil && job.Pending != nil {
		return j.loadCampaign(ctx, r, *job, vars, after, expanded, members, resumed)
	}
	if job.Pending != nil && after == uuid.Nil {
		// Take an expansion slot before building anything: jobs queued for a slot must not
		// each hold their 10,000 message rows in memory while they wait.
		if err := j.e.takeExpansion(ctx); err != nil {
			return &jobReady{err: err}
		}
		msgs, expanded, err := j.expand(ctx, *job, vars)
		<-j.e.expansions
		if err != nil {
			return &jobReady{err: err}
		}
		if expanded {
			r.msgs = msgs
			return j.screenPage(ctx, r, *job, resumed)
		}
		// An earlier run expanded it and crashed: what it wrote is the truth.
	}
	n, err := j.readOpen(ctx, r, id, after, resumed)
	if err != nil {
		return &jobReady{err: err}
	}
	r.more = n == jobPage
	return j.screenPage(ctx, r, *job, resumed)
}

// readOpen reads a page of a stored job's open messages past the cursor into r: queued ones
// to dispatch, sent ones to ask about. It returns how many rows it read.
func (j *jobActor) readOpen(ctx context.Context, r *jobReady, id, after uuid.UUID, resumed bool) (int, error) {
	start := time.Now()
	open, err := j.e.store.OpenMessages(ctx, id, after, jobPage)
	if err != nil {
		return 0, err
	}
	j.e.m.batchLatency.WithLabelValues("page").Observe(time.Since(start).Seconds())
	j.e.m.batchSize.WithLabelValues("page").Observe(float64(len(open)))
	for _, m := range open {
		r.last = m.ID
		if m.Status == "sent" {
			if m.ProviderID != "" { // without one, only the sweep can settle it
				r.pending = append(r.pending, pendingReceipt{providerID: m.ProviderID, network: m.Network})
			}
			continue
		}
		nsn, err := persistence.ParseE164(m.Recipient)
		if err != nil {
			return 0, err
		}
		_, unsettled := j.e.unsettled.Load(m.ID)
		r.msgs = append(r.msgs, dispatchMsg{id: m.ID, nsn: nsn, network: m.Network, body: m.Body, unsettled: unsettled})
	}
	if resumed {
		j.e.m.resumed.Add(float64(len(open)))
	}
	return len(open), nil
}

// expand writes the message rows of a send's job accepted in compact form and returns them
// ready to dispatch; expanded is false when an earlier run already did (and crashed after).
func (j *jobActor) expand(ctx context.Context, job persistence.NewJob, vars [carriers.NetworkSlots]variant) (msgs []dispatchMsg, expanded bool, err error) {
	rs, err := persistence.DecodeRecipients(job.Pending)
	if err != nil {
		return nil, false, fmt.Errorf("job %s: %w", job.ID, err)
	}
	rows := make([]persistence.NewMessage, len(rs))
	msgs = make([]dispatchMsg, len(rs))
	for i, r := range rs {
		rows[i] = newMessage(job, vars[r.Network], r)
		msgs[i] = dispatchMsg{id: rows[i].ID, nsn: r.NSN, network: r.Network}
	}
	expanded, err = j.writeRows(ctx, job, 0, rows, true)
	if err != nil || !expanded {
		return nil, false, err
	}
	return msgs, true, nil
}

// writeRows writes message rows of a job accepted in compact form (Store.ExpandJob), timed.
func (j *jobActor) writeRows(ctx context.Context, job persistence.NewJob, from int, rows []persistence.NewMessage, final bool) (bool, error) {
	e := j.e
	start := time.Now()
	ok, err := e.store.ExpandJob(ctx, job, from, rows, final)
	e.m.batchLatency.WithLabelValues("expand").Observe(time.Since(start).Seconds())
	e.m.batchSize.WithLabelValues("expand").Observe(float64(len(rows)))
	return ok, err
}
