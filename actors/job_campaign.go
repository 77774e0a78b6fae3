// Campaigns: how a tenant prices a campaign to a group, contact by contact with its merge tags
// rendered, and how a campaign's job turns its audience into messages.

package actors

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// CampaignRequest is a campaign ready to price: its audience resolved to networks.
type CampaignRequest struct {
	AccountID   uuid.UUID
	Campaign    persistence.NewCampaign
	Audience    []persistence.Member // the group's active contacts at creation
	Sender      *persistence.Sender  // an explicit approved sender; nil: the default, else shared
	Idempotency *persistence.IdempotencyKey
}

// CreateCampaign prices a campaign exactly (every contact's text rendered, with the shared
// sender's prefix where it applies), reserves and debits its cost and records the campaign and
// its job durably, like Send; a campaign without a time is dispatched at once, a scheduled
// one when StartScheduled hands it over.
func (e *Engine) CreateCampaign(ctx context.Context, req CampaignRequest) (SendResult, error) {
	if !e.accepting.Load() {
		return SendResult{}, ErrStopping
	}
	res, err := e.tenantRequest(ctx, req.AccountID, &campaignCmd{req: req, at: time.Now()})
	if err != nil {
		return SendResult{}, err
	}
	return *res.(*SendResult), nil
}

// StartScheduled hands campaigns whose time came (their jobs now open) to their tenants.
func (e *Engine) StartScheduled(due []persistence.DueCampaign) {
	for _, d := range due {
		e.root.Send(e.supervisor, &toTenant{account: d.AccountID, msg: &startJob{id: d.JobID}})
	}
}

type (
	campaignCmd struct {
		req CampaignRequest
		at  time.Time
	}
	// startJob queues a job opened outside the tenant (a scheduled campaign now due).
	startJob struct{ id uuid.UUID }
)

// RenderMergeTags puts a contact's names in a campaign's text.
func RenderMergeTags(template, first, last string) string {
	if !strings.Contains(template, "{") {
		return template
	}
	return strings.NewReplacer("{first_name}", first, "{last_name}", last).Replace(template)
}

// campaignText is what a contact of a campaign receives: the network's prefix, then the
// template with the contact's names. The same function prices it and sends it.
func campaignText(j persistence.NewJob, v variant, m persistence.Member) string {
	text := RenderMergeTags(j.Message, m.FirstName, m.LastName)
	if v.prefixed {
		text = j.SharedPrefix + text
	}
	return text
}

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

// campaign prices a campaign and hands it to the writer, as send does a send.
func (t *tenantActor) campaign(ctx actor.Context, cmd *campaignCmd, reply *actor.PID) {
	req := cmd.req
	c := req.Campaign
	job, pricing, lifetime := t.newJob(req.Sender, len(req.Audience))
	job.CampaignID, job.Campaign, job.Source, job.Message, job.Idempotency = &c.ID, &c, "campaign", c.Template, req.Idempotency
	vars := variantsOf(job)
	for _, m := range req.Audience {
		job.Units += int64(carriers.Segment(campaignText(job, vars[m.Network], m)).Parts)
		job.NetworkCounts[m.Network]++
	}
	if !t.afford(ctx, reply, &job, pricing, lifetime) {
		return
	}
	job.Pending = persistence.EncodeAudience(req.Audience)
	t.write(ctx, &acceptReq{job: job, reply: reply, start: cmd.at, variant: vars})
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
	ok, err := j.e.writeRows(ctx, job, expanded, rows, expanded+n == len(members))
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
	if r.msgs, err = j.e.skipOptedOut(ctx, job.AccountID, job.ID, r.msgs); err != nil {
		return &jobReady{err: err}
	}
	return r
}

// skipOptedOut fails, with a refund, the queued messages of a campaign page whose contacts
// opted out since the campaign was created, and returns the rest. A message that may have
// reached a network before a crash (unsettled) goes on: it may be paid for already.
func (e *Engine) skipOptedOut(ctx context.Context, accountID, jobID uuid.UUID, msgs []dispatchMsg) ([]dispatchMsg, error) {
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
