package app_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Endpoints are created (with a secret shown once), listed, read, changed and deleted as
// CONTRACT §14 says, over API key and bearer token alike.
func TestWebhookEndpoints(t *testing.T) {
	n := startNode(t, hookEnv())
	a := n.register("hooks@example.com")
	access, _ := n.login(a)

	r := n.do("POST", "/webhooks", map[string]any{"url": "https://hooks.example.com/tuma", "events": []string{"message.sent", "message.delivered"},
		"description": "orders", "batch_size": 50}, key(a)...)
	if r.Status != 201 {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	w := r.json(t)
	id := w["id"].(string)
	if w["url"] != "https://hooks.example.com/tuma" || w["description"] != "orders" || w["batch_size"] != float64(50) ||
		w["enabled"] != true || w["disabled_reason"] != nil || w["created_at"] == nil ||
		fmt.Sprint(w["events"]) != "[message.sent message.delivered]" || !strings.HasPrefix(w["secret"].(string), "whsec_") {
		t.Errorf("created %v", w)
	}
	// Defaults: batch_size 1, description "".
	r = n.do("POST", "/webhooks", map[string]any{"url": "http://127.0.0.1:9/x", "events": []string{"*"}}, bearer(access)...)
	if r.Status != 201 {
		t.Fatalf("create with a bearer token = %d %s", r.Status, r.Body)
	}
	w2 := r.json(t)
	if w2["batch_size"] != float64(1) || w2["description"] != "" || fmt.Sprint(w2["events"]) != "[*]" {
		t.Errorf("defaults: %v", w2)
	}

	list := n.do("GET", "/webhooks", nil, key(a)...)
	if list.Status != 200 || strings.Contains(string(list.Body), "whsec_") || strings.Contains(string(list.Body), `"secret"`) {
		t.Fatalf("list = %d %s (never the secret)", list.Status, list.Body)
	}
	if all := list.json2(t); len(all) != 2 || all[0].(map[string]any)["id"] != id {
		t.Errorf("list = %s; want both, oldest first", list.Body)
	}
	got := n.do("GET", "/webhooks/"+id, nil, bearer(access)...)
	if got.Status != 200 || got.json(t)["url"] != "https://hooks.example.com/tuma" || strings.Contains(string(got.Body), "whsec_") {
		t.Errorf("get = %d %s", got.Status, got.Body)
	}

	r = n.do("PATCH", "/webhooks/"+id, map[string]any{"events": []string{"message.failed"}, "enabled": false, "batch_size": 100}, key(a)...)
	if r.Status != 200 {
		t.Fatalf("patch = %d %s", r.Status, r.Body)
	}
	p := r.json(t)
	if fmt.Sprint(p["events"]) != "[message.failed]" || p["enabled"] != false || p["disabled_reason"] == nil ||
		p["batch_size"] != float64(100) || p["url"] != "https://hooks.example.com/tuma" || p["description"] != "orders" {
		t.Errorf("patched %v", p)
	}
	r = n.do("PATCH", "/webhooks/"+id, map[string]any{"enabled": true, "url": "https://other.example.com/h", "description": ""}, key(a)...)
	if p := r.json(t); r.Status != 200 || p["enabled"] != true || p["disabled_reason"] != nil || p["url"] != "https://other.example.com/h" || p["description"] != "" {
		t.Errorf("re-enabled: %d %s", r.Status, r.Body)
	}

	if r := n.do("DELETE", "/webhooks/"+id, nil, key(a)...); r.Status != 204 {
		t.Fatalf("delete = %d %s", r.Status, r.Body)
	}
	n.do("GET", "/webhooks/"+id, nil, key(a)...).problem(t, 404, "not_found")
	n.do("DELETE", "/webhooks/"+id, nil, key(a)...).problem(t, 404, "not_found")
	if all := n.do("GET", "/webhooks", nil, key(a)...).json2(t); len(all) != 1 {
		t.Errorf("after delete: %d endpoints; want 1", len(all))
	}
	n.do("GET", "/webhooks", nil).problem(t, 401, "unauthenticated")
	n.do("GET", "/webhooks/not-a-uuid", nil, key(a)...).problem(t, 404, "not_found")
}

// Bad input is a 422 naming the field, and changes nothing; the eleventh endpoint is refused.
func TestWebhookBadInput(t *testing.T) {
	n := startNode(t, hookEnv())
	a := n.register("bad@example.com")
	id, _ := n.hook(a, "https://hooks.example.com/a", "message.sent")
	before := string(n.do("GET", "/webhooks", nil, key(a)...).Body)

	for _, tc := range []struct {
		body  any
		code  string
		field string
	}{
		{map[string]any{"events": []string{"message.sent"}}, "validation_failed", "url"},
		{map[string]any{"url": "https://h.example.com"}, "validation_failed", "events"},
		{map[string]any{"url": "https://h.example.com", "events": []string{}}, "validation_failed", "events"},
		{map[string]any{"url": "https://h.example.com", "events": []string{"message.sent", "message.bounced"}}, "validation_failed", "events"},
		{map[string]any{"url": "https://h.example.com", "events": []string{"*", "message.sent"}}, "validation_failed", "events"},
		{map[string]any{"url": "https://h.example.com", "events": []string{"*"}, "batch_size": 0}, "validation_failed", "batch_size"},
		{map[string]any{"url": "https://h.example.com", "events": []string{"*"}, "batch_size": 101}, "validation_failed", "batch_size"},
		{map[string]any{"url": "https://h.example.com", "events": []string{"*"}, "batch_size": "ten"}, "validation_failed", "batch_size"},
		{map[string]any{"url": "https://h.example.com", "events": []string{"*"}, "description": strings.Repeat("d", 501)}, "validation_failed", "description"},
		{map[string]any{"url": "https://h.example.com/" + strings.Repeat("p", 2000), "events": []string{"*"}}, "validation_failed", "url"},
		{map[string]any{"url": "ftp://h.example.com", "events": []string{"*"}}, "url_not_allowed", "url"},
		{map[string]any{"url": "https://user:pw@h.example.com", "events": []string{"*"}}, "url_not_allowed", "url"},
		{map[string]any{"url": "not a url", "events": []string{"*"}}, "url_not_allowed", "url"},
	} {
		r := n.do("POST", "/webhooks", tc.body, key(a)...)
		p := r.problem(t, 422, tc.code)
		if !strings.Contains(string(mustJSON(t, p["errors"])), `"field":"`+tc.field+`"`) {
			t.Errorf("POST %v: errors %v do not name %s", tc.body, p["errors"], tc.field)
		}
	}
	for _, tc := range []struct {
		body  any
		field string
	}{
		{map[string]any{"events": []string{"sms.sent"}}, "events"},
		{map[string]any{"batch_size": 1000}, "batch_size"},
		{map[string]any{"url": ""}, "url"},
		{map[string]any{"url": "https://ok.example.com", "events": []string{}}, "events"},
	} {
		p := n.do("PATCH", "/webhooks/"+id, tc.body, key(a)...).problem(t, 422, "validation_failed")
		if !strings.Contains(string(mustJSON(t, p["errors"])), `"field":"`+tc.field+`"`) {
			t.Errorf("PATCH %v: errors %v do not name %s", tc.body, p["errors"], tc.field)
		}
	}
	for _, body := range []any{map[string]any{"expires_in_seconds": -1}, map[string]any{"expires_in_seconds": 604801}} {
		n.do("POST", "/webhooks/"+id+"/roll-secret", body, key(a)...).problem(t, 422, "validation_failed")
	}
	n.do("GET", "/webhooks/"+id+"/deliveries?status=lost", nil, key(a)...).problem(t, 422, "validation_failed")
	n.do("GET", "/webhooks/"+id+"/deliveries?page_size=0", nil, key(a)...).problem(t, 422, "validation_failed")
	n.do("GET", "/webhooks/"+id+"/deliveries?cursor=abc", nil, key(a)...).problem(t, 400, "malformed_query")
	n.do("GET", "/webhooks/"+id+"/deliveries?page=2", nil, key(a)...).problem(t, 400, "malformed_query")
	n.do("POST", "/webhooks", "{", key(a)...).problem(t, 400, "malformed_json")
	n.do("POST", "/webhooks/"+id+"/roll-secret", "", key(a)...).problem(t, 400, "malformed_json") // labelled JSON, empty
	if after := string(n.do("GET", "/webhooks", nil, key(a)...).Body); after != before {
		t.Errorf("bad input changed the endpoints:\n%s\n%s", before, after)
	}
	// Limits are in characters: 500 of two bytes each is a description within them.
	long := strings.Repeat("é", 500)
	if r := n.do("PATCH", "/webhooks/"+id, map[string]any{"description": long}, key(a)...); r.Status != 200 || r.json(t)["description"] != long {
		t.Errorf("PATCH of a 500-character description of 1,000 bytes = %d %.200s", r.Status, r.Body)
	}

	for i := 2; i <= 10; i++ {
		n.hook(a, fmt.Sprintf("https://hooks.example.com/%d", i), "*")
	}
	n.do("POST", "/webhooks", map[string]any{"url": "https://hooks.example.com/11", "events": []string{"*"}}, key(a)...).
		problem(t, 422, "limit_reached")
	if all := n.do("GET", "/webhooks", nil, key(a)...).json2(t); len(all) != 10 {
		t.Errorf("%d endpoints after the refused eleventh; want 10", len(all))
	}
	n.do("DELETE", "/webhooks/"+id, nil, key(a)...)
	n.hook(a, "https://hooks.example.com/again", "*") // room again
}

// Another tenant's endpoint and deliveries are 404 on every route, and stay as they were.
func TestWebhookCrossTenant(t *testing.T) {
	n := startNode(t, hookEnv())
	rc := newReceiver(t, ok204)
	a, b := n.register("owner@example.com"), n.register("other@example.com")
	id, _ := n.hook(a, rc.srv.URL, "*")
	r := n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...)
	if r.Status != 202 {
		t.Fatalf("test = %d %s", r.Status, r.Body)
	}
	did := r.json(t)["delivery_id"].(string)
	n.waitDelivery(a, id, did, "succeeded")
	before := string(n.do("GET", "/webhooks/"+id, nil, key(a)...).Body)

	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/webhooks/" + id, nil},
		{"PATCH", "/webhooks/" + id, map[string]any{"enabled": false}},
		{"DELETE", "/webhooks/" + id, nil},
		{"POST", "/webhooks/" + id + "/roll-secret", nil},
		{"POST", "/webhooks/" + id + "/test", nil},
		{"GET", "/webhooks/" + id + "/deliveries", nil},
		{"POST", "/webhooks/" + id + "/deliveries/" + did + "/retry", nil},
	} {
		n.do(c.method, c.path, c.body, key(b)...).problem(t, 404, "not_found")
	}
	// a's delivery under b's own endpoint is not found either.
	own, _ := n.hook(b, rc.srv.URL, "*")
	n.do("POST", "/webhooks/"+own+"/deliveries/"+did+"/retry", nil, key(b)...).problem(t, 404, "not_found")
	if list := n.do("GET", "/webhooks", nil, key(b)...).json2(t); len(list) != 1 {
		t.Errorf("b lists %d endpoints; want only its own", len(list))
	}
	if after := string(n.do("GET", "/webhooks/"+id, nil, key(a)...).Body); after != before {
		t.Errorf("another tenant changed the endpoint:\n%s\n%s", before, after)
	}
	if len(ofID(rc.deliveries(), did)) != 1 {
		t.Errorf("another tenant's retry or test reached the receiver")
	}
}

// With TUMA_WEBHOOK_ALLOW_PRIVATE off, an endpoint must be https and must not be, or resolve
// to, a loopback, private, link-local or unspecified address: 422 url_not_allowed, nothing
// stored, at creation and at a change.
func TestWebhookURLRule(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("ssrf@example.com")
	for _, u := range []string{
		"http://hooks.example.com/h",     // not https
		"https://127.0.0.1/h",            // loopback
		"https://[::1]:8443/h",           // loopback, IPv6
		"https://localhost/h",            // a name resolving to loopback
		"https://10.1.2.3/h",             // private
		"https://192.168.0.10/h",         // private
		"https://169.254.169.254/latest", // link-local (cloud metadata)
		"https://0.0.0.0/h",              // unspecified
		"https://[::ffff:127.0.0.1]/h",   // loopback, IPv4-mapped
	} {
		p := n.do("POST", "/webhooks", map[string]any{"url": u, "events": []string{"*"}}, key(a)...).problem(t, 422, "url_not_allowed")
		if !strings.Contains(string(mustJSON(t, p["errors"])), `"field":"url"`) {
			t.Errorf("%s: errors %v do not name url", u, p["errors"])
		}
	}
	// A public address is taken (no name to resolve), and cannot be changed to a private one.
	id, _ := n.hook(a, "https://93.184.216.34/h", "*")
	for _, u := range []string{"https://localhost/h", "http://93.184.216.34/h", "https://172.16.0.1/h"} {
		n.do("PATCH", "/webhooks/"+id, map[string]any{"url": u}, key(a)...).problem(t, 422, "url_not_allowed")
	}
	list := n.do("GET", "/webhooks", nil, key(a)...).json2(t)
	if len(list) != 1 || list[0].(map[string]any)["url"] != "https://93.184.216.34/h" {
		t.Errorf("endpoints after the refusals: %v", list)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
