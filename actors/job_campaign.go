// A campaign's job: its audience turned into messages a chunk at a time, each contact's text
// rendered, and the contacts who opted out since the campaign began left out.

package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// campaignMessage is the row of one contact of a campaign's job: its own text (the network's
// prefix, then the template with the contact's names), parts and cost.
func campaignMessage(j persistence.NewJob, v variant, m persistence.Member) persistence.NewMessage {
	text := campaignText(j, v, m)
	seg := carriers.Segment(text)
	return persistence.NewMessage{
		ID: persistence.NewID(), Recipient: m.E164(), Network: m.Network, Sender: v.sender, Prefixed: v.prefixed,
		Body: &text, Parts: seg.Parts, Encoding: seg.Encoding, CostCents: int64(seg.Parts) * j.PriceCents,
	}
}

// expandCampaign builds the message rows of a chunk of a campaign's audience.
func expandCampaign(job persistence.NewJob, vars [carriers.NetworkSlots]variant, chunk []persistence.Member) ([]persistence.NewMessage, []dispatchMsg) {
	rows, msgs := make([]persistence.NewMessage, len(chunk)), make([]dispatchMsg, len(chunk))
	for i, m := range chunk {
		rows[i] = campaignMessage(job, vars[m.Network], m)
		msgs[i] = dispatchMsg{id: rows[i].ID, nsn: m.NSN, network: m.Network, body: rows[i].Body}
	}
	return rows, msgs
}

// loadCampaign reads the next page of a campaign's job still being written: what earlier
// chunks wrote that is still open past the cursor, then, while the page has room, the next
// chunk of the audience, written now. Its first submits go after one chunk is written, not
// the whole audience, and memory holds a page, not the campaign.
func (j *jobActor) loadCampaign(ctx context.Context, r *jobReady, job persistence.NewJob, vars [carriers.NetworkSlots]variant,
	after uuid.UUID, expanded int, members []persistence.Member, resumed bool) *jobReady {
	read := 0
	if after != uuid.Nil || expanded > 0 {
		var err error
		if read, err = j.readOpen(ctx, r, job.ID, after, resumed); err != nil {
			return &jobReady{err: err}
		}
		if read == jobPage {
			r.more = true
			return j.screenPage(ctx, r, job, resumed)
		}
	}
	if members == nil {
		ms, err := persistence.DecodeAudience(job.Pending)
		if err != nil {
			return &jobReady{err: fmt.Errorf("job %s: %w", job.ID, err)}
		}
		members, r.audience = ms, ms
	}
	n := min(jobPage-read, len(members)-expanded)
	if n <= 0 {
		return &jobReady{err: fmt.Errorf("job %s: %d of %d recipients written, yet some are pending", job.ID, expanded, len(members))}
	}
	rows, msgs := expandCampaign(job, vars, members[expanded:expanded+n])
	if err := j.e.takeExpansion(ctx); err != nil {
		return &jobReady{err: err}
	}
	ok, err := j.writeRows(ctx, job, expanded, rows, expanded+n == len(members))
	<-j.e.expansions
	if err != nil {
		return &jobReady{err: err}
	}
	if !ok { // cancelled, or written further by an earlier run: the store's job decides
		r.stale, r.more = true, true
		return j.screenPage(ctx, r, job, resumed)
	}
	r.msgs = append(r.msgs, msgs...)
	r.last, r.expanded, r.more = msgs[len(msgs)-1].id, expanded+n, expanded+n < len(members)
	return j.screenPage(ctx, r, job, resumed)
}

// screenPage leaves out of a page what may no longer be sent: a campaign's contacts that opted
// out since it began, and any job's numbers suppressed since it was accepted.
func (j *jobActor) screenPage(ctx context.Context, r *jobReady, job persistence.NewJob, resumed bool) *jobReady {
	if len(r.msgs) == 0 {
		return r
	}
	r.screened = time.Now().UnixMilli() // before any look-up: what is suppressed after it is caught later
	var err error
	if job.CampaignID != nil {
		if r.msgs, err = j.skipOptedOut(ctx, job.AccountID, job.ID, r.msgs); err != nil {
			return &jobReady{err: err}
		}
	}
	if j.e.mayBeSuppressed(job.AccountID, job.ID, resumed) {
		if r.msgs, err = j.skipSuppressed(ctx, job.AccountID, job.ID, r.msgs); err != nil {
			return &jobReady{err: err}
		}
	}
	return r
}

// skipOptedOut fails, with a refund, the queued messages of a campaign page whose contacts
// opted out since the campaign was created, and returns the rest. A message that may have
// reached a network before a crash (unsettled) goes on: it may be paid for already.
func (j *jobActor) skipOptedOut(ctx context.Context, accountID, jobID uuid.UUID, msgs []dispatchMsg) ([]dispatchMsg, error) {
	e := j.e
	phones := make([]string, 0, len(msgs))
	for _, m := range msgs {
		phones = append(phones, persistence.Recipient{NSN: m.nsn}.E164())
	}
	start := time.Now()
	out, err := e.store.OptedOut(ctx, accountID, jobID, phones)
	e.m.batchLatency.WithLabelValues("opted_out").Observe(time.Since(start).Seconds())
	if err != nil || len(out) == 0 {
		return msgs, err
	}
	return j.failOptedOut(ctx, accountID, msgs, func(m dispatchMsg) bool { return out[persistence.Recipient{NSN: m.nsn}.E164()] },
		"the contact opted out before its message went")
}

// failOptedOut fails (OPTED_OUT), with a refund, the messages out says to leave out, and
// returns the rest. A message that may have reached a network before a crash (unsettled)
// goes on: it may be paid for already.
func (j *jobActor) failOptedOut(ctx context.Context, accountID uuid.UUID, msgs []dispatchMsg, out func(dispatchMsg) bool,
	why string) ([]dispatchMsg, error) {
	e := j.e
	keep := msgs[:0:0]
	var fails []persistence.Failure
	now := time.Now()
	for _, m := range msgs {
		if out(m) && !m.unsettled {
			fails = append(fails, persistence.Failure{AccountID: accountID, MessageID: m.id,
				ProviderStatus: "OPTED_OUT", Error: why, At: now})
			continue
		}
		keep = append(keep, m)
	}
	if len(fails) == 0 {
		return msgs, nil
	}
	res, err := e.store.FlushReceipts(ctx, persistence.ReceiptBatch{Failed: fails})
	if err != nil {
		return nil, err
	}
	for _, w := range res.Refunds {
		e.WalletChanged(w)
	}
	e.m.optedOut.Add(float64(len(fails)))
	return keep, nil
}
