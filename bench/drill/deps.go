package drill

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// depsDrill takes the node's dependencies away one at a time while tenants keep sending,
// each send with its own Idempotency-Key and retried until definite. The node runs on a
// PostgreSQL cluster and a Redis the drill owns, so it can stop them:
//
//   - PostgreSQL stopped (immediate shutdown, as a crash): writes answer 503 with
//     Retry-After, /healthz keeps answering, and once PostgreSQL is back the engine takes
//     sends again by itself and the retried sends complete;
//   - Redis killed: sends keep being accepted, rate limits are enforced per node, and the
//     node reconnects when Redis is back;
//   - one network's SMSC down: its breaker opens within a second, the other networks keep
//     their pace, nothing fails for the outage and its queue drains once it is back;
//   - every SMSC slow (2 s a submit) under sustained bulk load: the node's memory stays
//     bounded while the backlog grows in PostgreSQL.
//
// At the end every accepted message must be final exactly once, every ledger balanced and
// no Idempotency-Key charged twice: nothing acknowledged was lost.
func depsDrill(ctx context.Context, r *runner, rec *recorder) error {
	d := &depsRun{r: r, rec: rec}
	defer d.close()
	if err := d.setUp(ctx); err != nil {
		return err
	}
	tctx, cancel := context.WithCancel(ctx)
	d.cancelTraffic = cancel
	d.tr.start(tctx, depsWorkers)
	if _, err := depsWait(ctx, 30*time.Second, func() bool { return d.tr.ld.accepted.Load() > 0 }); err != nil {
		return fmt.Errorf("no send accepted before the drill: %s", d.tr.ld.codeList())
	}
	time.Sleep(depsWarmUp) // a steady state before the first fault
	for _, phase := range []func(context.Context) error{d.pgOutage, d.redisOutage, d.networkOutage, d.slowNetworks} {
		if err := phase(ctx); err != nil {
			return err
		}
	}
	d.tr.stop()
	d.pgOutageSends()
	rec.info("answers", float64(d.tr.ld.attempts.Load()), "attempts", d.tr.ld.codeList())
	return r.checkInvariants(ctx, d.n, rec, &keyCheck{outcomes: d.tr.ld.results()}, defaultSettling())
}

const (
	depsWorkers   = 8
	depsRate      = 10.0 // sends per second, …
	depsSize      = 30   // … of this many recipients: 100 messages a second per network
	depsWarmUp    = 2 * time.Second
	depsBulkSize  = 10_000 // recipients of each bulk send while the networks are slow
	depsRateLimit = 50     // TUMA_RATE_LIMIT_RPS of the node (burst twice that)
	// depsDownNet is the network the drill takes down (index into networks).
	depsDownNet = 0
)

// depsRun is one run of the deps drill: the private stores, the node and its traffic.
type depsRun struct {
	r   *runner
	rec *recorder

	pg            *pgCluster
	rs            *redisServer
	n             *node
	tr            *depsTraffic
	burst         *tenant // spends its rate limit while Redis is down
	bulk          *tenant // sends the bulk while the networks are slow
	cancelTraffic context.CancelFunc

	pgDown, pgBack time.Time
}

// setUp starts the private PostgreSQL and Redis, a node on them, and funds the tenants.
func (d *depsRun) setUp(ctx context.Context) error {
	var err error
	if d.pg, err = newPGCluster(ctx, d.r.cfg.PGBin, filepath.Join(d.r.work, "deps-postgres.log")); err != nil {
		return fmt.Errorf("private PostgreSQL: %w", err)
	}
	if err := d.pg.start(ctx); err != nil {
		return fmt.Errorf("private PostgreSQL: %w", err)
	}
	if d.rs, err = newRedisServer(d.r.cfg.RedisServer, filepath.Join(d.r.work, "deps-redis.log")); err != nil {
		return fmt.Errorf("private Redis: %w", err)
	}
	if err := d.rs.start(ctx); err != nil {
		return fmt.Errorf("private Redis: %w", err)
	}
	d.rec.logf("private PostgreSQL on port %d, private Redis on port %d", d.pg.port, d.rs.port)
	d.n, err = d.r.node("deps", map[string]string{
		"TUMA_DATABASE_URL": d.pg.url("tuma_drill_deps"),
		"TUMA_REDIS_URL":    d.rs.url(),
		// A real limit, far above the drill's own pace, so Redis's absence has limits to fall back on.
		"TUMA_RATE_LIMIT_RPS":   fmt.Sprint(depsRateLimit),
		"TUMA_RATE_LIMIT_BURST": fmt.Sprint(2 * depsRateLimit),
	})
	if err != nil {
		return err
	}
	if _, err := d.n.start(ctx); err != nil {
		return err
	}
	tenants, err := d.r.tenants(ctx, d.n.c, "deps", 4, 30_000)
	if err != nil {
		return err
	}
	// One bulk send a second at KES 0.50 a message, and a margin.
	bulkKES := int(d.r.sizes.SlowLoad.Seconds()+5) * depsBulkSize / 2
	bulk, err := d.r.tenants(ctx, d.n.c, "deps-bulk", 1, bulkKES)
	if err != nil {
		return err
	}
	d.bulk = bulk[0]
	if d.burst, err = d.r.register(ctx, d.n.c, "deps-burst"); err != nil {
		return err
	}
	d.tr = newDepsTraffic(d.r, d.n.c, tenants, "steady", depsSize, depsRate)
	return nil
}

// close stops the traffic, the node and then its stores, whatever state the drill left
// them in.
func (d *depsRun) close() {
	if d.cancelTraffic != nil {
		d.cancelTraffic()
		d.tr.wg.Wait()
	}
	if d.n != nil {
		d.n.stop()
	}
	if d.rs != nil {
		_ = d.rs.kill()
	}
	if d.pg != nil {
		if err := d.pg.close(); err != nil {
			d.r.logf("private PostgreSQL: %v", err)
		}
	}
}

// pgOutage stops PostgreSQL for PGOutage while the traffic goes on.
func (d *depsRun) pgOutage(ctx context.Context) error {
	outage := d.r.sizes.PGOutage
	during := newAnswerTally()
	d.tr.watch(during)
	if err := d.pg.stop(syscall.SIGQUIT); err != nil {
		return fmt.Errorf("stop PostgreSQL: %w", err)
	}
	d.pgDown = time.Now()
	d.rec.logf("PostgreSQL stopped (immediate shutdown) for %s", secs(outage))
	polls := d.probe(ctx, d.pgDown.Add(outage))
	after := newAnswerTally()
	d.tr.watch(after)
	if err := d.pg.start(ctx); err != nil {
		return fmt.Errorf("restart PostgreSQL: %w", err)
	}
	d.pgBack = time.Now()
	d.rec.logf("PostgreSQL is back after %s", secs(d.pgBack.Sub(d.pgDown)))

	n503 := during.count(503, 503)
	n2xx := during.count(200, 299)
	other := during.total() - n503 - n2xx
	d.rec.value("PG down: writes 503", float64(n503), "answers", n503 > 0 && other == 0,
		fmt.Sprintf("%s attempts to send answered %s while PostgreSQL was down", count(during.total()), during), "503, nothing else",
		depsReason(n503 == 0, "no send was refused 503", "answers other than 503"))
	noRA := during.missingRetryAfter()
	d.rec.value("PG down: Retry-After", float64(noRA), "answers", noRA == 0 && n503 > 0,
		fmt.Sprintf("%s of %s 503s without Retry-After", count(noRA), count(n503)), "0", "a 503 without Retry-After")
	polls.record(d.rec, "PG down")
	d.rec.check("PG down: /readyz", polls.readyz["503 unavailable"] > 0, polls.readyzSeen(), "503 unavailable",
		"/readyz never said PostgreSQL was down")

	first, err := depsWait(ctx, 2*time.Minute, func() bool { return !after.firstSuccess().IsZero() })
	if err != nil {
		d.rec.fail("PG back → first 202", fmt.Sprintf("no send accepted within %s of PostgreSQL's return (%s)", secs(first), after))
		return nil
	}
	took := max(after.firstSuccess().Sub(d.pgBack), 0)
	d.rec.value("PG back → first 202", took.Seconds(), "s", took <= 10*time.Second,
		fmt.Sprintf("%s after PostgreSQL took connections again", secs(took)), "≤ 10 s", "the engine did not take sends again in time")
	return nil
}

// pgOutageSends records how the sends that were under way during the PostgreSQL outage
// ended (once the traffic has stopped, so each has its definite answer).
func (d *depsRun) pgOutageSends() {
	if d.pgBack.IsZero() {
		return
	}
	spans := d.tr.spansOf(d.pgDown, d.pgBack)
	var ok, refused, undecided int
	var ex string
	for _, s := range spans {
		switch {
		case s.o.status >= 200 && s.o.status < 300:
			ok++
		case s.o.status == 0:
			undecided++
			ex = fmt.Sprintf("key %s: %s", s.o.key, s.o.err)
		default:
			refused++
			ex = fmt.Sprintf("key %s: %s", s.o.key, s.o.err)
		}
	}
	d.rec.value("PG outage: sends completed", float64(ok), "sends", len(spans) > 0 && ok == len(spans),
		fmt.Sprintf("%d sends under way during the outage: %d accepted once retried, %d refused, %d never definite", len(spans), ok, refused, undecided),
		"every one accepted", firstOf(ex, "no send was under way during the outage"))
}

// outageProbes are /healthz and /readyz polled during an outage.
type outageProbes struct {
	healthz, healthzOK int
	healthzMax         time.Duration
	healthzErr         string
	readyz             map[string]int // "503 unavailable", "200 degraded", …
}

// probe polls /healthz and /readyz every 200 ms until end (at least once).
func (d *depsRun) probe(ctx context.Context, end time.Time) *outageProbes {
	p := &outageProbes{readyz: map[string]int{}}
	for first := true; first || time.Now().Before(end) && ctx.Err() == nil; first = false {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		h := d.n.c.do(rctx, "GET", "/healthz", nil)
		rd := d.n.c.do(rctx, "GET", "/readyz", nil)
		cancel()
		p.healthz++
		p.healthzMax = max(p.healthzMax, h.took)
		if h.status == 200 {
			p.healthzOK++
		} else {
			p.healthzErr = fmt.Sprintf("%d %v", h.status, h.err)
		}
		var body struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(rd.body, &body)
		p.readyz[fmt.Sprintf("%d %s", rd.status, firstOf(body.Status, "?"))]++
		time.Sleep(time.Until(time.Now().Add(200 * time.Millisecond).Truncate(200 * time.Millisecond)))
	}
	return p
}

func (p *outageProbes) record(rec *recorder, what string) {
	rec.value(what+": /healthz", float64(p.healthz-p.healthzOK), "polls", p.healthz > 0 && p.healthzOK == p.healthz,
		fmt.Sprintf("%d of %d polls answered 200 within 1 s (slowest %s)", p.healthzOK, p.healthz, secs(p.healthzMax)),
		"every poll 200", "last failure: "+p.healthzErr)
}

// readyzSeen renders what /readyz answered, e.g. "503 unavailable×12".
func (p *outageProbes) readyzSeen() string {
	return depsCounts(p.readyz)
}

// depsWait polls cond every 20 ms until it holds or limit passes; it returns how long it waited.
func depsWait(ctx context.Context, limit time.Duration, cond func() bool) (time.Duration, error) {
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			return time.Since(start), fmt.Errorf("not within %s", secs(limit))
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return time.Since(start), nil
}

// scrapeUntil scrapes /metrics every every until cond holds of a scrape or limit passes; it
// returns the time from start to the scrape that held.
func (d *depsRun) scrapeUntil(ctx context.Context, start time.Time, every, limit time.Duration, cond func(metrics) bool) (time.Duration, metrics, error) {
	var last metrics
	var lastErr error
	for time.Since(start) <= limit {
		m, err := d.n.c.scrape(ctx)
		if err == nil {
			last = m
			if cond(m) {
				return m.at.Sub(start), m, nil
			}
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return time.Since(start), last, ctx.Err()
		case <-time.After(every):
		}
	}
	if lastErr != nil {
		return time.Since(start), last, fmt.Errorf("not within %s (last scrape: %w)", secs(limit), lastErr)
	}
	return time.Since(start), last, fmt.Errorf("not within %s", secs(limit))
}

// hammer sends n GET /auth/me as tenant t from 16 clients at once and counts the answers.
func (d *depsRun) hammer(ctx context.Context, t *tenant, n int) (*answerTally, error) {
	w := newAnswerTally()
	var wg sync.WaitGroup
	jobs := make(chan struct{}, n)
	for range n {
		jobs <- struct{}{}
	}
	close(jobs)
	for range 16 {
		wg.Go(func() {
			for range jobs {
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				w.add(d.n.c.do(rctx, "GET", "/auth/me", nil, t.apiKey()...))
				cancel()
			}
		})
	}
	wg.Wait()
	return w, ctx.Err()
}

// depsReason picks the reason of a failed row.
func depsReason(first bool, ifFirst, otherwise string) string {
	if first {
		return ifFirst
	}
	return otherwise
}

// depsCounts renders counts by name, e.g. "503 unavailable×12 200 ok×3", sorted by name.
func depsCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// redisOutage kills Redis for RedisOutage (and until the node has noticed) while the traffic
// goes on, spends one tenant's rate limit meanwhile, then starts Redis again.
func (d *depsRun) redisOutage(ctx context.Context) error {
	outage := d.r.sizes.RedisOutage
	during := newAnswerTally()
	d.tr.watch(during)
	if err := d.rs.kill(); err != nil {
		return fmt.Errorf("kill Redis: %w", err)
	}
	killed := time.Now()
	d.rec.logf("Redis killed for %s", secs(outage))

	// Well above the limit's burst, at once: with Redis gone the node's own buckets refuse it.
	burst, err := d.hammer(ctx, d.burst, 6*depsRateLimit)
	if err != nil {
		return err
	}
	// The node probes its dependencies every 5 s: the outage lasts until it has seen it.
	noticed, _, nerr := d.scrapeUntil(ctx, killed, 250*time.Millisecond, max(outage, 15*time.Second), func(m metrics) bool {
		return m.has(depsMetricUp) && m.sum(depsMetricUp, "dependency", "redis") == 0
	})
	polls := d.probe(ctx, killed.Add(outage))
	after := newAnswerTally()
	d.tr.watch(after)
	if err := d.rs.start(ctx); err != nil {
		return fmt.Errorf("restart Redis: %w", err)
	}
	back := time.Now()
	d.rec.logf("Redis is back after %s", secs(back.Sub(killed)))

	n2xx := during.count(200, 299)
	d.rec.value("Redis down: sends accepted", float64(n2xx), "answers", n2xx > 0 && n2xx == during.total(),
		fmt.Sprintf("%s attempts to send answered %s while Redis was down (p99 %s)", count(during.total()), during, secs(during.p99())),
		"every one 202", depsReason(n2xx == 0, "no send was accepted", "sends refused while only Redis was down"))
	n429 := burst.count(429, 429)
	ok := burst.count(200, 200)
	d.rec.value("Redis down: local limits", float64(n429), "answers", n429 > 0 && ok > 0 && ok+n429 == burst.total() && burst.missingRetryAfter() == 0,
		fmt.Sprintf("%s GET /auth/me at once from one account (limit %d/s, burst %d): %s; %d 429s without Retry-After",
			count(burst.total()), depsRateLimit, 2*depsRateLimit, burst, burst.missingRetryAfter()),
		"200s, then 429 with Retry-After", "the account's limit was not enforced (or enforced wrongly) without Redis")
	polls.record(d.rec, "Redis down")
	if nerr != nil {
		d.rec.fail("Redis down: noticed", "tuma_dependency_up{dependency=\"redis\"} never went to 0: "+nerr.Error())
	} else {
		d.rec.value("Redis down: noticed", noticed.Seconds(), "s", noticed <= 10*time.Second,
			fmt.Sprintf("tuma_dependency_up{redis} 0 after %s; /readyz said %s", secs(noticed), polls.readyzSeen()), "≤ 10 s (probed every 5 s)", "")
	}

	// /readyz pings Redis itself; tuma_dependency_up waits for the next probe (every 5 s).
	var status string
	ready, rerr := depsWait(ctx, 30*time.Second, func() bool {
		status = d.readiness(ctx)
		return status == "ok"
	})
	took, _, err := d.scrapeUntil(ctx, back, 250*time.Millisecond, 30*time.Second, func(m metrics) bool {
		return m.sum(depsMetricUp, "dependency", "redis") == 1
	})
	d.rec.value("Redis back: reconnected", took.Seconds(), "s", err == nil && rerr == nil && took <= 10*time.Second && ready <= 5*time.Second,
		fmt.Sprintf("/readyz %q %s after Redis came back, tuma_dependency_up{redis} 1 after %s", status, secs(ready), secs(took)),
		"/readyz ok ≤ 5 s, metric ≤ 10 s", firstOf(depsErrText(rerr), depsErrText(err), "the node took too long to use Redis again"))
	if _, err := depsWait(ctx, 30*time.Second, func() bool { return !after.firstSuccess().IsZero() }); err != nil {
		d.rec.fail("Redis back: sends accepted", "no send accepted after Redis came back: "+after.String())
	}
	return nil
}

// readiness is the status /readyz reports ("" when it does not answer).
func (d *depsRun) readiness(ctx context.Context) string {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var body struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(d.n.c.do(rctx, "GET", "/readyz", nil).body, &body)
	return body.Status
}

func depsErrText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// depsMetricUp is whether the node's last probe of a dependency answered.
const depsMetricUp = "tuma_dependency_up"
