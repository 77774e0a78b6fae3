// A tenant's campaigns: how it prices a campaign to a group, contact by contact with its merge
// tags rendered, and how it cancels one: it marks it cancelled in the store, tells its job if
// one runs, and settles at once what no job holds.

package actors

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

type (
	campaignCmd struct {
		req CampaignRequest
		at  time.Time
	}
	cancelCmd    struct{ campaign uuid.UUID }
	cancelMarked struct {
		job   uuid.UUID
		err   error
		reply *actor.PID
	}
	// remainderCancelled: what a cancelled job still held is failed and refunded (or not: err).
	remainderCancelled struct {
		snaps []persistence.WalletSnapshot
		err   error
		reply *actor.PID // the caller to answer, when it waits
	}
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
	text := RenderMergeTags(j.Message, m.FirstName, m.LastName) + j.OptOut
	if v.prefixed {
		text = j.SharedPrefix + text
	}
	return text
}

// campaign prices a campaign and hands it to the writer, as send does a send.
func (t *tenantActor) campaign(ctx actor.Context, cmd *campaignCmd, reply *actor.PID) {
	req := cmd.req
	c := req.Campaign
	audience, suppressed := t.unsuppressedMembers(req.Audience)
	if len(audience) == 0 && suppressed > 0 {
		ctx.Send(reply, ErrAllSuppressed)
		return
	}
	job, pricing, lifetime := t.newJob(req.Sender, len(audience))
	// Its messages' source is the creating call's, as a send's is (CONTRACT §1).
	source := req.Source
	if source == "" {
		source = "api"
	}
	job.CampaignID, job.Campaign, job.Source, job.Message, job.Idempotency = &c.ID, &c, source, c.Template, req.Idempotency
	job.Reference, job.Suppressed = req.Reference, suppressed
	if req.Promotional {
		job.Promotional, job.OptOut = true, t.optOutSuffix(c.Template)
	}
	vars := variantsOf(job)
	for _, m := range audience {
		job.Units += int64(carriers.Segment(campaignText(job, vars[m.Network], m)).Parts)
		job.NetworkCounts[m.Network]++
	}
	job.CostCents = job.Units * pricing.PriceCents
	if !t.afford(ctx, reply, &job, pricing, lifetime) {
		return
	}
	job.Pending = persistence.EncodeAudience(audience)
	t.write(ctx, &acceptReq{job: job, reply: reply, start: cmd.at, variant: vars})
}

// cancel marks the campaign cancelled in the store, then stops its job.
func (t *tenantActor) cancel(ctx actor.Context, cmd *cancelCmd, reply *actor.PID) {
	self, root := ctx.Self(), t.e.root
	t.e.goIO(10*time.Second, func(c context.Context) {
		job, err := t.e.store.CancelCampaign(c, t.id, cmd.campaign, time.Now())
		root.Send(self, &cancelMarked{job: job, err: err, reply: reply})
	})
}

func (t *tenantActor) cancelMarked(ctx actor.Context, msg *cancelMarked) {
	if msg.err != nil {
		ctx.Send(msg.reply, msg.err)
		return
	}
	// Whoever starts this job from now on starts it cancelled (see startJobs).
	t.cancelled[msg.job] = true
	// A job actor this tenant spawned gets the word even before it has started (its mailbox
	// keeps it); none other can hold the job's messages.
	if pid, ok := t.live[msg.job]; ok {
		ctx.Send(pid, &cancelJob{})
		ctx.Send(msg.reply, &struct{}{})
		return
	}
	// No job actor holds any of its messages: drop it from the queue and settle it now.
	for i, js := range t.waiting {
		if js.id == msg.job {
			t.waiting = append(t.waiting[:i], t.waiting[i+1:]...)
			t.leftQueue(js)
			break
		}
	}
	self, root, job := ctx.Self(), t.e.root, msg.job
	t.e.goIO(5*time.Minute, func(c context.Context) {
		snaps, err := t.e.store.CancelRemainder(c, job)
		root.Send(self, &remainderCancelled{snaps: snaps, err: err, reply: msg.reply})
	})
}

func (t *tenantActor) remainderCancelled(ctx actor.Context, msg *remainderCancelled) {
	for _, w := range msg.snaps {
		t.adopt(w)
	}
	if msg.err != nil {
		// The campaign is cancelled durably; its job, resumed later, settles the rest.
		t.e.log.Error("cancel campaign remainder", slog.String("account_id", t.id.String()), slog.Any("error", msg.err))
	}
	ctx.Send(msg.reply, &struct{}{})
}
