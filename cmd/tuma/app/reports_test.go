package app_test

import (
	"testing"
	"time"
)

// Reports agree with the wallet and the spend trend the moment a refund is made: a campaign
// cancelled before its time, fully refunded, adds nothing to its group's spend and is left out
// of the group's average delivery rate, read straight after the cancel (job counters are
// folded from the progress log about once a second; the reports may not wait for that).
func TestGroupPerformanceNetOfCancelledCampaign(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("group-net@example.com")
	n.credit(a, "1000")
	g := n.group(a, "Regulars")
	for _, p := range numbers(4, 500) {
		n.contact(a, g, p, "Amina", "")
	}
	r := n.do("POST", "/campaigns", map[string]any{"name": "Sent", "message": "Habari {first_name}", "group_id": g}, key(a)...)
	if r.Status != 201 {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	if done := n.campaignDone(a, r.json(t)["id"].(string)); done["total_delivered"] != 4.0 {
		t.Fatalf("campaign = %v; want 4 delivered", done)
	}
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for i := 0; i < 5; i++ { // each round: a read straight after a cancel, before a fold could land
		r = n.do("POST", "/campaigns", map[string]any{"name": "Later", "message": "Habari {first_name}", "group_id": g, "scheduled_at": at}, key(a)...)
		if r.Status != 201 {
			t.Fatalf("create scheduled = %d %s", r.Status, r.Body)
		}
		id := r.json(t)["id"].(string)
		if c := n.do("POST", "/campaigns/"+id+"/cancel", nil, key(a)...); c.Status != 200 {
			t.Fatalf("cancel = %d %s", c.Status, c.Body)
		}
		groups := n.do("GET", "/reports/group-performance", nil, key(a)...).json2(t)
		if len(groups) != 1 {
			t.Fatalf("group performance = %v; want one group", groups)
		}
		row := groups[0].(map[string]any)
		// 4 messages of one part at KES 0.50 were sent; the cancelled campaigns cost nothing.
		if row["total_spend"] != 2.0 || row["avg_delivery_rate"] != 100.0 || row["campaign_count"] != float64(i+2) {
			t.Errorf("round %d: group performance = %v; want total_spend 2.00, avg_delivery_rate 100 over the campaign that sent, %d campaigns", i, row, i+2)
		}
		if b := n.balance(a); b != 998 {
			t.Errorf("round %d: balance %v; want 998.00", i, b)
		}
		trend := n.do("GET", "/reports/spend-trend", nil, key(a)...).json2(t)
		if today := trend[len(trend)-1].(map[string]any); today["spend_kes"] != row["total_spend"] {
			t.Errorf("round %d: today's spend %v, the group's %v; want them equal", i, today["spend_kes"], row["total_spend"])
		}
		c := n.do("GET", "/campaigns/"+id, nil, key(a)...).json(t)
		if c["total_failed"] != 4.0 {
			t.Errorf("round %d: cancelled campaign = %v; want its 4 recipients failed at once", i, c)
		}
	}
}
