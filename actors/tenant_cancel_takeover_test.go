package actors_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// Node B takes an account over while node A's marked submits of a campaign are still on their
// way, and the campaign is cancelled on B while its job waits for a dispatch slot there (so
// B settles the remainder itself): the messages A then submits are not failed CANCELLED and
// refunded; they are sent, and charged.
func TestCancelAfterTakeoverLeavesTheOldNodesSubmits(t *testing.T) {
	w := newWorld(t, paced("node-a", 100), inFlightNetworks)
	acct := w.account(10000_00)
	ctx := context.Background()
	// A long plain send first: on B it takes the only dispatch slot, so the campaign's job waits.
	if _, err := w.send(acct, recipients(3000, carriers.NetworkUnknown, 5), "first"); err != nil {
		t.Fatal(err)
	}
	c := persistence.NewCampaign{ID: persistence.NewID(), Name: "C", Template: "Hi {first_name}", GroupID: uuid.New(), GroupName: "All"}
	var audience []persistence.Member
	for _, r := range recipients(400, carriers.NetworkUnknown, 11) {
		audience = append(audience, persistence.Member{Recipient: r, FirstName: "Ann"})
	}
	res, err := w.eng.CreateCampaign(ctx, actors.CampaignRequest{AccountID: acct, Campaign: c, Audience: audience})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "node A to have campaign submits marked", func() (bool, string) {
		n := w.sqlInt(`SELECT count(*) FROM submit_marks s, unnest(s.messages) AS u(id) JOIN messages m ON m.id = u.id
			WHERE m.job_id = $1 AND m.status = 'queued'`, res.JobID)
		return n >= 20, fmt.Sprint(n)
	})
	opts := paced("node-b", 1000)
	opts.TakeoverSettle = 4 * time.Second
	opts.MaxDispatchingJob = 1
	b, _ := w.secondNode(opts)
	if err := b.CancelCampaign(ctx, acct, c.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "node A's marked submits to have their outcomes", func() (bool, string) {
		n := w.sqlInt(`SELECT count(*) FROM submit_marks s, unnest(s.messages) AS u(id) JOIN messages m ON m.id = u.id
			WHERE m.job_id = $1`, res.JobID)
		return n == 0, fmt.Sprintf("%d messages under marks", n)
	})
	sentButCancelled := w.sqlInt(`SELECT count(DISTINCT m.id) FROM messages m JOIN provider_refs r ON r.message_id = m.id
		WHERE m.job_id = $1 AND m.status = 'failed' AND m.provider_status = 'CANCELLED'`, res.JobID)
	if sentButCancelled > 0 {
		t.Errorf("%d messages the network took were failed CANCELLED and refunded; want 0", sentButCancelled)
	}
}
