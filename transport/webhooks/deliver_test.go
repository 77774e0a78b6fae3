package webhooks_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tuma-sms/tuma/bench/npmtest"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/webhooks"
)

var short = []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}

func local(o webhooks.Options) webhooks.Options {
	o.Policy.AllowPrivate = true
	if o.Schedule == nil {
		o.Schedule = short
	}
	return o
}

// Every event arrives, a message's message.sent before its message.delivered, in batches of
// at most batch_size, signed as Standard Webhooks says: an independent implementation (the
// npm standardwebhooks package) accepts every request, with either secret during a roll.
func TestDeliveriesSignedInOrderAndVerified(t *testing.T) {
	st := newStore(t)
	acct := newAccount(t, st)
	rc := newReceiver(t, ok204)
	w, secret := hook(t, st, acct, rc.srv.URL, 7, "message.sent", "message.delivered")
	n := startNode(t, st, local(webhooks.Options{UserAgent: "Tuma-Webhooks/1.2.3"}))
	ids := dispatch(t, st, acct, 20)
	hs := rc.waitFor("40 events", func(hs []hit) bool { return events(hs) >= 40 })

	pos := map[string]int{}
	seen := map[string]bool{}
	for i, h := range hs {
		if len(h.eventIDs) == 0 || len(h.eventIDs) > 7 {
			t.Errorf("request %d has %d events; want 1 to 7", i, len(h.eventIDs))
		}
		if h.ua != "Tuma-Webhooks/1.2.3" || !strings.HasPrefix(h.sig, "v1,") || strings.Contains(h.sig, " ") {
			t.Errorf("request %d: user agent %q, signature %q", i, h.ua, h.sig)
		}
		for k, id := range h.eventIDs {
			if seen[id] {
				t.Errorf("event %s delivered twice", id)
			}
			seen[id] = true
			key := h.messages[k] + " " + h.eventTypes[k]
			pos[key] = i*1000 + k
		}
	}
	for _, id := range ids {
		s, okS := pos[id.String()+" message.sent"]
		d, okD := pos[id.String()+" message.delivered"]
		if !okS || !okD || s > d {
			t.Errorf("message %s: sent at %d (%v), delivered at %d (%v); want sent first", id, s, okS, d, okD)
		}
	}
	var first struct {
		Events []struct {
			ID, Type  string
			CreatedAt string `json:"created_at"`
			Data      map[string]any
		}
	}
	if err := json.Unmarshal(hs[0].body, &first); err != nil {
		t.Fatal(err)
	}
	e := first.Events[0]
	for _, k := range []string{"message_id", "job_id", "campaign_id", "reference", "recipient", "network", "sender_id", "status",
		"provider_status", "provider_message_id", "parts", "cost_kes", "sent_at", "delivered_at"} {
		if _, ok := e.Data[k]; !ok {
			t.Errorf("message event data lacks %s: %v", k, e.Data)
		}
	}
	if !strings.HasPrefix(e.ID, "evt_") || e.Type != "message.sent" || e.Data["status"] != "sent" || e.Data["network"] != "airtel" ||
		e.Data["cost_kes"] != 0.01 || e.Data["delivered_at"] != nil {
		t.Errorf("first event %+v", e)
	}

	// Roll the secret with an overlap: both sign.
	rolled, err := st.RollWebhookSecret(context.Background(), acct, w.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dispatch(t, st, acct, 1)
	hs = rc.waitFor("the rolled deliveries", func(hs []hit) bool { return events(hs) >= 42 })
	last := hs[len(hs)-1]
	if parts := strings.Split(last.sig, " "); len(parts) != 2 {
		t.Fatalf("signature during a roll %q; want two", last.sig)
	}
	var checks []verification
	for _, h := range hs[:len(hs)-1] {
		checks = append(checks, verification{secret, h, true})
	}
	checks = append(checks, verification{rolled, last, true}, verification{secret, last, true},
		verification{rolled, hs[0], false}) // the new secret never signed the old deliveries
	verifyWithStandardWebhooks(t, checks)
	if got := metric(n.m, "tuma_webhook_attempts_total", "succeeded"); got < 2 {
		t.Errorf("succeeded attempts counted: %v", got)
	}
}

type verification struct {
	secret string
	h      hit
	want   bool
}

// verifierFixture is the npm standardwebhooks verifier (testdata/verifier, locked).
var verifierFixture = &npmtest.Fixture{Src: filepath.Join("testdata", "verifier"),
	Files: []string{"package.json", "package-lock.json", "verify.js"}}

// verifyWithStandardWebhooks has the npm standardwebhooks package check each request.
func verifyWithStandardWebhooks(t *testing.T, checks []verification) {
	t.Helper()
	npmDir, npmErr := verifierFixture.Dir()
	if npmErr != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("standardwebhooks verifier not installed (Node.js and npm come from deploy/dev/test-tools.sh): %v", npmErr)
		}
		t.Fatalf("standardwebhooks verifier (Node.js and npm are installed by deploy/dev/test-tools.sh): %v", npmErr)
	}
	var in strings.Builder
	for _, c := range checks {
		b, _ := json.Marshal(map[string]string{"secret": c.secret, "id": c.h.id, "timestamp": c.h.stamp, "signature": c.h.sig,
			"body": string(c.h.body)})
		in.Write(append(b, '\n'))
	}
	cmd := exec.Command("node", filepath.Join(npmDir, "verify.js"))
	cmd.Dir = npmDir
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node verify.js: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	i := 0
	for ; sc.Scan(); i++ {
		var r struct {
			OK    bool
			Error string
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.OK != checks[i].want {
			t.Errorf("standardwebhooks on delivery %s with secret %d: ok %v (%s); want %v", checks[i].h.id, i, r.OK, r.Error, checks[i].want)
		}
	}
	if i != len(checks) {
		t.Fatalf("verifier answered %d of %d", i, len(checks))
	}
}

// failing is a receiver answering each of the first len(answers) requests its way, then 204.
func failing(answers ...func(w http.ResponseWriter, r *http.Request)) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		if n < len(answers) {
			answers[n](w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

func status(code int) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

// Each failure is retried on the schedule, the same delivery id every time, and logged.
func TestFailedAttemptsAreRetried(t *testing.T) {
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	hangUp := func(w http.ResponseWriter, _ *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close()
		}
	}
	tooMany := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	}
	st := newStore(t)
	acct := newAccount(t, st)
	other := newReceiver(t, ok204)
	redirect := func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, other.srv.URL, http.StatusFound) }
	rc := newReceiver(t, failing(status(500), hang, hangUp, redirect))
	w, _ := hook(t, st, acct, rc.srv.URL, 100, "message.sent", "message.delivered")
	startNode(t, st, local(webhooks.Options{Timeout: 300 * time.Millisecond,
		Schedule: []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, time.Hour}}))
	dispatch(t, st, acct, 1)
	hs := rc.waitFor("a success after four failures", func(hs []hit) bool { return len(hs) >= 5 })
	for _, h := range hs[1:] {
		if h.id != hs[0].id || len(h.eventIDs) != 2 {
			t.Errorf("retry with id %s and %d events; want %s and 2", h.id, len(h.eventIDs), hs[0].id)
		}
	}
	if len(other.got()) != 0 {
		t.Errorf("the redirect was followed")
	}
	waitLog(t, st, acct, w.ID, "one delivery succeeded at the fifth attempt", func(log []persistence.DeliveryRecord) bool {
		return len(log) == 1 && log[0].Status == persistence.DeliverySucceeded && log[0].Attempts == 5
	})

	// 429 with Retry-After waits that long, not the schedule's 20 ms.
	rc2 := newReceiver(t, failing(tooMany))
	hook(t, st, acct, rc2.srv.URL, 100, "message.sent")
	dispatch(t, st, acct, 1)
	hs2 := rc2.waitFor("the retry after 429", func(hs []hit) bool { return len(hs) >= 2 })
	if gap := hs2[1].at.Sub(hs2[0].at); gap < 900*time.Millisecond {
		t.Errorf("retried %v after a 429 with Retry-After: 1; want about a second", gap)
	}
}

// 410 disables the endpoint at once, with a notification; a spent schedule fails the delivery.
func TestGoneDisablesAndScheduleEnds(t *testing.T) {
	st := newStore(t)
	acct := newAccount(t, st)
	gone := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusGone) })
	wg, _ := hook(t, st, acct, gone.srv.URL, 100, "message.sent")
	dead := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusBadGateway) })
	wd, _ := hook(t, st, acct, dead.srv.URL, 100, "message.delivered")
	n := startNode(t, st, local(webhooks.Options{}))
	dispatch(t, st, acct, 1)
	dead.waitFor("every attempt", func(hs []hit) bool { return len(hs) >= len(short)+1 })
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, _ := st.WebhookByID(ctx, acct, wg.ID)
		log, _ := st.WebhookDeliveries(ctx, acct, wd.ID, persistence.DeliveryFailed, persistence.Page{Size: 10})
		if !g.Enabled && len(log) == 1 {
			if g.DisabledReason == nil || !strings.Contains(*g.DisabledReason, "410") || log[0].Attempts != len(short)+1 {
				t.Errorf("disabled reason %v, failed delivery %+v", g.DisabledReason, log[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("endpoint enabled %v, failed deliveries %d", g.Enabled, len(log))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(gone.got()) != 1 {
		t.Errorf("the gone endpoint got %d requests; want 1", len(gone.got()))
	}
	notes, _ := st.Notifications(ctx, acct, 10)
	if len(notes) == 0 || notes[0].Type != "webhook_disabled" {
		t.Errorf("notifications %+v; want webhook_disabled", notes)
	}
	if got := metric(n.m, "tuma_webhook_endpoints_disabled_total", "gone"); got != 1 {
		t.Errorf("disabled (gone) counted %v", got)
	}
}

// Two nodes deliver from one database at once: no delivery is sent again while its first
// attempt is still open, and every event arrives once.
func TestTwoNodesShareTheOutbox(t *testing.T) {
	st := newStore(t)
	acct := newAccount(t, st)
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		time.Sleep(2 * time.Millisecond) // keep requests open long enough to overlap
		w.WriteHeader(http.StatusOK)
	})
	hook(t, st, acct, rc.srv.URL, 1, "message.sent", "message.delivered")
	startNode(t, st, local(webhooks.Options{Lanes: 8}))
	startNode(t, st, local(webhooks.Options{Lanes: 8}))
	dispatch(t, st, acct, 60)
	hs := rc.waitFor("120 events", func(hs []hit) bool { return events(hs) >= 120 })
	ids := map[string]bool{}
	for _, h := range hs {
		if ids[h.id] {
			t.Errorf("delivery %s sent twice", h.id)
		}
		ids[h.id] = true
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.twice) > 0 {
		t.Errorf("deliveries %v sent again while open", rc.twice)
	}
}

// fakeDNS resolves every name to one address.
type fakeDNS struct{ ip string }

func (f fakeDNS) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) {
	return []net.IPAddr{{IP: net.ParseIP(f.ip)}}, nil
}

func TestURLPolicy(t *testing.T) {
	ctx := context.Background()
	public := webhooks.Policy{Resolver: fakeDNS{"93.184.216.34"}}
	for _, tt := range []struct {
		p   webhooks.Policy
		url string
		ok  bool
	}{
		{public, "https://hooks.example.com/x", true},
		{public, "http://hooks.example.com/x", false},
		{public, "ftp://hooks.example.com/x", false},
		{public, "https://user:pw@hooks.example.com/x", false},
		{public, "/relative", false},
		{public, "https://127.0.0.1/x", false},
		{public, "https://[::1]/x", false},
		{public, "https://10.1.2.3/x", false},
		{public, "https://192.168.0.1/x", false},
		{public, "https://169.254.169.254/latest", false},
		{public, "https://100.64.0.1/x", false},
		{public, "https://0.0.0.0/x", false},
		{public, "https://[::ffff:127.0.0.1]/x", false},
		{public, "https://[fd00::1]/x", false},
		{webhooks.Policy{Resolver: fakeDNS{"127.0.0.1"}}, "https://rebind.example.com/x", false},
		{webhooks.Policy{Resolver: fakeDNS{"10.0.0.7"}}, "https://internal.example.com/x", false},
		{webhooks.Policy{AllowPrivate: true}, "http://127.0.0.1:8080/x", true},
	} {
		err := tt.p.CheckURL(ctx, tt.url)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, webhooks.ErrURLNotAllowed)) {
			t.Errorf("CheckURL(%s) = %v; want ok %v", tt.url, err, tt.ok)
		}
	}
}

// A name that passed when saved but resolves to a private address at dial time is refused
// then, and nothing reaches the address.
func TestDialRefusesPrivateAddresses(t *testing.T) {
	st := newStore(t)
	acct := newAccount(t, st)
	rc := newReceiver(t, ok204)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(rc.srv.URL, "http://"))
	w, _ := hook(t, st, acct, "https://rebind.example.com:"+port+"/hook", 100, "message.sent")
	n := startNode(t, st, webhooks.Options{Schedule: short, Policy: webhooks.Policy{Resolver: fakeDNS{"127.0.0.1"}}})
	dispatch(t, st, acct, 1)
	waitLog(t, st, acct, w.ID, "the refusal recorded", func(log []persistence.DeliveryRecord) bool {
		return len(log) == 1 && log[0].LastError != nil && strings.Contains(*log[0].LastError, "127.0.0.1")
	})
	if got := metric(n.m, "tuma_webhook_attempts_total", "refused"); got < 1 {
		t.Errorf("refused attempts counted %v", got)
	}
	if len(rc.got()) != 0 {
		t.Errorf("the private address was reached")
	}
}

// dueCounter counts the rounds that claim due deliveries.
type dueCounter struct {
	*persistence.Store
	due atomic.Int64
}

func (c *dueCounter) ClaimWebhookDeliveries(ctx context.Context, cl persistence.WebhookClaim) ([]persistence.WebhookDelivery, error) {
	if !cl.SkipDue {
		c.due.Add(1)
	}
	return c.Store.ClaimWebhookDeliveries(ctx, cl)
}

// A busy node claims due deliveries every 100 ms or so, not at each of its rounds, and still
// sends them: a test event for one endpoint arrives while another's attempt hangs.
func TestBusyNodeSpacesItsClaimsOfDueDeliveries(t *testing.T) {
	st := newStore(t)
	acct := newAccount(t, st)
	release := make(chan struct{})
	slow := newReceiver(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusNoContent)
	})
	defer close(release)
	quick := newReceiver(t, ok204)
	hook(t, st, acct, slow.srv.URL, 100, "message.sent")
	w, _ := hook(t, st, acct, quick.srv.URL, 1, "webhook.test")
	cs := &dueCounter{Store: st}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	d := webhooks.New(cs, local(webhooks.Options{Timeout: 10 * time.Second}), slog.New(slog.DiscardHandler),
		webhooks.NewMetrics(prometheus.NewRegistry()))
	go func() { defer close(done); d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	dispatch(t, st, acct, 1)
	for deadline := time.Now().Add(10 * time.Second); len(slow.got()) == 0; {
		if _, err := d.Round(ctx); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow endpoint's delivery never started")
		}
	}
	// Now busy: 50 rounds over at least half a second claim due deliveries a handful of times.
	before := cs.due.Load()
	start := time.Now()
	if _, err := st.TestWebhook(ctx, acct, w.ID); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50 || time.Since(start) < 500*time.Millisecond; i++ {
		if _, err := d.Round(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	claims, spent := cs.due.Load()-before, time.Since(start)
	if most := int64(spent/(100*time.Millisecond)) + 1; claims < 1 || claims > most {
		t.Errorf("%d rounds' claims of due deliveries in %v while busy; want 1 to %d", claims, spent, most)
	}
	quick.waitFor("the test event", func(hs []hit) bool { return len(hs) == 1 })
}

// unreadable fails reading the messages of the first `fail` deliveries, as a database that
// is briefly unreachable does.
type unreadable struct {
	*persistence.Store
	fail atomic.Int64
}

func (u *unreadable) WebhookEventMessages(ctx context.Context, acct uuid.UUID, evs []persistence.WebhookEvent) ([]persistence.MessageEventData, error) {
	if u.fail.Add(-1) >= 0 {
		return nil, errors.New("connection refused")
	}
	return u.Store.WebhookEventMessages(ctx, acct, evs)
}

// A delivery whose request could not be made (its messages could not be read) counts no
// attempt against the endpoint: no retry of its schedule spent, no failure streak; its lease
// lapses and it goes again.
func TestUnsentDeliveryIsNotTheEndpointsFailure(t *testing.T) {
	st := newStore(t)
	acct := newAccount(t, st)
	rc := newReceiver(t, ok204)
	w, _ := hook(t, st, acct, rc.srv.URL, 100, "message.sent")
	u := &unreadable{Store: st}
	u.fail.Store(1)
	n := startNodeOn(t, st, u, local(webhooks.Options{Timeout: 200 * time.Millisecond, Lease: 400 * time.Millisecond}))
	dispatch(t, st, acct, 1)
	rc.waitFor("the delivery after its lease lapsed", func(hs []hit) bool { return len(hs) == 1 })
	log := waitLog(t, st, acct, w.ID, "the success", func(ds []persistence.DeliveryRecord) bool {
		return len(ds) == 1 && ds[0].Status == persistence.DeliverySucceeded
	})
	if log[0].Attempts != 1 || log[0].LastError != nil {
		t.Errorf("delivery %+v; want one attempt (the success), no error", log[0])
	}
	if got := metric(n.m, "tuma_webhook_attempts_total", "connection"); got != 0 {
		t.Errorf("%v attempts counted as connection failures; want 0", got)
	}
	if u.fail.Load() >= 0 {
		t.Error("the messages were never unreadable: the test tested nothing")
	}
}
