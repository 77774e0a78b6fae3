package drill

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// overloadDrill: a storm of ten times the node's sustainable send rate, from many tenants at
// once and from one tenant far over its own limit, with the node's default limits. The node
// must shed what it cannot serve with 429 and 503 (each with Retry-After) instead of queueing
// it, keep /healthz and /metrics answering, keep the sends it accepts fast, and afterwards
// hold no more goroutines or heap than before; everything it accepted is then delivered and
// billed exactly once.
func overloadDrill(ctx context.Context, r *runner, rec *recorder) error {
	sz := r.sizes
	// The node's own defaults for the per-account rate limit and the in-flight bound.
	// TUMA_PPROF lets the drill collect the node's garbage before it reads the heap.
	n, err := r.node("overload", map[string]string{"TUMA_RATE_LIMIT_RPS": "", "TUMA_SIM_LATENCY": "5ms", "TUMA_PPROF": "true"})
	if err != nil {
		return err
	}
	if _, err := n.start(ctx); err != nil {
		return err
	}
	const crowdN = 64
	tenants, err := r.tenants(ctx, n.c, "overload", crowdN+1, 20_000)
	if err != nil {
		return err
	}
	hot, crowd := tenants[0], tenants[1:]
	witnesses, err := r.tenants(ctx, n.c, "overload-witness", 1, 1_000_000)
	if err != nil {
		return err
	}
	witnessT := witnesses[0]
	base, err := quietState(ctx, n, 10*time.Second, -1, "before")
	if err != nil {
		return err
	}

	// The sustainable rate: closed-loop sends of stormSize recipients from the crowd. (A load
	// generator sharing the node's two CPUs cannot offer 10× the rate of 1-recipient sends,
	// which are mostly HTTP; bulk sends load the node's accept path, where overload bites.)
	calib := newStorm(n, crowd, stormSize)
	calib.closedLoop(ctx, 32, max(3*time.Second, sz.Storm/2))
	sustainable := calib.rate(202)
	if sustainable <= 0 {
		return fmt.Errorf("no send was accepted while measuring the sustainable rate (%s)", calib.codes())
	}
	rec.info("sustainable rate", sustainable, "sends/s",
		fmt.Sprintf("%s sends/s of %d recipients from 32 clients of %d tenants (p50 %s)", rate(sustainable), stormSize, crowdN, secs(calib.p(50))))
	// Warm-up to the node's bounded memories of recent traffic (65,536 submits per link and
	// per simulated network, 131,072 receipts), so that the heap after the first storm holds
	// them full and growth after the second is a leak, not a cache still filling.
	if more := warmMessages/stormSize - calib.count(202); more > 0 {
		warm := newStorm(n, crowd, stormSize)
		warm.closedLoopUntil(ctx, 32, time.Minute, func() bool { return warm.count(202) >= more })
		warm.c.closeIdle()
	}
	calib.c.closeIdle()
	if _, err := quietState(ctx, n, time.Minute, base.goroutines+50, "warm"); err != nil {
		return err
	}

	// The storm, twice: the crowd at 10× the sustainable rate, the hot tenant at 10× its own
	// limit, open loop (requests keep coming whatever the answers), while operators probe the
	// node. The first storm fills what the node keeps of recent traffic by design (bounded
	// caches of recent ids); a leak grows again with the second. What is bounded but filled
	// unevenly can grow past the bound once, too: each pooled database connection keeps the
	// buffers of the largest statement it has sent (pgx), and the second storm may give some
	// their largest yet. So a second storm past the bound is followed by a third, and only
	// growth again, with every storm, is a leak.
	var storms, hotStorms []*storm
	var ops []opsResult
	var witnessed []*storm
	var after []nodeState
	for len(after) < 2 || len(after) == 2 && after[1].heap-after[0].heap > heapGrowthBound {
		storm, hotStorm, witness := newStorm(n, crowd, stormSize), newStorm(n, []*tenant{hot}, 1), newStorm(n, []*tenant{witnessT}, stormSize)
		// The witness's connection is open before the storm: it stands for a client already
		// connected, not one dialling into the storm's 2,048 new connections (a kernel accept
		// queue under a flood of handshakes, measured: 0.2–0.6 s to connect alone).
		if rep := witness.c.do(ctx, "GET", "/healthz", nil); rep.status != 200 {
			return fmt.Errorf("the witness could not connect before the storm: %d %v", rep.status, rep.err)
		}
		probes := startOpsProbes(ctx, n.c)
		var wg sync.WaitGroup
		wg.Go(func() { storm.openLoop(ctx, 10*sustainable, 4096, sz.Storm) })
		wg.Go(func() { hotStorm.openLoop(ctx, 10*accountRate, 256, sz.Storm) })
		// A well-behaved client of another tenant, 20 sends a second (well under its limit), one
		// at a time over its own connection: what a customer who is not part of the storm sees.
		wg.Go(func() { witness.openLoop(ctx, 20, 1, sz.Storm) })
		wg.Wait()
		ops = append(ops, probes.stop())
		witnessed = append(witnessed, witness)
		storm.c.closeIdle()
		hotStorm.c.closeIdle()
		st, err := quietState(ctx, n, time.Minute, base.goroutines+50, fmt.Sprintf("storm%d", len(after)+1))
		if err != nil {
			return err
		}
		storms, hotStorms, after = append(storms, storm), append(hotStorms, hotStorm), append(after, st)
	}
	for i, storm := range storms {
		hotStorm, op, label := hotStorms[i], ops[i], fmt.Sprintf(" (storm %d)", i+1)
		offered := storm.offeredRate()
		rec.value("offered load"+label, offered/sustainable, "× sustainable", offered >= 10*sustainable*0.9,
			fmt.Sprintf("%s requests/s for %s (%.1f× the sustainable rate); %s more the client could not start", rate(offered), secs(sz.Storm),
				offered/sustainable, count(storm.notStarted.Load())), "≥ 10×", "the drill could not offer the storm it promises")
		shed := storm.count(429) + storm.count(503)
		rec.value("crowd shed"+label, float64(shed), "answers", shed > 0 && storm.errors.Load() == 0 && storm.other() == 0 && storm.noRetryAfter.Load() == 0,
			fmt.Sprintf("%s; %s without Retry-After, %s without an HTTP answer", storm.codes(), count(storm.noRetryAfter.Load()), count(storm.errors.Load())),
			"429/503 with Retry-After, nothing else", "the storm was not shed cleanly")
		// The hot tenant's own limit holds (its refusals are 429, or 503 when the crowd has
		// filled the node first).
		hotOK, allowed := hotStorm.count(202), int64(accountRate*sz.Storm.Seconds()+accountBurst)
		rec.value("hot tenant limited"+label, float64(hotOK), "sends", hotOK <= allowed && hotStorm.errors.Load() == 0 && hotStorm.other() == 0 && hotStorm.noRetryAfter.Load() == 0,
			fmt.Sprintf("one tenant at 10× its limit: %s", hotStorm.codes()),
			fmt.Sprintf("≤ %s accepted (%d/s × %s + a burst of %d), refusals with Retry-After", count(allowed), accountRate, secs(sz.Storm), accountBurst),
			"the hot tenant was not limited cleanly")
		// Latency as a client outside the storm sees it; the storm's own clients (thousands of
		// goroutines on the node's CPUs) see their own scheduling too, reported beside it.
		w := witnessed[i]
		p99 := w.p(99)
		// A request of the witness's left without an answer (the client gives up after 10 s)
		// is the slowest of all, whatever the accepted ones took.
		rec.value("accepted sends stay fast"+label, p99.Seconds(), "s", w.count(202) > 0 && w.errors.Load() == 0 && p99 <= sz.StormAcceptP99,
			fmt.Sprintf("another tenant's sends of %d, one at a time: %s, %s without an answer, accepted p50 %s, p99 %s; the storm's accepted p50 %s, p99 %s",
				stormSize, w.codes(), count(w.errors.Load()), secs(w.p(50)), secs(p99), secs(storm.p(50)), secs(storm.p(99))),
			"p99 ≤ "+secs(sz.StormAcceptP99)+", every one answered", "accepted sends queued behind the storm")
		rec.value("/healthz and /metrics"+label, op.worst.Seconds(), "s", op.failed == 0 && op.worst <= 2*time.Second,
			fmt.Sprintf("%d probes during the storm, %d failed: p50 %s, max %s", op.n, op.failed, secs(op.p50), secs(op.worst)),
			"every probe answered, max ≤ 2 s", "operators lose sight of the node under load")
	}
	// After the storms: back to where it was.
	last := after[len(after)-1]
	extraG := last.goroutines - base.goroutines
	rec.value("goroutines after the storms", last.goroutines, "goroutines", extraG <= 50,
		fmt.Sprintf("%.0f before, %.0f after the first storm, %.0f after the second", base.goroutines, after[0].goroutines, last.goroutines),
		"≤ before + 50", "goroutines leak")
	growth := last.heap - after[len(after)-2].heap
	detail := fmt.Sprintf("%s in use before, %s after the first storm (bounded caches of recent traffic), %s after the second (%+.1f MB)",
		mb(base.heap), mb(after[0].heap), mb(after[1].heap), (after[1].heap-after[0].heap)/(1<<20))
	if len(after) == 3 {
		detail += fmt.Sprintf(", %s after a third (%+.1f MB)", mb(last.heap), growth/(1<<20))
	}
	rec.value("heap after the storms", growth/(1<<20), "MB", growth <= heapGrowthBound, detail,
		"the last storm ≤ the one before + 16 MB", "memory grows with every storm")
	return r.checkInvariants(ctx, n, rec, nil, defaultSettling())
}

// heapGrowthBound is how much the heap in use may grow from one storm to the next.
const heapGrowthBound = 16 << 20

// stormSize is the recipients of each of the crowd's sends.
const stormSize = 200

// warmMessages is how many messages fill the node's bounded memories of recent traffic,
// with room for an uneven split over the three networks.
const warmMessages = 300_000

// accountRate and accountBurst are the node's default per-account limit
// (TUMA_RATE_LIMIT_RPS, TUMA_RATE_LIMIT_BURST), which the drill leaves on.
const accountRate, accountBurst = 100, 200

// nodeState is a node's goroutines and heap in use.
type nodeState struct{ goroutines, heap float64 }

// quietState waits for the node's engine to finish what it was given and its goroutines to
// come down to at most want (fasthttp lets idle workers go after 10 s), then has it collect
// its garbage and reads its goroutines and heap in use. want < 0 waits for them to stop falling.
// The heap profile goes to heap-<label>.pprof in the run's folder, to compare with pprof -base.
func quietState(ctx context.Context, n *node, limit time.Duration, want float64, label string) (nodeState, error) {
	c := n.c
	deadline := time.Now().Add(limit)
	var last nodeState
	steady := 0
	for {
		m, err := c.scrape(ctx)
		if err != nil {
			return last, err
		}
		st := nodeState{goroutines: m.sum(mGoroutines)}
		busy := m.sum(mJobsActive) > 0 || m.sum("tuma_http_requests_in_flight") > 1
		if !busy && st.goroutines >= last.goroutines {
			steady++
		} else {
			steady = 0
		}
		last = st
		quiet := !busy && (want < 0 && steady >= 3 || want >= 0 && st.goroutines <= want)
		if quiet || time.Now().After(deadline) {
			profile, err := c.collectGarbage(ctx)
			if err != nil {
				return st, err
			}
			if err := os.WriteFile(filepath.Join(n.r.work, "heap-"+label+".pprof"), profile, 0o644); err != nil {
				return st, err
			}
			if err := c.saveGoroutines(ctx, filepath.Join(n.r.work, "goroutines-"+label+".txt")); err != nil {
				return st, err
			}
			if m, err = c.scrape(ctx); err != nil {
				return st, err
			}
			return nodeState{goroutines: m.sum(mGoroutines), heap: m.sum("go_memstats_heap_inuse_bytes")}, nil
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// storm sends 1-recipient sends from tenants in turn and tallies the answers.
type storm struct {
	n       *node
	c       *client
	tenants []*tenant
	bodies  [][]byte
	next    atomic.Int64

	mu           sync.Mutex
	statuses     map[int]int64
	lat          []time.Duration // of 202s
	started      atomic.Int64
	notStarted   atomic.Int64 // open loop: a request was due but the client had no free slot
	errors       atomic.Int64 // no HTTP answer
	noRetryAfter atomic.Int64 // 429 or 503 without Retry-After
	took         time.Duration
	offering     time.Duration // open loop: how long requests were offered, without the wait for the last answers
}

func newStorm(n *node, tenants []*tenant, size int) *storm {
	s := &storm{n: n, c: newClient(n.base, 2048, 10*time.Second, n.r.secrets), tenants: tenants, statuses: map[int]int64{}}
	// Bodies rendered once: the load generator shares the node's CPUs, and every cycle it
	// spends rendering is a request it cannot offer.
	for k := range 256 {
		s.bodies = append(s.bodies, sendBody(k*size, size, "Drill: storm"))
	}
	return s
}

func (s *storm) one(ctx context.Context) {
	i := s.next.Add(1)
	t := s.tenants[int(i)%len(s.tenants)]
	s.started.Add(1)
	rep := s.c.do(ctx, "POST", "/sms/send", s.bodies[int(i)%len(s.bodies)], t.apiKey()...)
	if rep.err != nil {
		s.errors.Add(1)
		return
	}
	if (rep.status == 429 || rep.status == 503) && rep.header.Get("Retry-After") == "" {
		s.noRetryAfter.Add(1)
	}
	s.mu.Lock()
	s.statuses[rep.status]++
	if rep.status == 202 {
		s.lat = append(s.lat, rep.took)
	}
	s.mu.Unlock()
}

// closedLoop runs workers sending back to back for d.
func (s *storm) closedLoop(ctx context.Context, workers int, d time.Duration) {
	s.closedLoopUntil(ctx, workers, d, func() bool { return false })
}

// closedLoopUntil runs workers sending back to back until enough says so, or for at most d.
func (s *storm) closedLoopUntil(ctx context.Context, workers int, d time.Duration, enough func() bool) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil && !enough() {
				s.one(context.WithoutCancel(ctx))
			}
		})
	}
	wg.Wait()
	s.took = time.Since(start)
}

// openLoop starts perSecond requests a second for d whatever the answers, at most inFlight
// at once (a request due when every slot is taken is counted as not started).
func (s *storm) openLoop(ctx context.Context, perSecond float64, inFlight int, d time.Duration) {
	start := time.Now()
	slots := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) / perSecond)
	tick := time.NewTicker(max(interval, time.Millisecond))
	defer tick.Stop()
	for now := range tick.C {
		if ctx.Err() != nil || now.Sub(start) >= d {
			break
		}
		// Every request due by now that is not started yet: catch up after a slow tick.
		due := now.Sub(start).Seconds() * perSecond
		for float64(s.started.Load()+s.notStarted.Load()) < due {
			select {
			case slots <- struct{}{}:
				wg.Go(func() {
					defer func() { <-slots }()
					s.one(ctx)
				})
			default:
				s.notStarted.Add(1)
			}
		}
	}
	s.offering = time.Since(start)
	wg.Wait()
	s.took = time.Since(start)
}

func (s *storm) count(status int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statuses[status]
}

// other counts answers that are neither accepted nor shed.
func (s *storm) other() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for st, c := range s.statuses {
		if st != 202 && st != 429 && st != 503 {
			n += c
		}
	}
	return n
}

// rate is answers of status per second of the run.
func (s *storm) rate(status int) float64 { return float64(s.count(status)) / s.took.Seconds() }

// offeredRate is the requests started a second while the loop offered them: the answers still
// due after it (up to the client's timeout, from a node shedding a storm) are not offering.
func (s *storm) offeredRate() float64 { return float64(s.started.Load()) / s.offering.Seconds() }

func (s *storm) p(q float64) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return percentile(slices.Clone(s.lat), q)
}

func (s *storm) codes() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]int, 0, len(s.statuses))
	for k := range s.statuses {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := ""
	for _, k := range keys {
		out += fmt.Sprintf("%d×%s ", k, count(s.statuses[k]))
	}
	return out + fmt.Sprintf("(%s requests)", count(s.started.Load()))
}

// opsProbes polls /healthz and /metrics the way a monitoring system does.
type opsProbes struct {
	cancel context.CancelFunc
	done   chan struct{}
	lat    []time.Duration
	failed int
}

type opsResult struct {
	n, failed  int
	p50, worst time.Duration
}

func startOpsProbes(ctx context.Context, c *client) *opsProbes {
	ctx, cancel := context.WithCancel(ctx)
	p := &opsProbes{cancel: cancel, done: make(chan struct{})}
	// Its own connections: a monitoring system does not queue behind the storm's.
	oc := newClient(c.base, 4, 5*time.Second, c.secrets)
	go func() {
		defer close(p.done)
		for i := 0; ctx.Err() == nil; i++ {
			path := "/healthz"
			if i%2 == 1 {
				path = "/metrics"
			}
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			rep := oc.do(rctx, "GET", path, nil)
			rcancel()
			if ctx.Err() != nil {
				return
			}
			if rep.status != 200 {
				p.failed++
			}
			p.lat = append(p.lat, rep.took)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return p
}

func (p *opsProbes) stop() opsResult {
	p.cancel()
	<-p.done
	res := opsResult{n: len(p.lat), failed: p.failed}
	if len(p.lat) > 0 {
		res.p50 = percentile(p.lat, 50)
		res.worst = slices.Max(p.lat)
	}
	return res
}
