package actors_test

import (
	"context"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/carriers/sim"
)

// inFlightNetworks take a second to accept a submit: a node taking an account over finds the
// first node's latest submits marked and not yet at the network.
func inFlightNetworks(_ carriers.Network, o *sim.Options) {
	o.Latency = time.Second
	o.ReceiptDelay = 50 * time.Millisecond
}

// A node that takes over an account while the first node's submits are still on their way
// to the network settles them only once they can have arrived (TakeoverSettle after their
// mark): it asks a network that can say, and for one that cannot (SMPP) reads whether the
// first node recorded the outcome. Asked at once, the network knew nothing of them yet and
// each was sent again (a planned handoff, such as a node joining a cluster, sent messages
// twice); without asking, every one was.
func TestATakeoverWaitsForSubmitsInFlight(t *testing.T) {
	for _, c := range []struct {
		name    string
		wrap    func(map[carriers.Network]actors.Carrier) map[carriers.Network]actors.Carrier
		outcome string // of tuma_link_unsettled_checked_total once the wait is over
	}{
		{"networks that can be asked", nil, "found"},
		{"networks that cannot", withoutLookup, "recorded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorldWith(t, paced("node-a", 100), inFlightNetworks, func(w *world) { w.wrap = c.wrap })
			acct := w.account(1000_00)
			const total = 400
			res, err := w.send(acct, recipients(total, carriers.NetworkUnknown, 9), "in flight")
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, "the first node to be sending", func() (bool, string) {
				return w.accepted() >= 30, ""
			})
			opts := paced("node-b", 1000)
			opts.TakeoverSettle = 4 * time.Second // four times the networks' latency: room for a slow CI machine
			b, regB := w.secondNode(opts)
			if _, err := b.Quote(context.Background(), actors.SendRequest{AccountID: acct, Message: "x"}); err != nil {
				t.Fatal(err)
			}
			w.waitFinal(acct, total, time.Minute)
			if got := w.accepted(); got != total {
				t.Fatalf("the networks accepted %d submits for %d messages; want each exactly once", got, total)
			}
			// The first node records its submits' outcomes too, so the messages may all be final
			// before the second node's wait is over.
			if n := metricOf(t, regB, "tuma_link_unsettled_checked_total", map[string]string{"outcome": "not_yet"}); n == 0 {
				t.Errorf("the second node found none of the first node's submits not yet arrived; want those in flight waited for")
			}
			eventually(t, 10*time.Second, "the submits waited for to be settled as "+c.outcome, func() (bool, string) {
				n := metricOf(t, regB, "tuma_link_unsettled_checked_total", map[string]string{"outcome": c.outcome})
				return n > 0, ""
			})
			if got, want := w.balance(acct), int64(1000_00)-res.CostCents; got != want {
				t.Errorf("balance %d; want %d (debited once)", got, want)
			}
		})
	}
}
