package actors_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/actors/simlink"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/carriers/sim"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

// world is a store, simulated networks and an engine over them.
type world struct {
	t     *testing.T
	st    *persistence.Store
	dbURL string
	sims  *simlink.Set
	eng   *actors.Engine
	reg   *prometheus.Registry
	opts  actors.Options
	// wrap, when set, changes the carriers the engine gets (hiding a capability, say);
	// store, when set, replaces the store the engine gets.
	wrap  func(map[carriers.Network]actors.Carrier) map[carriers.Network]actors.Carrier
	store actors.Store
}

// newWorld starts everything with instant simulators; tune edits each network's options.
func newWorld(t *testing.T, opts actors.Options, tune func(carriers.Network, *sim.Options)) *world {
	t.Helper()
	return newWorldWith(t, opts, tune, nil)
}

// newWorldWith is newWorld with setup run on the world before its engine starts.
func newWorldWith(t *testing.T, opts actors.Options, tune func(carriers.Network, *sim.Options), setup func(*world)) *world {
	t.Helper()
	st, u := pgtest.NewStore(t)
	w := &world{t: t, st: st, dbURL: u, opts: opts}
	w.sims = newSims(t, tune)
	if setup != nil {
		setup(w)
	}
	w.start()
	return w
}

func newSims(t *testing.T, tune func(carriers.Network, *sim.Options)) *simlink.Set {
	t.Helper()
	o := map[carriers.Network]sim.Options{}
	for _, n := range carriers.Networks() {
		so := sim.Options{}
		if tune != nil {
			tune(n, &so)
		}
		o[n] = so
	}
	s, err := simlink.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func (w *world) start() {
	w.t.Helper()
	w.reg = prometheus.NewRegistry()
	cs := w.sims.Carriers()
	if w.wrap != nil {
		cs = w.wrap(cs)
	}
	var store actors.Store = w.st
	if w.store != nil {
		store = w.store
	}
	eng, err := actors.Start(context.Background(), w.opts, actors.Deps{
		Log: slog.New(slog.NewTextHandler(w.t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})), Registerer: w.reg,
		Store: store, Carriers: cs,
	})
	if err != nil {
		w.t.Fatalf("start engine: %v", err)
	}
	w.sims.Deliver(eng.Receipt)
	w.eng = eng
	w.t.Cleanup(func() { _ = eng.Stop(context.Background()) })
}

// account creates a funded account.
func (w *world) account(balanceCents int64) uuid.UUID {
	w.t.Helper()
	ctx := context.Background()
	h := sha256.Sum256([]byte(uuid.NewString()))
	a, err := w.st.CreateAccount(ctx, persistence.NewAccount{Email: uuid.NewString() + "@example.com", PasswordHash: "x",
		FullName: "Test", CompanyName: "Acme", APIKeyHash: h[:], APIKeyPrefix: "sk_live_test"})
	if err != nil {
		w.t.Fatal(err)
	}
	if balanceCents > 0 {
		if _, err := w.st.Credit(ctx, persistence.NewCredit{AccountID: a.ID, Cents: balanceCents, Type: "topup", Description: "test funds"}); err != nil {
			w.t.Fatal(err)
		}
	}
	return a.ID
}

// recipients makes n distinct numbers spread over the three networks (or on one).
func recipients(n int, only carriers.Network, seed uint64) []persistence.Recipient {
	prefixes := map[carriers.Network][]uint32{
		carriers.Safaricom: {700, 710, 720, 790, 110},
		carriers.Airtel:    {730, 750, 780, 100},
		carriers.Telkom:    {770},
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	seen := map[uint32]bool{}
	out := make([]persistence.Recipient, 0, n)
	for len(out) < n {
		net := only
		if net == carriers.NetworkUnknown {
			net = carriers.Networks()[r.IntN(3)]
		}
		ps := prefixes[net]
		nsn := ps[r.IntN(len(ps))]*1_000_000 + uint32(r.IntN(1_000_000))
		if !seen[nsn] {
			seen[nsn] = true
			out = append(out, persistence.Recipient{NSN: nsn, Network: net})
		}
	}
	return out
}

func (w *world) send(acct uuid.UUID, rs []persistence.Recipient, text string) (actors.SendResult, error) {
	return w.eng.Send(context.Background(), actors.SendRequest{AccountID: acct, Recipients: rs, Message: text, Source: "api"})
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last state: %s", d, what, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// counts reads an account's live message counts.
func (w *world) counts(acct uuid.UUID) persistence.MessageCounts {
	c, err := w.st.MessageCounts(context.Background(), acct)
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

func (w *world) waitFinal(acct uuid.UUID, total int64, d time.Duration) persistence.MessageCounts {
	w.t.Helper()
	defer w.dumpOnFailure()
	var c persistence.MessageCounts
	eventually(w.t, d, "every message to reach a final state", func() (bool, string) {
		c = w.counts(acct)
		return c.Delivered+c.Failed == total && c.Queued == 0 && c.Sent == 0, fmt.Sprintf("%+v", c)
	})
	return c
}

func (w *world) balance(acct uuid.UUID) int64 {
	wl, err := w.st.Wallet(context.Background(), acct)
	if err != nil {
		w.t.Fatal(err)
	}
	return wl.BalanceCents
}

// sql runs a query returning one int64.
func (w *world) sqlInt(q string, args ...any) int64 {
	w.t.Helper()
	conn, err := pgx.Connect(context.Background(), w.dbURL)
	if err != nil {
		w.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		w.t.Fatalf("%s: %v", q, err)
	}
	return n
}

// metric returns the value of a gauge or counter with the given labels, summed over the
// series that match them.
func (w *world) metric(name string, labels map[string]string) float64 {
	w.t.Helper()
	return metricOf(w.t, w.reg, name, labels)
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	return 0
}

// dumpOnFailure logs where messages stand when the test has failed: what a hang left behind.
func (w *world) dumpOnFailure() {
	if !w.t.Failed() {
		return
	}
	conn, err := pgx.Connect(context.Background(), w.dbURL)
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT m.job_id, m.status, m.provider_status, count(*), j.status,
			EXISTS (SELECT 1 FROM open_jobs o WHERE o.job_id = j.id)
		FROM messages m JOIN jobs j ON j.id = m.job_id WHERE m.status NOT IN ('delivered', 'failed')
		GROUP BY 1, 2, 3, 5, 6`)
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var job uuid.UUID
		var st, ps, js string
		var n int64
		var open bool
		if rows.Scan(&job, &st, &ps, &n, &js, &open) == nil {
			w.t.Logf("job %s (%s, open %v): %d %s (%s)", job, js, open, n, st, ps)
		}
	}
	for _, n := range carriers.Networks() {
		l := map[string]string{"network": n.String()}
		w.t.Logf("%s link: queue %v, in flight %v, duplicates %v, breaker %v, jobs active %v", n,
			w.metric("tuma_link_queue_depth", l), w.metric("tuma_link_window_in_use", l),
			w.metric("tuma_link_duplicate_requests_total", l), w.metric("tuma_link_breaker_state", l),
			w.metric("tuma_engine_jobs_active", nil))
	}
}
