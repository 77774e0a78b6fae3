package actors_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// paced caps each network at tps, so a job is still sending when another node takes over.
// A node taking an account over asks about another's marked submits only TakeoverSettle after
// their marks: a marked submit waits for its rate slot (up to markAheadFor of the link's
// sending is marked ahead, link.go), and asked at once (0) the network would not know it yet.
func paced(node string, tps float64) actors.Options {
	o := actors.Options{NodeID: node, Links: map[carriers.Network]actors.LinkOptions{},
		TakeoverSettle: 3 * time.Second} // a slow mark under -race on a busy CI machine, many times over
	for _, n := range carriers.Networks() {
		o.Links[n] = actors.LinkOptions{TPS: tps}
	}
	return o
}

// secondNode starts another engine on the world's store and networks: a second node.
func (w *world) secondNode(opts actors.Options) (*actors.Engine, *prometheus.Registry) {
	w.t.Helper()
	return w.secondNodeOn(opts, w.st)
}

// secondNodeOn is secondNode with the store the second node's engine gets (its carriers
// wrapped as the first node's).
func (w *world) secondNodeOn(opts actors.Options, st actors.Store) (*actors.Engine, *prometheus.Registry) {
	w.t.Helper()
	reg := prometheus.NewRegistry()
	cs := w.sims.Carriers()
	if w.wrap != nil {
		cs = w.wrap(cs)
	}
	eng, err := actors.Start(context.Background(), opts, actors.Deps{
		Log:   slog.New(slog.NewTextHandler(w.t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		Store: st, Registerer: reg, Carriers: cs,
	})
	if err != nil {
		w.t.Fatalf("start the second node: %v", err)
	}
	w.t.Cleanup(func() { _ = eng.Stop(context.Background()) })
	return eng, reg
}

// A node that takes over an account while another is sending for it (the cluster moved it, or
// the first node paused past its eviction) fences the first: its remaining submits are not
// marked and not sent, and the second sends each of the rest exactly once, asking the network
// about those the first marked.
func TestATakenOverTenantSendsNothingMore(t *testing.T) {
	w := newWorld(t, paced("node-a", 100), slowNetworks)
	acct := w.account(1000_00)
	const total = 600
	res, err := w.send(acct, recipients(total, carriers.NetworkUnknown, 7), "fenced or not")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the first node to be sending", func() (bool, string) {
		n := w.accepted()
		return n >= 30, ""
	})
	b, regB := w.secondNode(paced("node-b", 1000)) // its recovery wakes the account: it takes the fence
	if _, err := b.Quote(context.Background(), actors.SendRequest{AccountID: acct, Message: "x"}); err != nil {
		t.Fatal(err)
	}
	w.waitFinal(acct, total, time.Minute)
	if got := w.accepted(); got != total {
		t.Fatalf("the networks accepted %d submits for %d messages; want each exactly once", got, total)
	}
	fenced := w.metric("tuma_cluster_fenced_writes_total", map[string]string{"write": "mark"})
	if fenced == 0 {
		t.Errorf("the first node had no submit fenced; want its queued submits refused")
	}
	if n := w.metric("tuma_cluster_handoffs_total", map[string]string{"why": "fenced"}); n != 1 {
		t.Errorf("the first node counted %v tenants handed off as fenced; want 1", n)
	}
	if n := metricOf(t, regB, "tuma_cluster_takeovers_total", nil); n != 1 {
		t.Errorf("the second node counted %v takeovers; want 1 (the account was the first node's)", n)
	}
	t.Logf("first node: %v submits fenced; second node asked the networks about %v of the first's marked submits",
		fenced, metricOf(t, regB, "tuma_link_unsettled_checked_total", nil))
	if got, want := w.balance(acct), int64(1000_00)-res.CostCents; got != want {
		t.Errorf("balance %d; want %d (debited once)", got, want)
	}
}

// gatedFence holds the engine's first TakeFence of one account until release is closed: a
// tenant incarnation that has started but not yet taken the account.
type gatedFence struct {
	actors.Store
	acct             uuid.UUID
	entered, release chan struct{}
	once             sync.Once
}

func (g *gatedFence) TakeFence(ctx context.Context, acct uuid.UUID, node string) (persistence.Fence, error) {
	if acct == g.acct {
		g.once.Do(func() {
			close(g.entered)
			<-g.release
		})
	}
	return g.Store.TakeFence(ctx, acct, node)
}

// A job the first node commits after the second node's incarnation of the account has started
// but before it takes the fence has a later id than that start: it is an earlier
// incarnation's all the same, and the second node resumes it (it once stayed queued for good:
// the cluster-kill drill's 47 messages that never moved).
func TestAJobCommittedBeforeTheTakeoverIsResumed(t *testing.T) {
	w := newWorld(t, paced("node-a", 100), slowNetworks)
	acct := w.account(1000_00)
	if _, err := w.send(acct, recipients(300, carriers.NetworkUnknown, 7), "before node b"); err != nil {
		t.Fatal(err)
	}
	gate := &gatedFence{Store: w.st, acct: acct, entered: make(chan struct{}), release: make(chan struct{})}
	w.secondNodeOn(paced("node-b", 1000), gate) // its recovery wakes the account's tenant
	select {
	case <-gate.entered:
	case <-time.After(10 * time.Second):
		close(gate.release)
		t.Fatal("the second node's tenant never asked for the account's fence")
	}
	_, err := w.send(acct, recipients(50, carriers.NetworkUnknown, 8), "node a still holds the account")
	close(gate.release)
	if err != nil {
		t.Fatal(err)
	}
	w.waitFinal(acct, 350, time.Minute)
	if got := w.accepted(); got != 350 {
		t.Fatalf("the networks accepted %d submits for 350 messages; want each exactly once", got)
	}
}

// A send reaching a tenant whose account another node has taken over is refused with
// ErrFenced, writing nothing; the caller's retry is served (here by a new incarnation).
func TestASendToAReplacedTenantWritesNothing(t *testing.T) {
	w := newWorld(t, actors.Options{NodeID: "node-a"}, nil)
	acct := w.account(1000_00)
	rs := recipients(2, carriers.Safaricom, 3)
	if _, err := w.send(acct, rs, "first"); err != nil {
		t.Fatal(err)
	}
	w.waitFinal(acct, 2, 30*time.Second) // the tenant is idle: only the send below can meet the fence
	if _, err := w.st.TakeFence(context.Background(), acct, "node-b"); err != nil {
		t.Fatal(err)
	}
	before := w.balance(acct)
	_, err := w.send(acct, rs, "second")
	if !errors.Is(err, actors.ErrFenced) || !errors.Is(err, persistence.ErrFenced) {
		t.Fatalf("send after the takeover: %v; want ErrFenced", err)
	}
	if got := w.balance(acct); got != before {
		t.Errorf("balance %d after a fenced send; want %d", got, before)
	}
	if n := w.metric("tuma_cluster_fenced_writes_total", map[string]string{"write": "debit"}); n != 1 {
		t.Errorf("%v debits counted fenced; want 1", n)
	}
	eventually(t, 10*time.Second, "a retry to be served", func() (bool, string) {
		_, err := w.send(acct, rs, "second")
		return err == nil, ""
	})
	w.waitFinal(acct, 4, 30*time.Second)
}

// metricOf sums a counter or gauge's series in reg matching labels.
func metricOf(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			sum += value(m)
		}
	}
	return sum
}

// A tenant with nothing to do stops after TenantIdle, and comes back on the next command.
func TestAnIdleTenantStops(t *testing.T) {
	w := newWorld(t, actors.Options{TenantIdle: 200 * time.Millisecond}, nil)
	acct := w.account(1000_00)
	rs := recipients(1, carriers.Safaricom, 5)
	if _, err := w.send(acct, rs, "hi"); err != nil {
		t.Fatal(err)
	}
	w.waitFinal(acct, 1, 30*time.Second)
	eventually(t, 10*time.Second, "the idle tenant to stop", func() (bool, string) {
		n := w.metric("tuma_engine_tenants_active", nil)
		return n == 0, fmt.Sprintf("%v tenants active", n)
	})
	if _, err := w.send(acct, rs, "again"); err != nil {
		t.Fatalf("a send after the tenant stopped: %v", err)
	}
	w.waitFinal(acct, 2, 30*time.Second)
}

// A tenant fenced while its node still owns the account stops with its jobs (another node's
// incarnation took the account, then gave it up: a handoff racing a retiring tenant). With no
// command to wake the account, the orphan sweep finds its unfinished jobs under the other
// node's fence and wakes it; the rest of the messages go out, each once.
func TestTheOrphanSweepWakesAnAccountNobodyRuns(t *testing.T) {
	opts := paced("node-a", 100)
	opts.OrphanSweep = 200 * time.Millisecond
	w := newWorld(t, opts, slowNetworks)
	acct := w.account(1000_00)
	const total = 300
	res, err := w.send(acct, recipients(total, carriers.NetworkUnknown, 7), "orphaned for a while")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the node to be sending", func() (bool, string) {
		return w.accepted() >= 30, ""
	})
	if _, err := w.st.TakeFence(context.Background(), acct, "node-x"); err != nil {
		t.Fatal(err)
	}
	w.waitFinal(acct, total, time.Minute)
	if got := w.accepted(); got != total {
		t.Fatalf("the networks accepted %d submits for %d messages; want each exactly once", got, total)
	}
	if n := w.metric("tuma_engine_orphaned_accounts_woken_total", nil); n != 1 {
		t.Errorf("%v accounts counted woken by the sweep; want 1", n)
	}
	if got, want := w.balance(acct), int64(1000_00)-res.CostCents; got != want {
		t.Errorf("balance %d; want %d (debited once)", got, want)
	}
}
