package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/cmd/tuma/app"
)

// nairobi makes a clock read h:m in Nairobi (UTC+3) on a fixed day.
func nairobi(h, m int) *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 11, 26, h-3, m, 0, 0, time.UTC).UnixNano())
	return c
}

// quietEnv is fastSims with tenants looking at their quiet hours often: the tests move an
// injected clock, which no timer set for the hours' real edge would notice.
func quietEnv(kv ...string) map[string]string {
	return withEnv(fastSims, append([]string{"TUMA_QUIET_HOURS_CHECK", "50ms"}, kv...)...)
}

// statusCount counts an account's messages of a job in a status.
func (n *node) statusCount(job, status string) int64 {
	n.t.Helper()
	return n.sqlInt(`SELECT count(*) FROM messages WHERE job_id = $1 AND status = $2`, job, status)
}

// waitStatus polls until n messages of a job have the status.
func (n *node) waitStatus(job, status string, want int64) {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := n.statusCount(job, status)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("job %s: %d messages %s; want %d", job, got, status, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sendJob sends and returns the job's id, failing unless 202 with the given cost (any, when
// negative).
func (n *node) sendJob(a account, body map[string]any, cost float64) string {
	n.t.Helper()
	r := n.send(a, body)
	if r.Status != 202 || cost >= 0 && r.json(n.t)["cost_kes"] != cost {
		n.t.Fatalf("send %v = %d %s; want 202 costing KES %.2f", body, r.Status, r.Body, cost)
	}
	return r.json(n.t)["job_id"].(string)
}

// Promotional text carries the account's opt-out instruction, priced (quote included) unless
// it already says it; inside quiet hours promotional messages wait while transactional ones
// go, through a restart, and go once the clock leaves the window.
func TestPromotionalMessagesWaitOutQuietHours(t *testing.T) {
	clk := nairobi(21, 0)
	env := quietEnv()
	n := startNode(t, env, app.WithClock(clk.now))
	env["TUMA_DATABASE_URL"] = n.dbURL
	a := n.register("promo@example.com")
	n.approveDefaultSender(a, "ACME", "all") // no shared-sender prefix
	n.credit(a, "100")

	me := n.do("GET", "/auth/me", nil, key(a)...).json(t)
	if me["opt_out_text"] != "STOP*456*9*5#" || fmt.Sprint(me["quiet_hours"]) != "map[end:08:00 start:20:00]" {
		t.Fatalf("defaults = %v %v; want STOP*456*9*5# and 20:00–08:00", me["opt_out_text"], me["quiet_hours"])
	}
	long := strings.Repeat("a", 150) // 150 + " STOP*456*9*5#" = 164: two parts
	for _, c := range []struct {
		body        map[string]any
		asSent      string
		parts, cost float64
	}{
		{map[string]any{"recipients": numbers(1, 1), "message": "Sale", "category": "promotional"}, "Sale STOP*456*9*5#", 1, 0.5},
		{map[string]any{"recipients": numbers(1, 1), "message": "Sale. stop*456*9*5# to opt out", "category": "promotional"},
			"Sale. stop*456*9*5# to opt out", 1, 0.5},
		{map[string]any{"recipients": numbers(1, 1), "message": long, "category": "promotional"}, long + " STOP*456*9*5#", 2, 1},
		{map[string]any{"recipients": numbers(1, 1), "message": long}, long, 1, 0.5},
		{map[string]any{"recipients": numbers(1, 1), "message": long, "category": "transactional"}, long, 1, 0.5},
	} {
		q := n.do("POST", "/sms/quote", c.body, key(a)...)
		got := q.json(t)
		if q.Status != 200 || got["message_as_sent"] != c.asSent || got["parts"] != c.parts || got["cost_kes"] != c.cost {
			t.Errorf("quote %v = %d %v; want %q in %v parts, KES %v", c.body["category"], q.Status, got, c.asSent, c.parts, c.cost)
		}
	}
	for _, bad := range []any{"marketing", "", "PROMOTIONAL", 1} {
		r := n.send(a, map[string]any{"recipients": numbers(1, 1), "message": "x", "category": bad})
		if r.Status != 422 || !strings.Contains(string(r.Body), `"category"`) {
			t.Errorf("category %v = %d %s; want 422 naming category", bad, r.Status, r.Body)
		}
	}

	promo := n.sendJob(a, map[string]any{"recipients": numbers(3, 10), "message": long, "category": "promotional"}, 3)
	plain := n.sendJob(a, map[string]any{"recipients": numbers(1, 20), "message": "Your code is 1234"}, 0.5)
	n.waitStatus(plain, "delivered", 1)
	if q := n.statusCount(promo, "queued"); q != 3 {
		t.Fatalf("%d promotional messages queued at 21:00 after a transactional one went; want 3", q)
	}

	// A restart inside the window leaves them waiting.
	n.stop()
	clk.advance(6 * time.Hour) // 03:00
	n2 := startNode(t, env, app.WithClock(clk.now))
	plain2 := n2.sendJob(a, map[string]any{"recipients": numbers(1, 21), "message": "Your code is 5678"}, 0.5)
	n2.waitStatus(plain2, "delivered", 1)
	if q := n2.statusCount(promo, "queued"); q != 3 {
		t.Fatalf("%d promotional messages queued at 03:00 after a restart; want 3", q)
	}

	clk.advance(5*time.Hour + time.Minute) // 08:01
	n2.waitStatus(promo, "delivered", 3)
	list := n2.do("GET", "/sms/messages?page_size=100", nil, key(a)...).json(t)["data"].([]any)
	seen := 0
	for _, m := range list {
		if m := m.(map[string]any); m["job_id"] == promo {
			seen++
			if m["message"] != long+" STOP*456*9*5#" || m["parts"] != 2.0 {
				t.Errorf("promotional message listed as %q in %v parts", m["message"], m["parts"])
			}
		}
	}
	if seen != 3 {
		t.Errorf("%d promotional messages listed; want 3", seen)
	}
}

// A promotional campaign scheduled into quiet hours starts when they end; a transactional one
// scheduled at the same time starts on time. The campaign says its category.
func TestPromotionalCampaignScheduledIntoQuietHours(t *testing.T) {
	clk := nairobi(19, 0)
	n := startNode(t, quietEnv(), app.WithClock(clk.now))
	a := n.register("promo-campaign@example.com")
	n.approveDefaultSender(a, "ACME", "all")
	n.credit(a, "100")
	g := n.group(a, "Fans")
	for i, p := range numbers(3, 300) {
		n.contact(a, g, p, "Fan", string(rune('a'+i)))
	}
	at := time.Date(2026, 11, 26, 23-3, 0, 0, 0, time.UTC).Format(time.RFC3339) // 23:00 Nairobi
	create := func(name, category string) string {
		body := map[string]any{"name": name, "message": "Hi {first_name}", "group_id": g, "scheduled_at": at}
		if category != "" {
			body["category"] = category
		}
		r := n.do("POST", "/campaigns", body, key(a)...)
		want := category
		if want == "" {
			want = "transactional"
		}
		if r.Status != 201 || r.json(t)["category"] != want || r.json(t)["status"] != "scheduled" {
			t.Fatalf("create %s campaign = %d %s", want, r.Status, r.Body)
		}
		return r.json(t)["id"].(string)
	}
	promo, plain := create("Promo", "promotional"), create("Notice", "")
	if r := n.do("POST", "/campaigns", map[string]any{"name": "x", "message": "x", "group_id": g, "category": "ads"}, key(a)...); r.Status != 422 {
		t.Errorf("campaign category ads = %d; want 422", r.Status)
	}

	clk.advance(4*time.Hour + 30*time.Minute) // 23:30: both due, one in its quiet hours
	if done := n.campaignDone(a, plain); done["total_delivered"] != 3.0 {
		t.Fatalf("transactional campaign = %v", done)
	}
	if c := n.do("GET", "/campaigns/"+promo, nil, key(a)...).json(t); c["status"] != "scheduled" || c["category"] != "promotional" {
		t.Fatalf("promotional campaign at 23:30 = %v; want still scheduled", c)
	}
	clk.advance(8*time.Hour + 31*time.Minute) // 08:01
	done := n.campaignDone(a, promo)
	if done["total_delivered"] != 3.0 {
		t.Fatalf("promotional campaign after 08:00 = %v", done)
	}
	if got := n.sqlInt(`SELECT count(*) FROM messages WHERE campaign_id = $1 AND body = 'Hi Fan STOP*456*9*5#'`, promo); got != 3 {
		t.Errorf("%d campaign messages carry the opt-out text; want 3", got)
	}
}

// The profile sets the opt-out text and the quiet hours (or none); bad values are 422 and
// change nothing; turning the hours off releases what waited at once.
func TestQuietHoursAndOptOutTextInTheProfile(t *testing.T) {
	clk := nairobi(22, 0)
	n := startNode(t, quietEnv(), app.WithClock(clk.now))
	a := n.register("promo-profile@example.com")
	n.approveDefaultSender(a, "ACME", "all")
	n.credit(a, "100")
	for _, bad := range []map[string]any{
		{"quiet_hours": map[string]any{"start": "25:00", "end": "08:00"}},
		{"quiet_hours": map[string]any{"start": "20:00", "end": "20:00"}},
		{"quiet_hours": map[string]any{"start": "20:00"}},
		{"quiet_hours": "20:00-08:00"},
		{"quiet_hours": map[string]any{"start": "8:00", "end": "20:00"}},
		{"opt_out_text": ""},
		{"opt_out_text": strings.Repeat("x", 61)},
	} {
		if r := n.do("PATCH", "/auth/profile", bad, key(a)...); r.Status != 422 {
			t.Errorf("profile %v = %d %s; want 422", bad, r.Status, r.Body)
		}
	}
	if me := n.do("GET", "/auth/me", nil, key(a)...).json(t); fmt.Sprint(me["quiet_hours"]) != "map[end:08:00 start:20:00]" {
		t.Fatalf("quiet hours after refused changes = %v", me["quiet_hours"])
	}
	r := n.do("PATCH", "/auth/profile", map[string]any{"opt_out_text": "Reply STOP to 22456", "quiet_hours": map[string]any{"start": "21:30", "end": "06:00"}}, key(a)...)
	if got := r.json(t); r.Status != 200 || got["opt_out_text"] != "Reply STOP to 22456" || fmt.Sprint(got["quiet_hours"]) != "map[end:06:00 start:21:30]" {
		t.Fatalf("profile update = %d %s", r.Status, r.Body)
	}
	promo := n.sendJob(a, map[string]any{"recipients": numbers(2, 40), "message": "Deals", "category": "promotional"}, 1)
	plain := n.sendJob(a, map[string]any{"recipients": numbers(1, 50), "message": "Receipt"}, 0.5)
	n.waitStatus(plain, "delivered", 1)
	if q := n.statusCount(promo, "queued"); q != 2 {
		t.Fatalf("%d promotional messages queued at 22:00; want 2", q)
	}
	if r := n.do("PATCH", "/auth/profile", map[string]any{"quiet_hours": nil}, key(a)...); r.Status != 200 || r.json(t)["quiet_hours"] != nil {
		t.Fatalf("quiet hours off = %d %s", r.Status, r.Body)
	}
	n.waitStatus(promo, "delivered", 2)
	if got := n.sqlInt(`SELECT count(*) FROM jobs WHERE id = $1 AND opt_out = ' Reply STOP to 22456'`, promo); got != 1 {
		t.Errorf("job's opt-out suffix is not the account's text")
	}
}

// Quiet hours that begin while a promotional send is going stop it: what no network was
// handed waits, and goes once, when they end.
func TestQuietHoursBeginningMidSendHoldTheRest(t *testing.T) {
	clk := nairobi(19, 59)
	n := startNode(t, quietEnv("TUMA_LINK_TPS", "safaricom=100"), app.WithClock(clk.now))
	a := n.register("promo-midway@example.com")
	n.approveDefaultSender(a, "ACME", "all")
	n.credit(a, "1000")
	const total = 1000
	promo := n.sendJob(a, map[string]any{"recipients": numbers(total, 1000), "message": "Flash sale", "category": "promotional"}, 500)
	deadline := time.Now().Add(30 * time.Second)
	for n.statusCount(promo, "delivered") < 50 {
		if time.Now().After(deadline) {
			t.Fatal("the promotional send did not start before 20:00")
		}
		time.Sleep(10 * time.Millisecond)
	}
	clk.advance(time.Minute) // 20:00
	// A transactional message going through proves the links took nothing more of the
	// promotional send; what they had taken before 20:00 settles meanwhile. A second one
	// proves nothing moved since.
	plain := n.sendJob(a, map[string]any{"recipients": numbers(1, 5000), "message": "Receipt"}, -1)
	n.waitStatus(plain, "delivered", 1)
	n.waitStatus(promo, "sent", 0)
	went := n.statusCount(promo, "delivered")
	plain = n.sendJob(a, map[string]any{"recipients": numbers(1, 5001), "message": "Receipt"}, -1)
	n.waitStatus(plain, "delivered", 1)
	if now, queued := n.statusCount(promo, "delivered"), n.statusCount(promo, "queued"); now != went || went == total || queued != total-went {
		t.Fatalf("promotional messages: %d delivered at the hold, %d (and %d queued) after a transactional send (of %d)",
			went, now, queued, total)
	}
	clk.advance(12 * time.Hour) // 08:00
	n.waitStatus(promo, "delivered", total)
	if got := n.sqlInt(`SELECT count(*) FROM messages WHERE job_id = $1`, promo); got != total {
		t.Errorf("%d message rows; want %d", got, total)
	}
}
