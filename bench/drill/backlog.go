package drill

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// backlogDrill: a backlog of undelivered messages in many open jobs over many tenants, built
// by real sends while every simulated network is down, then kill -9 and a start. The node
// must serve at once (/healthz within 1 s, a new send's 202 within 2 s), drain the resumed
// backlog at the speed of fresh work, let other tenants' new sends through without waiting
// for it, and end with every message final exactly once, counters equal to recounts and
// ledgers balanced. Then the same load again with kill -9 at random moments.
func backlogDrill(ctx context.Context, r *runner, rec *recorder) error {
	sz := r.sizes
	n, err := r.node("backlog", map[string]string{"TUMA_SIM_LATENCY": sz.BacklogLatency.String()})
	if err != nil {
		return err
	}
	if _, err := n.start(ctx); err != nil {
		return err
	}
	perTenant := sz.BacklogMessages/sz.BacklogTenants + sz.BacklogMessages/10
	tenants, err := r.tenants(ctx, n.c, "backlog", sz.BacklogTenants, perTenant+500)
	if err != nil {
		return err
	}
	probes, err := r.tenants(ctx, n.c, "backlog-probe", 1, 500)
	if err != nil {
		return err
	}
	db, err := n.db(ctx)
	if err != nil {
		return err
	}
	defer db.Close(context.WithoutCancel(ctx))

	// The fresh-dispatch rate of these links: messages accepted by this process while the
	// networks are down, dispatched once they come back.
	calib := max(sz.BacklogMessages/10, 10_000)
	fresh, calibOutcomes, err := queueThenDrain(ctx, n, db, backlogSends(r, "calib", tenants, calib, max(1, sz.BacklogJobs/10)))
	if err != nil {
		return fmt.Errorf("fresh-dispatch rate: %w", err)
	}
	rec.info("fresh-dispatch rate", fresh.rate, "messages/s",
		fmt.Sprintf("%s msg/s: %s messages queued with the networks down, submitted once they came back", rate(fresh.rate), count(int64(calib))))

	// The backlog: every network down, then the sends.
	if err := n.c.simAll(ctx, map[string]any{"down": true}); err != nil {
		return err
	}
	before, _ := n.c.scrape(ctx)
	buildStart := time.Now()
	sends := backlogSends(r, "backlog", tenants, sz.BacklogMessages, sz.BacklogJobs)
	ld := newLoad(n.c, 5*time.Minute)
	ld.run(ctx, 16, plan(sends))
	built := time.Since(buildStart)
	if undef, ex := undefined(ld.results()); undef > 0 {
		return fmt.Errorf("%d backlog sends never answered definitely: %s", undef, ex)
	}
	var open, queued int64
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM open_jobs), coalesce((SELECT sum(recipients_count) FROM jobs
		WHERE id IN (SELECT job_id FROM open_jobs)), 0)`).Scan(&open, &queued); err != nil {
		return fmt.Errorf("read the backlog: %w", err)
	}
	rec.value("backlog", float64(queued), "messages", queued >= int64(sz.BacklogMessages) && open >= int64(sz.BacklogJobs),
		fmt.Sprintf("%s undelivered messages in %s open jobs of %d tenants, built by %s sends in %s", count(queued), count(open),
			len(tenants), count(int64(len(sends))), secs(built)),
		fmt.Sprintf("≥ %s in ≥ %s jobs", count(int64(sz.BacklogMessages)), count(int64(sz.BacklogJobs))), "")
	// Memory with the backlog queued (after the accept path's garbage has had a collection).
	if held, err := settledRSS(ctx, n.c); err == nil {
		growth := held - before.sum(mRSS)
		rec.value("RSS with the backlog queued", held/(1<<20), "MB", growth <= sz.BacklogRSSGrowth,
			fmt.Sprintf("%s with %s messages queued (%s before them)", mb(held), count(queued), mb(before.sum(mRSS))),
			fmt.Sprintf("≤ %s growth", mb(sz.BacklogRSSGrowth)), "memory grows with the backlog")
	}

	// kill -9, then a start with the networks up: serve first, recover behind.
	if err := n.kill(); err != nil {
		return err
	}
	if err := n.launch(); err != nil {
		return err
	}
	started := n.lastStart()
	probe := startProbe(ctx, n, probes[0], r.id)
	st, err := n.waitServing(ctx, started)
	if err != nil {
		return err
	}
	rec.value("restart → /healthz", st.healthz.Seconds(), "s", st.healthz <= time.Second,
		fmt.Sprintf("%s with %s messages to recover", secs(st.healthz), count(queued)), "≤ 1 s", "")
	first := <-probe.first
	rec.value("restart → first new send's 202", first.Seconds(), "s", first > 0 && first <= 2*time.Second,
		fmt.Sprintf("%s from the start to a new tenant's 1-recipient 202", secs(first)), "≤ 2 s", firstOf(probe.err(), "no 202 in time"))

	// A new process counts its submits from zero, and it may submit some before the first
	// scrape: the count starts at 0, not at what that scrape sees.
	drained, err := drain(ctx, n, db, queued, started, 0)
	probe.stop()
	if err != nil {
		rec.fail("backlog drain rate", "the backlog did not drain after the restart: "+err.Error())
		return nil
	}
	ratio := drained.rate / fresh.rate
	rec.value("backlog drain rate", drained.rate, "messages/s", ratio >= 0.9,
		fmt.Sprintf("%s msg/s = %.0f%% of fresh dispatch; all %s submitted %s after the start", rate(drained.rate), 100*ratio,
			count(queued), secs(drained.took)), "≥ 90% of fresh", "")
	if m, err := n.c.scrape(ctx); err == nil {
		rec.info("recovery", m.sum(mRecoverySecs), "s", fmt.Sprintf("recovery took %.1f s; %s messages resumed",
			m.sum(mRecoverySecs), count(int64(m.sum(mResumedMessage)))))
	}
	delays, err := probe.delays(ctx, db)
	if err != nil {
		return err
	}
	if len(delays) > 0 {
		worst := slices.Max(delays)
		rec.value("new sends during the drain", worst.Seconds(), "s", worst <= sz.ProbeDelay,
			fmt.Sprintf("%d sends of another tenant: accepted → submitted p50 %s, max %s", len(delays), secs(percentile(delays, 50)), secs(worst)),
			"≤ "+secs(sz.ProbeDelay), "a new send waited behind another tenant's backlog")
	} else {
		rec.fail("new sends during the drain", "no probe send was accepted during the drain")
	}
	if err := r.checkInvariants(ctx, n, rec, &keyCheck{outcomes: append(calibOutcomes, ld.results()...)}, defaultSettling()); err != nil {
		return err
	}
	return backlogKills(ctx, r, rec)
}

// backlogKills is the backlog's load again on a node of its own, killed at random moments
// while the backlog builds and drains: every restart must serve within 2 s, and nothing may
// be lost or charged twice.
func backlogKills(ctx context.Context, r *runner, rec *recorder) error {
	sz := r.sizes
	n, err := r.node("backlog-kills", map[string]string{"TUMA_SIM_LATENCY": sz.BacklogLatency.String()})
	if err != nil {
		return err
	}
	if _, err := n.start(ctx); err != nil {
		return err
	}
	tenants, err := r.tenants(ctx, n.c, "backlog-kills", sz.BacklogTenants, sz.BacklogMessages/sz.BacklogTenants+sz.BacklogMessages/10+500)
	if err != nil {
		return err
	}
	if err := n.c.simAll(ctx, map[string]any{"down": true}); err != nil {
		return err
	}
	sends := backlogSends(r, "kills", tenants, sz.BacklogMessages, sz.BacklogJobs)
	ld := newLoad(n.c, 5*time.Minute)
	var wg sync.WaitGroup
	loadDone := make(chan struct{})
	wg.Go(func() {
		defer close(loadDone)
		ld.run(ctx, 16, plan(sends))
	})
	// The kills come at random moments of the whole run: while the backlog builds (the
	// networks held down) and while it drains once the load has ended.
	var restarts []startTimes
	start := time.Now()
	building := loadDone // nil once the load has ended and the networks are back up
	for k := 0; k < sz.BacklogKills; k++ {
		due := time.After(time.Duration((0.2 + 1.6*r.float()) * float64(sz.BacklogKillEvery)))
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-building:
				building = nil
				if err := n.c.simAll(ctx, map[string]any{"down": false}); err != nil {
					return err
				}
			case <-due:
				waiting = false
			}
		}
		if err := n.kill(); err != nil {
			return err
		}
		st, err := n.start(ctx)
		if err != nil {
			return fmt.Errorf("restart %d: %w", k+1, err)
		}
		restarts = append(restarts, st)
		phase := "draining"
		// The simulated networks come back up with the process: hold the backlog while it
		// builds (the wait above brings them back when the load ends).
		if building != nil {
			phase = "building"
			if err := n.c.simAll(ctx, map[string]any{"down": true}); err != nil {
				return err
			}
		}
		rec.logf("kill -9 #%d at %s (%s), %s messages accepted: /healthz %s, /readyz %s", k+1, secs(time.Since(start)),
			phase, count(ld.accepted.Load()), secs(st.healthz), secs(st.readyz))
	}
	wg.Wait()
	if err := n.c.simAll(ctx, map[string]any{"down": false}); err != nil {
		return err
	}
	rec.info("load with kills", float64(ld.accepted.Load()), "messages",
		fmt.Sprintf("%s messages in %s sends; answers %s", count(ld.accepted.Load()), count(int64(len(ld.results()))), ld.codeList()))
	restartRows(rec, restarts, sz.BacklogKills)
	return r.checkInvariants(ctx, n, rec, &keyCheck{outcomes: ld.results()}, defaultSettling())
}

// backlogSends splits total messages into jobs sends of about equal size, over the tenants in
// turn; each job's recipients are distinct.
func backlogSends(r *runner, label string, tenants []*tenant, total, jobs int) []send {
	out := make([]send, 0, jobs)
	per := total / jobs
	for i := range jobs {
		size := per
		if i < total%jobs {
			size++
		}
		out = append(out, send{t: tenants[i%len(tenants)], key: fmt.Sprintf("%s-%s-%d", label, r.id, i), n: size,
			body: sendBody(i*size, size, "Drill: your statement is ready")})
	}
	return out
}

// drainResult is how fast submitted messages rose while a queue drained.
type drainResult struct {
	rate float64       // messages/s between 10% and 90% of the queue
	took time.Duration // from since to the whole queue submitted
}

// queueThenDrain sends with every network down, then brings them back and measures the
// drain; it waits for every job to finish and returns the sends' outcomes too.
func queueThenDrain(ctx context.Context, n *node, db *pgx.Conn, sends []send) (drainResult, []outcome, error) {
	if err := n.c.simAll(ctx, map[string]any{"down": true}); err != nil {
		return drainResult{}, nil, err
	}
	ld := newLoad(n.c, 5*time.Minute)
	ld.run(ctx, 16, plan(sends))
	outcomes := ld.results()
	if undef, ex := undefined(outcomes); undef > 0 {
		return drainResult{}, outcomes, fmt.Errorf("%d sends never answered definitely: %s", undef, ex)
	}
	if err := n.c.simAll(ctx, map[string]any{"down": false}); err != nil {
		return drainResult{}, outcomes, err
	}
	res, err := drain(ctx, n, db, ld.accepted.Load(), time.Now(), -1)
	if err != nil {
		return res, outcomes, err
	}
	if _, left, err := settle(ctx, db, defaultSettling()); err != nil {
		return res, outcomes, fmt.Errorf("settle: %w (left %+v)", err, left)
	}
	return res, outcomes, nil
}

// drain samples the node's submitted messages until want more than base (< 0: the first
// sample) have been submitted, and measures the rate between 10% and 90% of them: the ramp-up (breakers
// closing, jobs resuming) and the tail (the last jobs) are not the links' speed.
func drain(ctx context.Context, n *node, db *pgx.Conn, want int64, since time.Time, base float64) (drainResult, error) {
	type point struct {
		at time.Time
		v  float64
	}
	var pts []point
	deadline := time.Now().Add(15 * time.Minute)
	// Stalled: not 1% of the queue submitted in 30 s (a trickle of other sends is not a drain).
	step := max(1, float64(want)/100)
	var mark float64
	markAt := time.Now()
	for time.Now().Before(deadline) {
		m, err := n.c.scrape(ctx)
		if err == nil {
			v := m.sum(mSubmitted)
			if base < 0 {
				base = v
			}
			if v-base-mark >= step {
				mark, markAt = v-base, time.Now()
			}
			pts = append(pts, point{m.at, v - base})
			if v-base >= float64(want) {
				break
			}
		}
		if time.Since(markAt) > 30*time.Second {
			return drainResult{}, fmt.Errorf("submits stalled at %.0f of %d", mark, want)
		}
		select {
		case <-ctx.Done():
			return drainResult{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if len(pts) < 2 || pts[len(pts)-1].v < float64(want) {
		return drainResult{}, errors.New("the queue did not drain within 15 minutes")
	}
	at := func(share float64) point {
		for _, p := range pts {
			if p.v >= share*float64(want) {
				return p
			}
		}
		return pts[len(pts)-1]
	}
	lo, hi := at(0.1), at(0.9)
	res := drainResult{took: pts[len(pts)-1].at.Sub(since)}
	if d := hi.at.Sub(lo.at).Seconds(); d > 0 {
		res.rate = (hi.v - lo.v) / d
	}
	return res, nil
}

// settledRSS is the node's resident memory once it stops falling (a few scrapes apart), so
// garbage the accept path left is not counted as memory the backlog holds.
func settledRSS(ctx context.Context, c *client) (float64, error) {
	var last float64
	for i := 0; i < 20; i++ {
		m, err := c.scrape(ctx)
		if err != nil {
			return 0, err
		}
		v := m.sum(mRSS)
		if i > 2 && v >= last {
			return v, nil
		}
		last = v
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return last, nil
}

func rate(v float64) string { return count(int64(v)) }
