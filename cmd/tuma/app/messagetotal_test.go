package app_test

import (
	"fmt"
	"testing"
	"time"
)

// The messages list's total counts the messages it lists: not a scheduled campaign's
// recipients, whose rows are written when it is due, nor, once it is cancelled, the ones
// refunded without ever being written (the account's counters hold both).
func TestMessagesTotalCountsOnlyListedMessages(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("totals@example.com")
	n.credit(a, "100")
	if r := n.send(a, map[string]any{"recipients": []string{"0712000001", "0712000002"}, "message": "hi"}); r.Status != 202 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	n.waitDone(a, 2)
	g := n.group(a, "Later")
	for _, p := range numbers(5, 100) {
		n.contact(a, g, p, "Ann", "")
	}
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r := n.do("POST", "/campaigns", map[string]any{"name": "Later", "message": "Hi {first_name}", "group_id": g, "scheduled_at": at}, key(a)...)
	if r.Status != 201 {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	id := r.json(t)["id"].(string)
	// listed is what the list says of itself: its total, pages and rows.
	listed := func(query string) string {
		l := n.do("GET", "/sms/messages?page_size=100"+query, nil, key(a)...).json(t)
		return fmt.Sprintf("total %v, pages %v, %d listed", l["total"], l["pages"], len(l["data"].([]any)))
	}
	want := "total 2, pages 1, 2 listed"
	if got := listed(""); got != want {
		t.Errorf("with a scheduled campaign: %s; want %s", got, want)
	}
	if got, want := listed("&status=queued"), "total 0, pages 0, 0 listed"; got != want {
		t.Errorf("queued, with a scheduled campaign: %s; want %s", got, want)
	}
	if c := n.do("POST", "/campaigns/"+id+"/cancel", nil, key(a)...); c.Status != 200 {
		t.Fatalf("cancel = %d %s", c.Status, c.Body)
	}
	// Its refund reaches the counters within a progress write: the total stays what is listed.
	deadline := time.Now().Add(10 * time.Second)
	for n.do("GET", "/sms/stats", nil, key(a)...).json(t)["failed"] != 5.0 {
		if time.Now().After(deadline) {
			t.Fatal("the cancelled campaign's recipients never counted as failed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := listed(""); got != want {
		t.Errorf("after cancelling it: %s; want %s", got, want)
	}
	if got, want := listed("&status=failed"), "total 0, pages 0, 0 listed"; got != want {
		t.Errorf("failed, after cancelling it: %s; want %s", got, want)
	}
}
