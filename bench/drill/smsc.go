package drill

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The deps drill's faults of the networks' SMSCs: one down, every one slow.

// networkOutage takes one network's SMSC down for NetworkOutage under the steady traffic
// (100 messages a second per network) and brings it back.
func (d *depsRun) networkOutage(ctx context.Context) error {
	down, outage := networks[depsDownNet], d.r.sizes.NetworkOutage
	m0, err := d.n.c.scrape(ctx)
	if err != nil {
		return err
	}
	time.Sleep(max(3*time.Second, outage/2)) // the pace before, over a window like the one during
	m1, err := d.n.c.scrape(ctx)
	if err != nil {
		return err
	}
	if err := d.n.c.simPatch(ctx, down, map[string]any{"down": true}); err != nil {
		return err
	}
	t0 := time.Now()
	d.rec.logf("%s's SMSC down for %s", down, secs(outage))
	opened, _, oerr := d.scrapeUntil(ctx, t0, 25*time.Millisecond, 5*time.Second, func(m metrics) bool {
		return m.sum(mBreaker, "network", down) == 2
	})
	// The other networks' pace in the second half of the outage: a network that is down
	// holding up the others shows more the longer it lasts.
	time.Sleep(time.Until(t0.Add(max(time.Second, outage/2))))
	mA, err := d.n.c.scrape(ctx)
	if err != nil {
		return err
	}
	time.Sleep(time.Until(t0.Add(outage)))
	mB, err := d.n.c.scrape(ctx)
	if err != nil {
		return err
	}
	if err := d.n.c.simPatch(ctx, down, map[string]any{"down": false}); err != nil {
		return err
	}
	t1 := time.Now()
	queued := mB.sum(mQueueDepth, "network", down)
	drained, _, derr := d.scrapeUntil(ctx, t1, 100*time.Millisecond, time.Minute, func(m metrics) bool {
		return m.sum(mQueueDepth, "network", down) == 0 && m.sum(mBreaker, "network", down) == 0
	})

	if oerr != nil {
		d.rec.fail("network down: breaker opens", fmt.Sprintf("tuma_link_breaker_state{%s} never 2: %v", down, oerr))
	} else {
		d.rec.value("network down: breaker opens", opened.Seconds(), "s", opened <= time.Second,
			fmt.Sprintf("%s's breaker open %s after its SMSC went down", down, secs(opened)), "≤ 1 s", "")
	}
	worst, figure := 1.0, ""
	for i, n := range networks {
		if i == depsDownNet {
			continue
		}
		before := depsRateOf(m0, m1, mDelivered, "network", n)
		during := depsRateOf(mA, mB, mDelivered, "network", n)
		ratio := during / max(before, 1e-9)
		worst = min(worst, ratio)
		figure += fmt.Sprintf("%s %.0f → %.0f delivered/s (%.0f%%); ", n, before, during, 100*ratio)
	}
	d.rec.value("network down: others' pace", 100*worst, "%", worst >= 0.8,
		figure+fmt.Sprintf("%s %.0f/s", down, depsRateOf(mA, mB, mDelivered, "network", down)), "≥ 80% of their pace before, in the outage's second half", "")
	d.rec.info("network down: jobs waiting", mB.sum(depsMetricJobsWaiting), "jobs",
		fmt.Sprintf("%.0f jobs waiting for a dispatch slot of their tenant at the end of the outage, %.0f alive", mB.sum(depsMetricJobsWaiting), mB.sum(mJobsActive)))
	failed := mB.sum(mFailed, "network", down, "stage", "submit") - m1.sum(mFailed, "network", down, "stage", "submit")
	d.rec.value("network down: nothing failed", failed, "messages", failed == 0,
		fmt.Sprintf("%.0f %s messages failed at submit during the outage; %.0f waiting in its queue at the end", failed, down, queued),
		"0 (they wait for the network)", "messages failed because their network was unreachable")
	if derr != nil {
		d.rec.fail("network back: queue drained", fmt.Sprintf("%s's queue not empty with its breaker closed: %v", down, derr))
	} else {
		d.rec.value("network back: queue drained", drained.Seconds(), "s", drained <= 30*time.Second,
			fmt.Sprintf("%.0f queued messages of %s sent, its breaker closed, %s after it came back", queued, down, secs(drained)), "≤ 30 s", "")
	}
	return nil
}

// depsRateOf is the per-second increase of the series name (labels match) from a to b.
func depsRateOf(a, b metrics, name string, match ...string) float64 {
	dt := b.at.Sub(a.at).Seconds()
	if dt <= 0 {
		return 0
	}
	return (b.sum(name, match...) - a.sum(name, match...)) / dt
}

// slowNetworks makes every SMSC take 2 s a submit for SlowLoad while the steady traffic goes
// on and one tenant sends 10,000 recipients a second: nearly 70 times what the links can submit (a
// window of 100 a network, 2 s each), so the backlog grows, and it must grow in PostgreSQL,
// not in the node's memory.
func (d *depsRun) slowNetworks(ctx context.Context) error {
	load := d.r.sizes.SlowLoad
	m0, err := d.n.c.scrape(ctx)
	if err != nil {
		return err
	}
	if err := d.n.c.simAll(ctx, map[string]any{"latency_ms": 2000}); err != nil {
		return err
	}
	start := time.Now()
	d.rec.logf("every SMSC slow (2 s a submit) for %s, with a bulk send of %d every second", secs(load), depsBulkSize)
	bctx, stopBulk := context.WithCancel(ctx)
	var bulk sync.WaitGroup
	bulk.Go(func() {
		for i := 0; bctx.Err() == nil; i++ {
			s := send{t: d.bulk, key: fmt.Sprintf("deps-%s-bulk-%d", d.r.id, i), n: depsBulkSize,
				body: sendBody(500_000+i*depsBulkSize%400_000, depsBulkSize, "Drill: a slow network must not fill the memory")}
			bulk.Go(func() { d.tr.ld.do(ctx, s) })
			select {
			case <-bctx.Done():
			case <-time.After(time.Until(start.Add(time.Duration(i+1) * time.Second))):
			}
		}
	})
	var samples []metrics
	for time.Since(start) < load {
		if m, err := d.n.c.scrape(ctx); err == nil {
			samples = append(samples, m)
		}
		select {
		case <-ctx.Done():
			stopBulk()
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	stopBulk()
	bulk.Wait()
	if err := d.n.c.simAll(ctx, map[string]any{"latency_ms": 20}); err != nil {
		return err
	}
	if len(samples) < 4 {
		d.rec.fail("slow networks: memory", fmt.Sprintf("only %d scrapes of /metrics answered", len(samples)))
		return nil
	}
	base := m0.sum(mRSS)
	var peak, halfPeak float64
	half := samples[len(samples)/2].sum(mRSS)
	for i, m := range samples {
		peak = max(peak, m.sum(mRSS))
		if i >= len(samples)/2 {
			halfPeak = max(halfPeak, m.sum(mRSS))
		}
	}
	last := samples[len(samples)-1]
	accepted := last.sum(mAccepted) - m0.sum(mAccepted)
	submitted := last.sum(mSubmitted) - m0.sum(mSubmitted)
	backlog := last.sum(mBacklog)
	d.rec.info("slow networks: backlog", backlog, "messages",
		fmt.Sprintf("%s messages accepted, %s submitted in %s; %s waiting at the end", count(int64(accepted)), count(int64(submitted)),
			secs(time.Since(start)), count(int64(backlog))))
	growth := peak - base
	d.rec.value("slow networks: memory", growth/(1<<20), "MB", growth <= depsRSSGrowth,
		fmt.Sprintf("RSS %s before, peak %s (+%s) with the backlog growing", mb(base), mb(peak), mb(growth)),
		"≤ +"+mb(depsRSSGrowth), "the node's memory grew with the backlog")
	late := halfPeak - half
	d.rec.value("slow networks: memory flat", late/(1<<20), "MB", late <= depsRSSLate,
		fmt.Sprintf("RSS %s at half time, peak %s after (+%s)", mb(half), mb(halfPeak), mb(late)),
		"≤ +"+mb(depsRSSLate)+" in the second half", "the node's memory still grew in the second half")
	return nil
}

// Memory bounds of the slow networks. The backlog (100,000 messages in the short form,
// nearly 400,000 in the full one) lives in PostgreSQL; the node holds at most the jobs in its
// tenants' dispatch slots (8 per tenant, the bulk tenant's filled within 8 s) and the links'
// windows, so its RSS rises while those fill (+17 and +28 MB measured) and then stays flat
// (+3 and +5 MB in the second half). Keeping every backlog message in memory would cost at
// least 150 bytes each.
const (
	depsRSSGrowth = 96 << 20
	depsRSSLate   = 24 << 20
)

// depsMetricJobsWaiting is the jobs waiting for a dispatch slot of their tenant.
const depsMetricJobsWaiting = "tuma_engine_jobs_waiting"
