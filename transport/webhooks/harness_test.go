package webhooks_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
	"github.com/tuma-sms/tuma/transport/webhooks"
)

// hit is one request the receiver got.
type hit struct {
	at                   time.Time
	id, stamp, sig, ua   string
	body                 []byte
	eventIDs, eventTypes []string
	messages             []string // each event's data.message_id
}

// receiver is a tenant's endpoint: it records requests and answers with answer(n), n counting
// from 0; it notes a delivery id received while a request with the same id is still open.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	hits   []hit
	open   map[string]int
	twice  []string
	answer func(w http.ResponseWriter, r *http.Request, n int)
}

func newReceiver(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, n int)) *receiver {
	rc := &receiver{t: t, open: map[string]int{}, answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h := hit{at: time.Now(), id: r.Header.Get("webhook-id"), stamp: r.Header.Get("webhook-timestamp"),
		sig: r.Header.Get("webhook-signature"), ua: r.Header.Get("User-Agent"), body: body}
	var doc struct {
		Events []struct {
			ID, Type string
			Data     struct {
				MessageID string `json:"message_id"`
			}
		}
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		rc.t.Errorf("body %s: %v", body, err)
	}
	for _, e := range doc.Events {
		h.eventIDs, h.eventTypes, h.messages = append(h.eventIDs, e.ID), append(h.eventTypes, e.Type), append(h.messages, e.Data.MessageID)
	}
	rc.mu.Lock()
	n := len(rc.hits)
	rc.hits = append(rc.hits, h)
	if rc.open[h.id] > 0 {
		rc.twice = append(rc.twice, h.id)
	}
	rc.open[h.id]++
	rc.mu.Unlock()
	defer func() {
		rc.mu.Lock()
		rc.open[h.id]--
		rc.mu.Unlock()
	}()
	rc.answer(w, r, n)
}

func (rc *receiver) got() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hit(nil), rc.hits...)
}

// waitFor polls until cond holds of the hits, or fails after a deadline.
func (rc *receiver) waitFor(what string, cond func([]hit) bool) []hit {
	rc.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		hs := rc.got()
		if cond(hs) {
			return hs
		}
		if time.Now().After(deadline) {
			rc.t.Fatalf("timed out waiting for %s; %d requests", what, len(hs))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func events(hs []hit) int {
	n := 0
	for _, h := range hs {
		n += len(h.eventIDs)
	}
	return n
}

func ok204(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusNoContent) }

// node is a store and a running Deliverer, its rounds driven as the engine's worker drives
// them: at once when woken, else every few milliseconds.
type node struct {
	st *persistence.Store
	d  *webhooks.Deliverer
	m  *prometheus.Registry
}

func startNode(t *testing.T, st *persistence.Store, opts webhooks.Options) *node {
	t.Helper()
	return startNodeOn(t, st, st, opts)
}

// startNodeOn starts a node whose deliverer reaches the database through store (st wrapped).
func startNodeOn(t *testing.T, st *persistence.Store, store webhooks.Store, opts webhooks.Options) *node {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	wake := make(chan struct{}, 1)
	opts.Wake = func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	reg := prometheus.NewRegistry()
	n := &node{st: st, m: reg, d: webhooks.New(store, opts, slog.New(slog.DiscardHandler), webhooks.NewMetrics(reg))}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); n.d.Run(ctx) }()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			if _, err := n.d.Round(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("round: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-wake:
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return n
}

func newAccount(t *testing.T, st *persistence.Store) uuid.UUID {
	t.Helper()
	email := uuid.NewString() + "@example.com"
	key := sha256.Sum256([]byte(email))
	a, err := st.CreateAccount(context.Background(), persistence.NewAccount{Email: email, PasswordHash: "x", FullName: "Jane",
		CompanyName: "Acme", APIKeyHash: key[:], APIKeyPrefix: "sk_live_test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Credit(context.Background(), persistence.NewCredit{AccountID: a.ID, Cents: 1_000_000, Type: persistence.TxTopup,
		Description: "test"}); err != nil {
		t.Fatal(err)
	}
	return a.ID
}

func hook(t *testing.T, st *persistence.Store, acct uuid.UUID, url string, batch int, evs ...string) (persistence.Webhook, string) {
	t.Helper()
	w, secret, err := st.CreateWebhook(context.Background(), persistence.NewWebhook{AccountID: acct, URL: url, Events: evs, BatchSize: batch})
	if err != nil {
		t.Fatal(err)
	}
	return w, secret
}

// dispatch accepts n messages for the account and records, in one flush, each submitted and
// then delivered: 2n events for an endpoint subscribed to both.
func dispatch(t *testing.T, st *persistence.Store, acct uuid.UUID, n int) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	id := persistence.NewID()
	j := persistence.NewJob{ID: id, AccountID: acct, Source: "api", Message: "hi", PriceCents: 1, Recipients: n,
		Units: int64(n), CostCents: int64(n), Senders: [carriers.NetworkSlots]string{"", "TUMA", "TUMA", "TUMA"}}
	j.NetworkCounts[carriers.Airtel] = n
	var rb persistence.ReceiptBatch
	var ids []uuid.UUID
	for i := range n {
		m := persistence.NewMessage{ID: persistence.NewID(), Recipient: fmt.Sprintf("+25473%07d", i), Network: carriers.Airtel,
			Sender: "TUMA", Parts: 1, Encoding: carriers.GSM7, CostCents: 1}
		j.Inline, ids = append(j.Inline, m), append(ids, m.ID)
		pid := m.ID.String()
		rb.Submitted = append(rb.Submitted, persistence.Submitted{AccountID: acct, MessageID: m.ID, ProviderID: pid,
			Network: carriers.Airtel, At: time.Now()})
		rb.Receipts = append(rb.Receipts, persistence.Receipt{ProviderID: pid, Network: carriers.Airtel, Delivered: true,
			ProviderStatus: "DELIVRD", At: time.Now()})
	}
	if res, err := st.AcceptJobs(ctx, []persistence.NewJob{j}); err != nil || res[0].Err != nil {
		t.Fatalf("accept: %v %+v", err, res)
	}
	if _, err := st.FlushReceipts(ctx, rb); err != nil {
		t.Fatal(err)
	}
	return ids
}

func newStore(t *testing.T) *persistence.Store {
	st, _ := pgtest.NewStore(t)
	return st
}

// metric reads a counter of the registry, the series with the label value given.
func metric(reg *prometheus.Registry, name, label string) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == label {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}

// waitLog polls an endpoint's delivery log until cond holds, or fails after a deadline.
func waitLog(t *testing.T, st *persistence.Store, acct, endpoint uuid.UUID, what string, cond func([]persistence.DeliveryRecord) bool) []persistence.DeliveryRecord {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		log, err := st.WebhookDeliveries(context.Background(), acct, endpoint, "", persistence.Page{Size: 100})
		if err != nil {
			t.Fatal(err)
		}
		if cond(log) {
			return log
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; log %+v", what, log)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
