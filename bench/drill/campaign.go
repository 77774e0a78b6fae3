// The crash drill's campaign: a group imported, a campaign to it dispatching while the node is
// killed again and again, and afterwards every contact sent to exactly once, refunded once.

package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"strings"
	"time"
)

// crashCampaign is the campaign the crash drill kills the node under.
type crashCampaign struct {
	t        *tenant
	id       string
	contacts int
	kills    int
}

// startCampaign imports contacts into a new group of a tenant of its own and starts a
// campaign to them, with a merge tag.
func startCampaign(ctx context.Context, r *runner, c *client, contacts int) (*crashCampaign, error) {
	ts, err := r.tenants(ctx, c, "crash-campaign", 1, contacts) // KES 1 a contact covers 0.50 a part
	if err != nil {
		return nil, err
	}
	t := ts[0]
	g := c.do(ctx, "POST", "/contacts/groups", map[string]string{"name": "Drill"}, t.apiKey()...)
	if g.status != 201 {
		return nil, fmt.Errorf("create group: %d %s", g.status, g.body)
	}
	var group struct{ ID string }
	if err := json.Unmarshal(g.body, &group); err != nil {
		return nil, err
	}
	var csv strings.Builder
	csv.WriteString("phone,first_name\n")
	for i := range contacts {
		fmt.Fprintf(&csv, "07%02d%06d,Drill%d\n", 10+i/1_000_000%10, i%1_000_000, i%7)
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, _ := w.CreateFormFile("file", "contacts.csv")
	part.Write([]byte(csv.String()))
	w.WriteField("group_id", group.ID)
	w.Close()
	imp := c.do(ctx, "POST", "/contacts/import", body.Bytes(), append(t.apiKey(), "Content-Type", w.FormDataContentType())...)
	if imp.status != 200 {
		return nil, fmt.Errorf("import contacts: %d %s", imp.status, imp.body)
	}
	cr := c.do(ctx, "POST", "/campaigns", map[string]string{"name": "Crash", "message": "Habari {first_name}, drill campaign",
		"group_id": group.ID}, t.apiKey()...)
	if cr.status != 201 {
		return nil, fmt.Errorf("create campaign: %d %s", cr.status, cr.body)
	}
	var camp struct{ ID string }
	if err := json.Unmarshal(cr.body, &camp); err != nil {
		return nil, err
	}
	return &crashCampaign{t: t, id: camp.ID, contacts: contacts}, nil
}

// campaignCrash kills a node of its own with kill -9 at random moments while a campaign
// dispatches, restarts it each time, and then checks the campaign.
func campaignCrash(ctx context.Context, r *runner, rec *recorder) error {
	n, err := r.node("crash-campaign", nil)
	if err != nil {
		return err
	}
	if _, err := n.start(ctx); err != nil {
		return err
	}
	camp, err := startCampaign(ctx, r, n.c, r.sizes.CrashCampaign)
	if err != nil {
		return err
	}
	if err := camp.waitSending(ctx, n.c, 30*time.Second); err != nil {
		return err
	}
	for k := range r.sizes.CrashKills {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration((0.2 + 1.3*r.float()) * float64(time.Second))):
		}
		if err := n.kill(); err != nil {
			return err
		}
		st, err := n.start(ctx)
		if err != nil {
			return fmt.Errorf("campaign restart %d: %w", k+1, err)
		}
		camp.kills++
		rec.logf("campaign: kill -9 #%d, then /healthz %s, /readyz %s", k+1, secs(st.healthz), secs(st.readyz))
	}
	return camp.check(ctx, n, rec)
}

// check waits for the node to settle, then reads the campaign back: finished, every contact
// sent to once, its counters equal to its messages, charged once and refunded exactly its
// failed messages.
func (cc *crashCampaign) check(ctx context.Context, n *node, rec *recorder) error {
	db, err := n.db(ctx)
	if err != nil {
		return err
	}
	defer db.Close(context.WithoutCancel(ctx))
	if _, left, err := settle(ctx, db, defaultSettling()); err != nil {
		rec.fail("campaign exactly once", fmt.Sprintf("not settled: %s (%d open jobs, %d queued, %d sent)", err, left.open, left.queued, left.sent))
		return nil
	}
	var status string
	var total, rows, distinct, final, delivered, failed, failedCost, refunded, refundEntries, debitEntries int64
	err = db.QueryRow(ctx, `SELECT c.status, c.total_recipients,
			(SELECT count(*) FROM messages m WHERE m.campaign_id = c.id),
			(SELECT count(DISTINCT recipient) FROM messages m WHERE m.campaign_id = c.id),
			(SELECT count(*) FROM messages m WHERE m.campaign_id = c.id AND m.status IN ('delivered', 'failed')),
			j.delivered_count, j.failed_count,
			(SELECT coalesce(sum(cost_cents), 0) FROM messages m WHERE m.campaign_id = c.id AND m.status = 'failed'),
			j.refunded_cents,
			(SELECT coalesce(sum(amount_cents), 0) FROM wallet_transactions w WHERE w.job_id = j.id AND w.type = 'refund'),
			(SELECT count(*) FROM wallet_transactions w WHERE w.job_id = j.id AND w.type = 'debit')
		FROM campaigns c JOIN jobs j ON j.id = c.job_id WHERE c.id = $1`, cc.id).
		Scan(&status, &total, &rows, &distinct, &final, &delivered, &failed, &failedCost, &refunded, &refundEntries, &debitEntries)
	if err != nil {
		return fmt.Errorf("read the campaign: %w", err)
	}
	once := (status == "completed" || status == "failed") && total == int64(cc.contacts) && rows == total && distinct == total &&
		final == total && delivered+failed == total
	rec.value("campaign exactly once", float64(rows), "messages", once,
		fmt.Sprintf("campaign to %s contacts %s after %d kills: %s messages to %s numbers, %s final; counted %s delivered + %s failed",
			count(int64(cc.contacts)), status, cc.kills, count(rows), count(distinct), count(final), count(delivered), count(failed)),
		"one final message per contact, counted once", "a contact was skipped or sent to twice across the kills")
	money := debitEntries == 1 && refunded == failedCost && refundEntries == failedCost
	rec.value("campaign charged once, refunded once", float64(refundEntries-failedCost), "cents", money,
		fmt.Sprintf("%d debit; failed messages cost %s, refunded %s (ledger %s)", debitEntries, kes(failedCost), kes(refunded), kes(refundEntries)),
		"1 debit, refunds = failed cost", "a campaign's money moved twice or not at all")
	return nil
}

// waitSending waits until the campaign's job is expanded (its dispatch under way).
func (cc *crashCampaign) waitSending(ctx context.Context, c *client, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		r := c.do(ctx, "GET", "/campaigns/"+cc.id, nil, cc.t.apiKey()...)
		var v struct{ Status string }
		if r.status == 200 && json.Unmarshal(r.body, &v) == nil && v.Status != "queued" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("campaign %s did not start within %s", cc.id, secs(limit))
}
