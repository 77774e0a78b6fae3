package actors_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
)

// A node that finds it was paused past its limit submits nothing more, even what it had
// marked, and takes no command; the node that takes its account over sends every message
// exactly once.
func TestALapsedNodeSubmitsNothingMore(t *testing.T) {
	w := newWorld(t, paced("node-a", 100), slowNetworks)
	acct := w.account(1000_00)
	const total = 600
	res, err := w.send(acct, recipients(total, carriers.NetworkUnknown, 7), "paused or not")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the first node to be sending", func() (bool, string) {
		return w.accepted() >= 30, ""
	})
	actors.Lapse(w.eng)
	if err := w.eng.ClusterHealth(); !errors.Is(err, actors.ErrLapsed) {
		t.Fatalf("ClusterHealth = %v; want ErrLapsed", err)
	}
	before := w.balance(acct)
	if _, err := w.send(acct, recipients(1, carriers.Safaricom, 9), "after the pause"); !errors.Is(err, actors.ErrLapsed) || !errors.Is(err, actors.ErrFenced) {
		t.Fatalf("send to a lapsed node: %v; want ErrLapsed (a fenced refusal: nothing written)", err)
	}
	if got := w.balance(acct); got != before {
		t.Fatalf("balance %d after a refused send; want %d", got, before)
	}
	// What was on its way to the networks at the lapse may still arrive; nothing after it.
	eventually(t, 10*time.Second, "the submits in flight at the lapse to answer", func() (bool, string) {
		return w.metric("tuma_link_window_in_use", nil) == 0, ""
	})
	settled := w.accepted()
	time.Sleep(300 * time.Millisecond) // an observation window: at 100 TPS, 30 more would have gone
	if got := w.accepted(); got != settled {
		t.Fatalf("the lapsed node submitted %d more after its lapse; want none", got-settled)
	}
	if settled >= total {
		t.Fatalf("all %d messages went before the lapse; the test proves nothing", total)
	}
	b, _ := w.secondNode(paced("node-b", 1000)) // its recovery wakes the account and takes it over
	if _, err := b.Quote(context.Background(), actors.SendRequest{AccountID: acct, Message: "x"}); err != nil {
		t.Fatal(err)
	}
	w.waitFinal(acct, total, time.Minute)
	if got := w.accepted(); got != total {
		t.Fatalf("the networks accepted %d submits for %d messages; want each exactly once", got, total)
	}
	if got, want := w.balance(acct), int64(1000_00)-res.CostCents; got != want {
		t.Errorf("balance %d; want %d (debited once)", got, want)
	}
	refused := w.metric("tuma_cluster_fenced_writes_total", map[string]string{"write": "submit"}) +
		w.metric("tuma_cluster_fenced_writes_total", map[string]string{"write": "mark"})
	t.Logf("the lapsed node: %d accepted before the lapse, %v submits refused", settled, refused)
}
