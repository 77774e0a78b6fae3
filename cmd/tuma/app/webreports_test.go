package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// The reports page shows what the three report endpoints answer, for the signed-in account
// only: the spend trend over the chosen period, each campaign's results with its cost per
// delivered message, and the results by group; an address with a period the page does not
// have is a 422 that says so.
func TestDashboardReportsInBrowser(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("reports@example.com")
	n.credit(a, "100")
	g := n.group(a, "Nairobi shoppers")
	for _, p := range numbers(12, 300) {
		n.contact(a, g, p, "Amina", "")
	}
	r := n.do("POST", "/campaigns", map[string]any{"name": "December sale", "message": "Habari {first_name}", "group_id": g}, key(a)...)
	if r.Status != 201 {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	done := n.campaignDone(a, r.json(t)["id"].(string))
	// Another tenant's campaign and group are on its own page only.
	b2 := n.register("other-reports@example.com")
	n.credit(b2, "100")
	g2 := n.group(b2, "Mombasa regulars")
	n.contact(b2, g2, "0712999001", "Juma", "")
	r2 := n.do("POST", "/campaigns", map[string]any{"name": "Their own sale", "message": "Hi", "group_id": g2}, key(b2)...)
	if r2.Status != 201 {
		t.Fatalf("the other tenant's campaign = %d %s", r2.Status, r2.Body)
	}
	n.campaignDone(b2, r2.json(t)["id"].(string))

	var perf map[string]any
	for _, row := range n.do("GET", "/reports/campaign-performance", nil, key(a)...).json2(t) {
		perf = row.(map[string]any)
	}
	if perf == nil || perf["total_delivered"] != done["total_delivered"] {
		t.Fatalf("campaign performance = %v; want the campaign's", perf)
	}
	groups := n.do("GET", "/reports/group-performance", nil, key(a)...).json2(t)
	if len(groups) != 1 {
		t.Fatalf("group performance = %v; want one group", groups)
	}
	group := groups[0].(map[string]any)

	b := n.tab(t)
	b.open("/app/login")
	b.fill("Email address", a.Email)
	b.fill("Password", a.Password)
	b.submit("Sign in")
	b.submit("Reports")
	b.waitText("Campaign performance")
	text := b.text()
	for _, want := range []string{
		"Spend, last 30 days",
		"December sale",
		fmt.Sprintf("%.1f%%", perf["delivery_rate"]),
		fmt.Sprintf("KES %.2f", perf["cost_per_delivered"]),
		"Nairobi shoppers",
		fmt.Sprintf("KES %.2f", group["total_spend"]),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the reports page does not show %q:\n%s", want, text)
		}
	}
	for _, other := range []string{"Their own sale", "Mombasa regulars"} {
		if strings.Contains(text, other) {
			t.Errorf("the reports page shows another tenant's %q", other)
		}
	}
	if got := b.eval(`return String(document.querySelectorAll('#trend-title').length && document.querySelectorAll('svg rect.bar').length);`); got != "30" {
		t.Errorf("the 30-day chart has %s bars; want 30", got)
	}
	b.check("reports")

	b.submit("Last 7 days")
	b.waitText("Spend, last 7 days")
	if got := b.eval(`return String(document.querySelectorAll('svg rect.bar').length);`); got != "7" {
		t.Errorf("the 7-day chart has %s bars; want 7", got)
	}
	if got := b.eval(`return document.querySelector('a[aria-current="page"][href="/app/reports?period=7"]') ? 'current' : '';`); got != "current" {
		t.Error("the chosen period is not marked as the current one")
	}
	b.check("reports-7-days")

	p := n.pages(t)
	p.signIn(a)
	for _, bad := range []string{"45", "thirty", "-7"} {
		page := p.get("/app/reports?period=" + bad)
		if page.Status != http.StatusUnprocessableEntity && page.Status != http.StatusBadRequest {
			t.Errorf("period=%s = %d; want a refusal", bad, page.Status)
		}
		if !strings.Contains(page.Body, "choose 7, 30 or 90 days") {
			t.Errorf("period=%s: the page does not say which periods there are:\n%.2000s", bad, page.Body)
		}
	}
}
