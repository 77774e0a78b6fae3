// Simulated networks under operator control (the admin API's /admin/sim).

package app

import (
	"time"

	"github.com/tuma-sms/tuma/actors/simlink"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/transport/api/admin"
)

// simControl adapts the simulators to the front door's Simulators.
type simControl struct{ set *simlink.Set }

func (c simControl) Networks() []admin.SimNetwork {
	var out []admin.SimNetwork
	for _, n := range carriers.Networks() {
		out = append(out, c.describe(n))
	}
	return out
}

func (c simControl) describe(n carriers.Network) admin.SimNetwork {
	net := c.set.Network(n)
	o, st := net.Options(), net.Stats()
	return admin.SimNetwork{Network: n.String(), LatencyMS: ms(o.Latency), TPS: o.TPS, FailureRate: o.FailureRate,
		RejectRate: o.RejectRate, ThrottleRate: o.ThrottleRate, LostAnswerRate: o.LostAnswerRate,
		ReceiptDelayMS: ms(o.ReceiptDelay), Down: o.Down,
		Submits: st.Submits, Accepted: st.Accepted, Throttled: st.Throttled, Receipts: st.Receipts}
}

func (c simControl) Configure(n carriers.Network, p admin.SimPatch) (admin.SimNetwork, error) {
	net := c.set.Network(n)
	o := net.Options()
	set := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	setDur := func(dst *time.Duration, v *float64) {
		if v != nil {
			*dst = time.Duration(*v * float64(time.Millisecond))
		}
	}
	setDur(&o.Latency, p.LatencyMS)
	set(&o.TPS, p.TPS)
	set(&o.FailureRate, p.FailureRate)
	set(&o.RejectRate, p.RejectRate)
	set(&o.ThrottleRate, p.ThrottleRate)
	set(&o.LostAnswerRate, p.LostAnswerRate)
	if p.ReceiptDelayMS != nil {
		setDur(&o.ReceiptDelay, p.ReceiptDelayMS)
		o.ReceiptJitter = o.ReceiptDelay / 2
	}
	if p.Down != nil {
		o.Down = *p.Down
	}
	if err := net.Configure(o); err != nil {
		return admin.SimNetwork{}, err
	}
	return c.describe(n), nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
