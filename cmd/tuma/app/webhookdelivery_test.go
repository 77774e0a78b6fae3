package app_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A test event arrives signed as Standard Webhooks says (checked here without Tuma's code),
// with the delivery's id as webhook-id and Tuma's user agent; a roll signs with both secrets
// until the old one expires; a rolled secret with no overlap signs alone.
func TestWebhookSignatureAndRoll(t *testing.T) {
	n := startNode(t, hookEnv())
	rc := newReceiver(t, ok204)
	a := n.register("sign@example.com")
	id, secret := n.hook(a, rc.srv.URL+"/hook", "message.sent")

	r := n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...)
	if r.Status != 202 {
		t.Fatalf("test = %d %s", r.Status, r.Body)
	}
	did := r.json(t)["delivery_id"].(string)
	d := rc.waitFor("the test event", func(ds []delivery) bool { return len(ofID(ds, did)) > 0 })[0]
	if d.Path != "/hook" || !strings.HasPrefix(d.UserAgent, "Tuma-Webhooks/") || len(d.Events) != 1 ||
		d.Events[0].Type != "webhook.test" || !strings.HasPrefix(d.Events[0].ID, "evt_") || d.Events[0].Data["webhook_id"] != id {
		t.Errorf("test delivery: %+v %s", d, d.Body)
	}
	if ts, err := strconv.ParseInt(d.Stamp, 10, 64); err != nil || time.Since(time.Unix(ts, 0)).Abs() > time.Minute {
		t.Errorf("webhook-timestamp %q is not the unix time", d.Stamp)
	}
	if sigs := signatures(d.Signature); len(sigs) != 1 || !verifies(t, secret, d, sigs[0]) {
		t.Errorf("signature %q does not verify with the endpoint's secret", d.Signature)
	}
	log := n.waitDelivery(a, id, did, "succeeded")
	if log["attempts"] != float64(1) || log["last_status_code"] != float64(204) || fmt.Sprint(log["event_types"]) != "[webhook.test]" ||
		log["succeeded_at"] == nil || log["next_attempt_at"] != nil {
		t.Errorf("log: %v", log)
	}

	// Roll with an overlap: both sign, the new first.
	r = n.do("POST", "/webhooks/"+id+"/roll-secret", map[string]any{"expires_in_seconds": 3600}, key(a)...)
	if r.Status != 200 {
		t.Fatalf("roll = %d %s", r.Status, r.Body)
	}
	rolled := r.json(t)["secret"].(string)
	if rolled == secret || !strings.HasPrefix(rolled, "whsec_") {
		t.Fatalf("rolled secret %q", rolled)
	}
	did = n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...).json(t)["delivery_id"].(string)
	d = rc.waitFor("the test event after the roll", func(ds []delivery) bool { return len(ofID(ds, did)) > 0 })[len(rc.deliveries())-1]
	sigs := signatures(d.Signature)
	if len(sigs) != 2 || !verifies(t, rolled, d, sigs[0]) || !verifies(t, secret, d, sigs[1]) || verifies(t, secret, d, sigs[0]) {
		t.Errorf("during the roll the signature %q is not v1,<new> v1,<old>", d.Signature)
	}

	// Roll again, the body empty (a day's overlap by default): the one before signs beside it.
	r = n.do("POST", "/webhooks/"+id+"/roll-secret", nil, key(a)...)
	third := r.json(t)["secret"].(string)
	did = n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...).json(t)["delivery_id"].(string)
	d = ofID(rc.waitFor("the third test", func(ds []delivery) bool { return len(ofID(ds, did)) > 0 }), did)[0]
	if sigs := signatures(d.Signature); len(sigs) != 2 || !verifies(t, third, d, sigs[0]) || !verifies(t, rolled, d, sigs[1]) {
		t.Errorf("second roll: signature %q", d.Signature)
	}

	// The old secret stops signing when its overlap ends.
	r = n.do("POST", "/webhooks/"+id+"/roll-secret", map[string]any{"expires_in_seconds": 1}, key(a)...)
	fourth := r.json(t)["secret"].(string)
	time.Sleep(1100 * time.Millisecond) // the overlap is wall-clock time
	did = n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...).json(t)["delivery_id"].(string)
	d = ofID(rc.waitFor("the test after the overlap", func(ds []delivery) bool { return len(ofID(ds, did)) > 0 }), did)[0]
	if sigs := signatures(d.Signature); len(sigs) != 1 || !verifies(t, fourth, d, sigs[0]) {
		t.Errorf("after the overlap: signature %q; want the new secret's alone", d.Signature)
	}

	// No overlap: the new secret alone.
	r = n.do("POST", "/webhooks/"+id+"/roll-secret", map[string]any{"expires_in_seconds": 0}, key(a)...)
	last := r.json(t)["secret"].(string)
	did = n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...).json(t)["delivery_id"].(string)
	d = ofID(rc.waitFor("the last test", func(ds []delivery) bool { return len(ofID(ds, did)) > 0 }), did)[0]
	if sigs := signatures(d.Signature); len(sigs) != 1 || !verifies(t, last, d, sigs[0]) {
		t.Errorf("roll without overlap: signature %q", d.Signature)
	}
}

// A receiver's 500s are retried on the schedule with the same webhook-id until it succeeds;
// a delivery that runs out of retries is failed, and redelivered by hand it succeeds; a
// succeeded one redelivered arrives again.
func TestWebhookRetriesAndRedeliver(t *testing.T) {
	n := startNode(t, hookEnv())
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n < 2 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	a := n.register("retry@example.com")
	id, _ := n.hook(a, rc.srv.URL, "*")
	did := n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...).json(t)["delivery_id"].(string)
	got := rc.waitFor("three attempts", func(ds []delivery) bool { return len(ofID(ds, did)) >= 3 })
	if len(got) != 3 || got[0].ID != got[2].ID || got[1].At.Sub(got[0].At) < 250*time.Millisecond {
		t.Errorf("attempts: %d, ids %s %s, gap %v; want 3 of one id on the schedule", len(got), got[0].ID, got[2].ID, got[1].At.Sub(got[0].At))
	}
	log := n.waitDelivery(a, id, did, "succeeded")
	if log["attempts"] != float64(3) || log["last_status_code"] != float64(200) {
		t.Errorf("log: %v", log)
	}

	// Redeliver the succeeded one: it comes again, same id.
	r := n.do("POST", "/webhooks/"+id+"/deliveries/"+did+"/retry", nil, key(a)...)
	if r.Status != 202 || r.json(t)["delivery_id"] != did {
		t.Fatalf("retry = %d %s", r.Status, r.Body)
	}
	rc.waitFor("the redelivery", func(ds []delivery) bool { return len(ofID(ds, did)) == 4 })
	n.waitDelivery(a, id, did, "succeeded")

	// Fail for good: four attempts (the schedule has three retries), then failed.
	rc.setAnswer(func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusBadGateway) })
	did = n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...).json(t)["delivery_id"].(string)
	log = n.waitDelivery(a, id, did, "failed")
	if log["attempts"] != float64(4) || log["last_status_code"] != float64(502) || log["last_error"] == nil || log["next_attempt_at"] != nil {
		t.Errorf("failed delivery: %v", log)
	}
	if failed := n.hookDeliveries(a, id, "&status=failed"); len(failed) != 1 || failed[0]["id"] != did {
		t.Errorf("status=failed lists %v", failed)
	}
	rc.setAnswer(ok204)
	if r := n.do("POST", "/webhooks/"+id+"/deliveries/"+did+"/retry", nil, key(a)...); r.Status != 202 {
		t.Fatalf("retry of the failed = %d %s", r.Status, r.Body)
	}
	log = n.waitDelivery(a, id, did, "succeeded")
	if log["attempts"] != float64(5) || len(ofID(rc.deliveries(), did)) != 5 {
		t.Errorf("redelivered failed delivery: %v", log)
	}
	n.do("POST", "/webhooks/"+id+"/deliveries/0190a0a0-0000-7000-8000-000000000000/retry", nil, key(a)...).problem(t, 404, "not_found")

	// The log pages by cursor, newest first, each delivery once.
	page := n.do("GET", "/webhooks/"+id+"/deliveries?page_size=1", nil, key(a)...).json(t)
	seen := map[string]bool{}
	for i := 0; ; i++ {
		for _, d := range page["data"].([]any) {
			seen[d.(map[string]any)["id"].(string)] = true
		}
		c, _ := page["next_cursor"].(string)
		if c == "" || i > 5 {
			break
		}
		page = n.do("GET", "/webhooks/"+id+"/deliveries?page_size=1&cursor="+c, nil, key(a)...).json(t)
	}
	if len(seen) != 2 {
		t.Errorf("paging by cursor saw %d deliveries; want 2", len(seen))
	}
}

// 410 disables the endpoint at once; 429 with Retry-After waits that long; a redirect is an
// answer, not followed; a connection closed without an answer, and a receiver that does not
// answer within 10 s, are retried.
func TestWebhookReceiverAnswers(t *testing.T) {
	n := startNode(t, hookEnv())
	a := n.register("answers@example.com")

	t.Run("410 disables", func(t *testing.T) {
		rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusGone) })
		id, _ := n.hook(a, rc.srv.URL, "*")
		did := n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...).json(t)["delivery_id"].(string)
		rc.waitFor("the attempt", func(ds []delivery) bool { return len(ds) == 1 })
		deadline := time.Now().Add(10 * time.Second)
		var w map[string]any
		for w = n.do("GET", "/webhooks/"+id, nil, key(a)...).json(t); w["enabled"] == true && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			w = n.do("GET", "/webhooks/"+id, nil, key(a)...).json(t)
		}
		if w["enabled"] != false || !strings.Contains(fmt.Sprint(w["disabled_reason"]), "410") {
			t.Fatalf("after a 410: %v", w)
		}
		if notes := string(n.do("GET", "/notifications", nil, key(a)...).Body); !strings.Contains(notes, `"type":"webhook_disabled"`) {
			t.Errorf("the account was not notified: %s", notes)
		}
		n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...)
		time.Sleep(1500 * time.Millisecond) // proving an absence: nothing may arrive while disabled
		if got := rc.deliveries(); len(got) != 1 {
			t.Errorf("a disabled endpoint got %d requests; want only the first", len(got))
		}
		// Enabled again, what waited goes.
		rc.setAnswer(ok204)
		n.do("PATCH", "/webhooks/"+id, map[string]any{"enabled": true}, key(a)...)
		rc.waitFor("the waiting deliveries", func(ds []delivery) bool { return len(ds) >= 3 })
		n.waitDelivery(a, id, did, "succeeded")
	})

	t.Run("429 Retry-After", func(t *testing.T) {
		rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, n int) {
			if n == 0 {
				w.Header().Set("Retry-After", "3")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})
		id, _ := n.hook(a, rc.srv.URL, "*")
		did := n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...).json(t)["delivery_id"].(string)
		got := rc.waitFor("the retry", func(ds []delivery) bool { return len(ds) == 2 })
		if gap := got[1].At.Sub(got[0].At); gap < 2900*time.Millisecond {
			t.Errorf("retried %v after a 429 with Retry-After: 3", gap)
		}
		n.waitDelivery(a, id, did, "succeeded")
	})

	t.Run("redirect not followed", func(t *testing.T) {
		rc := newReceiver(t, nil)
		rc.setAnswer(func(w http.ResponseWriter, r *http.Request, n int) {
			if r.URL.Path == "/moved" {
				t.Errorf("the redirect was followed")
				return
			}
			if n == 0 {
				http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})
		id, _ := n.hook(a, rc.srv.URL+"/hook", "*")
		did := n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...).json(t)["delivery_id"].(string)
		log := n.waitDelivery(a, id, did, "succeeded")
		got := rc.deliveries()
		if len(got) != 2 || got[1].Path != "/hook" || log["attempts"] != float64(2) {
			t.Errorf("after a 307: %d requests, log %v", len(got), log)
		}
	})

	t.Run("connection closed", func(t *testing.T) {
		rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, n int) {
			if n == 0 {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close() // no answer at all
				}
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})
		id, _ := n.hook(a, rc.srv.URL, "*")
		did := n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...).json(t)["delivery_id"].(string)
		log := n.waitDelivery(a, id, did, "succeeded")
		if got := ofID(rc.deliveries(), did); len(got) != 2 || log["attempts"] != float64(2) {
			t.Errorf("after a closed connection: %d requests, log %v", len(got), log)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 0 {
				select { // hold the first attempt past Tuma's 10 s
				case <-r.Context().Done():
				case <-time.After(15 * time.Second):
				}
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})
		id, _ := n.hook(a, rc.srv.URL, "*")
		did := n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...).json(t)["delivery_id"].(string)
		got := rc.waitFor("the retry after the timeout", func(ds []delivery) bool { return len(ds) == 2 })
		if gap := got[1].At.Sub(got[0].At); gap < 9*time.Second || gap > 14*time.Second {
			t.Errorf("retried %v after a receiver that did not answer; want after the 10 s timeout", gap)
		}
		log := n.waitDelivery(a, id, did, "succeeded")
		if log["attempts"] != float64(2) {
			t.Errorf("log: %v", log)
		}
	})
}

// An endpoint whose every delivery fails for TUMA_WEBHOOK_DISABLE_AFTER is disabled, its
// deliveries stop and its account is told.
func TestWebhookFailingEndpointIsDisabled(t *testing.T) {
	n := startNode(t, hookEnv("TUMA_WEBHOOK_DISABLE_AFTER", "1s", "TUMA_WEBHOOK_RETRY_SCHEDULE", "300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms"))
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusInternalServerError) })
	a := n.register("failing@example.com")
	id, _ := n.hook(a, rc.srv.URL, "*")
	n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...)
	deadline := time.Now().Add(20 * time.Second)
	var ep map[string]any
	for {
		ep = n.do("GET", "/webhooks/"+id, nil, key(a)...).json(t)
		if ep["enabled"] == false || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ep["enabled"] != false || !strings.Contains(fmt.Sprint(ep["disabled_reason"]), "failed for 1s") {
		t.Fatalf("endpoint after failing past the limit: %v; want disabled, saying why", ep)
	}
	attempts := len(rc.deliveries())
	if attempts < 2 {
		t.Errorf("%d attempts before it was disabled; want a retry at least", attempts)
	}
	if got := n.sqlInt(`SELECT count(*) FROM notifications WHERE account_id = $1 AND type = 'webhook_disabled'`, a.ID); got != 1 {
		t.Errorf("%d webhook_disabled notifications; want 1", got)
	}
	// Disabled: nothing more is attempted, even a new test event.
	n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...)
	settle := time.Now().Add(time.Second)
	for time.Now().Before(settle) {
		if len(rc.deliveries()) != attempts {
			t.Fatalf("an attempt reached a disabled endpoint")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
