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
			return j.campaignPage(ctx, r, job)
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
		return j.campaignPage(ctx, r, job)
	}
	r.msgs = append(r.msgs, msgs...)
	r.last, r.expanded, r.more = msgs[len(msgs)-1].id, expanded+n, expanded+n < len(members)
	return j.campaignPage(ctx, r, job)
}

// campaignPage leaves out of a page the contacts that opted out since the campaign began.
func (j *jobActor) campaignPage(ctx context.Context, r *jobReady, job persistence.NewJob) *jobReady {
	if len(r.msgs) == 0 {
		return r
	}
	var err error
	if r.msgs, err = j.skipOptedOut(ctx, job.AccountID, job.ID, r.msgs); err != nil {
		return &jobReady{err: err}
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
	keep := msgs[:0:0]
	var fails []persistence.Failure
	now := time.Now()
	for i, m := range msgs {
		if out[phones[i]] && !m.unsettled {
			fails = append(fails, persistence.Failure{AccountID: accountID, MessageID: m.id,
				ProviderStatus: "OPTED_OUT", Error: "the contact opted out before its message went", At: now})
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
