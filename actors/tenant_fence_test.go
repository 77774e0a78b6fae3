package actors_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// paced caps each network at tps, so a job is still sending when another node takes over.
func paced(node string, tps float64) actors.Options {
	o := actors.Options{NodeID: node, Links: map[carriers.Network]actors.LinkOptions{}}
	for _, n := range carriers.Networks() {
		o.Links[n] = actors.LinkOptions{TPS: tps}
	}
	return o
}

// secondNode starts another engine on the world's store and networks: a second node.
func (w *world) secondNode(opts actors.Options) (*actors.Engine, *prometheus.Registry) {
	w.t.Helper()
	reg := prometheus.NewRegistry()
	eng, err := actors.Start(context.Background(), opts, actors.Deps{
		Log:   slog.New(slog.NewTextHandler(w.t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		Store: w.st, Registerer: reg, Carriers: w.sims.Carriers(),
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
