package app_test

import (
	"testing"
)

// Real sends through the simulated networks: every message's message.sent and
// message.delivered reach the endpoint once each, message.sent first (earlier in its batch
// or in an earlier delivery), in batches of at most batch_size, with the message's data.
func TestWebhookMessageEventsInOrder(t *testing.T) {
	n := startNode(t, hookEnv())
	rc := newReceiver(t, ok204)
	a := n.register("order@example.com")
	n.credit(a, "500")
	r := n.do("POST", "/webhooks", map[string]any{"url": rc.srv.URL, "batch_size": 5,
		"events": []string{"message.sent", "message.delivered", "message.failed"}}, key(a)...)
	if r.Status != 201 {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	const count = 40
	r = n.send(a, map[string]any{"recipients": numbers(count, 100), "message": "Order matters", "reference": "ord-1"})
	if r.Status != 202 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	total := func(ds []delivery) (k int) {
		for _, d := range ds {
			k += len(d.Events)
		}
		return k
	}
	got := rc.waitFor("every message's two events", func(ds []delivery) bool { return total(ds) >= 2*count })

	type seen struct{ sent, final int }
	pos := map[string]*seen{}
	ids := map[string]bool{}
	for i, d := range got {
		if len(d.Events) < 1 || len(d.Events) > 5 {
			t.Errorf("delivery %d has %d events; want 1 to 5", i, len(d.Events))
		}
		for k, e := range d.Events {
			if ids[e.ID] {
				t.Errorf("event %s delivered twice", e.ID)
			}
			ids[e.ID] = true
			m, _ := e.Data["message_id"].(string)
			if m == "" || e.Data["recipient"] == nil || e.Data["status"] == nil || e.Data["job_id"] == nil ||
				e.Data["network"] != "safaricom" || e.Data["reference"] != "ord-1" {
				t.Errorf("event %s %s data %v", e.ID, e.Type, e.Data)
			}
			if pos[m] == nil {
				pos[m] = &seen{-1, -1}
			}
			at := i*1000 + k
			switch e.Type {
			case "message.sent":
				pos[m].sent = at
			case "message.delivered", "message.failed":
				pos[m].final = at
			default:
				t.Errorf("event of type %s, not subscribed", e.Type)
			}
		}
	}
	if len(pos) != count {
		t.Errorf("events of %d messages; want %d", len(pos), count)
	}
	for m, p := range pos {
		if p.sent < 0 || p.final < 0 || p.sent > p.final {
			t.Errorf("message %s: message.sent at %d, its final event at %d; want sent first", m, p.sent, p.final)
		}
	}
}
