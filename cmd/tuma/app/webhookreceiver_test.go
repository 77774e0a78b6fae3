package app_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// hookEnv is a node that may deliver webhooks to a local receiver over http://, with retries
// a fraction of a second apart.
func hookEnv(more ...string) map[string]string {
	env := map[string]string{"TUMA_WEBHOOK_ALLOW_PRIVATE": "true", "TUMA_WEBHOOK_RETRY_SCHEDULE": "300ms,300ms,300ms"}
	for k, v := range fastSims {
		env[k] = v
	}
	for i := 0; i+1 < len(more); i += 2 {
		env[more[i]] = more[i+1]
	}
	return env
}

// delivery is one request a receiver got.
type delivery struct {
	At                   time.Time
	ID, Stamp, Signature string
	UserAgent            string
	Path                 string
	Body                 []byte
	Events               []hookEvent
}

type hookEvent struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	CreatedAt string         `json:"created_at"`
	Data      map[string]any `json:"data"`
}

// receiver is a tenant's webhook endpoint: it records every request and answers as answer
// says for the n-th (from 0).
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	got    []delivery
	answer func(w http.ResponseWriter, r *http.Request, n int)
}

func ok204(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusNoContent) }

func newReceiver(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, n int)) *receiver {
	rc := &receiver{t: t, answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := delivery{At: time.Now(), ID: r.Header.Get("webhook-id"), Stamp: r.Header.Get("webhook-timestamp"),
			Signature: r.Header.Get("webhook-signature"), UserAgent: r.Header.Get("User-Agent"), Path: r.URL.Path, Body: body}
		var payload struct{ Events []hookEvent }
		if err := json.Unmarshal(body, &payload); err != nil {
			t.Errorf("webhook body %q is not {\"events\":[…]}: %v", body, err)
		}
		d.Events = payload.Events
		rc.mu.Lock()
		n := len(rc.got)
		rc.got = append(rc.got, d)
		answer := rc.answer
		rc.mu.Unlock()
		answer(w, r, n)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// setAnswer changes how the receiver answers from now on.
func (rc *receiver) setAnswer(a func(w http.ResponseWriter, r *http.Request, n int)) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.answer = a
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

// waitFor polls until cond holds on what was received, or fails the test after 20 s.
func (rc *receiver) waitFor(what string, cond func([]delivery) bool) []delivery {
	rc.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := rc.deliveries()
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			rc.t.Fatalf("receiver: %s did not happen within 20 s; got %d requests", what, len(got))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ofID is the requests of one delivery (webhook-id).
func ofID(ds []delivery, id string) []delivery {
	var out []delivery
	for _, d := range ds {
		if d.ID == id {
			out = append(out, d)
		}
	}
	return out
}

// signatures are the base64 MACs of a webhook-signature header, in order.
func signatures(header string) []string {
	var out []string
	for _, s := range strings.Fields(header) {
		v, sig, ok := strings.Cut(s, ",")
		if ok && v == "v1" {
			out = append(out, sig)
		}
	}
	return out
}

// verifies computes Standard Webhooks' signature with a whsec_ secret on its own (not with
// Tuma's code) and reports whether sig is it.
func verifies(t *testing.T, secret string, d delivery, sig string) bool {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") || len(key) != 32 {
		t.Fatalf("secret %q is not whsec_ and the base64 of 32 bytes", secret)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(d.ID + "." + d.Stamp + "." + string(d.Body)))
	want := base64.StdEncoding.EncodeToString(m.Sum(nil))
	return hmac.Equal([]byte(want), []byte(sig))
}

// hook creates an endpoint for a and returns its id and secret.
func (n *node) hook(a account, url string, events ...string) (id, secret string) {
	n.t.Helper()
	r := n.do("POST", "/webhooks", map[string]any{"url": url, "events": events}, key(a)...)
	if r.Status != 201 {
		n.t.Fatalf("create webhook = %d %s", r.Status, r.Body)
	}
	m := r.json(n.t)
	return m["id"].(string), m["secret"].(string)
}

// hookDeliveries is an endpoint's delivery log (first page, up to 100).
func (n *node) hookDeliveries(a account, id, query string) []map[string]any {
	n.t.Helper()
	r := n.do("GET", "/webhooks/"+id+"/deliveries?page_size=100"+query, nil, key(a)...)
	if r.Status != 200 {
		n.t.Fatalf("deliveries = %d %s", r.Status, r.Body)
	}
	var out []map[string]any
	for _, d := range r.json(n.t)["data"].([]any) {
		out = append(out, d.(map[string]any))
	}
	return out
}

// waitDelivery polls the log until the delivery has the status, and returns it.
func (n *node) waitDelivery(a account, hookID, deliveryID, status string) map[string]any {
	n.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, d := range n.hookDeliveries(a, hookID, "") {
			if d["id"] == deliveryID && d["status"] == status {
				return d
			}
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("delivery %s is not %s within 20 s: %v", deliveryID, status, n.hookDeliveries(a, hookID, ""))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
