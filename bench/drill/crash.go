package drill

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// crashSizes are the recipients of the crash drill's sends, in turn.
var crashSizes = []int{1000, 100, 10, 1}

// crashDrill: 8 tenants × 2 clients send a mix of 1, 10, 100 and 1,000 recipients, each send
// with its own Idempotency-Key and retried until definite, while the server is killed with
// SIGKILL at random moments and started again. Afterwards every accepted message must be
// final exactly once, every ledger balanced and no key charged twice, and the messages resent
// after crashes (possible duplicates) within the in-flight window.
func crashDrill(ctx context.Context, r *runner, rec *recorder) error {
	const tenantsN, perTenant = 8, 2
	total, kills := r.sizes.CrashMessages, r.sizes.CrashKills
	// A tight request deadline makes the engine miss some answers (503, an unknown outcome)
	// besides the kills, so the drill also sees retries of requests that may still commit.
	n, err := r.node("crash", map[string]string{"TUMA_REQUEST_TIMEOUT": crashRequestTimeout.String()})
	if err != nil {
		return err
	}
	if _, err := n.start(ctx); err != nil {
		return err
	}
	tenants, err := r.tenants(ctx, n.c, "crash", tenantsN, max(1000, total/tenantsN))
	if err != nil {
		return err
	}
	workers := tenantsN * perTenant
	// The load is paced over a window long enough for every kill to land in it: the
	// engine accepts far faster than it dispatches, and the kills must hit sends in flight.
	window := max(10*time.Second, time.Duration(kills)*3*time.Second)
	start := time.Now()
	next := crashPlan(r, tenants, workers, total, start, window)
	ld := newLoad(n.c, 5*time.Minute)
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		ld.run(ctx, workers, next)
	}()

	// Kill at random moments of the window (each once the last restart serves).
	moments := make([]time.Duration, kills)
	for i := range moments {
		moments[i] = time.Duration((0.03 + 0.94*r.float()) * float64(window))
	}
	slices.Sort(moments)
	var restarts []startTimes
	var resent, bound, unsettled float64
	var resentNote string
	for k, at := range moments {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(start.Add(at))):
		}
		// Read this process's resends and how many jobs it is dispatching just before it dies.
		if m, err := n.c.scrape(ctx); err == nil {
			resent += m.sum(mResent)
			unsettled += m.askedFirst()
			bound += 3 * 256 * m.sum(mJobsActive)
		}
		if err := n.kill(); err != nil {
			return err
		}
		st, err := n.start(ctx)
		if err != nil {
			return fmt.Errorf("restart %d: %w", k+1, err)
		}
		restarts = append(restarts, st)
		rec.logf("kill -9 #%d at %s, %s messages accepted: /healthz %s, /readyz %s", k+1, secs(time.Since(start)),
			count(ld.accepted.Load()), secs(st.healthz), secs(st.readyz))
	}
	<-loadDone
	loadTook := time.Since(start)
	outcomes := ld.results()
	accepted := ld.accepted.Load()
	rec.value("messages accepted", float64(accepted), "messages", accepted >= int64(total),
		fmt.Sprintf("%s in %s sends (%s attempts) over %s", count(accepted), count(int64(len(outcomes))),
			count(ld.attempts.Load()), secs(loadTook)), "≥ "+count(int64(total)), "")
	rec.info("answers", float64(ld.attempts.Load()), "attempts", ld.codeList())
	restartRows(rec, restarts, kills)

	pending, perr := engineTimeouts(n.logPath)
	if perr != nil {
		return fmt.Errorf("read the node's log: %w", perr)
	}
	err = r.checkInvariants(ctx, n, rec, &keyCheck{outcomes: outcomes, lease: crashRequestTimeout + 5*time.Second, pending: pending}, defaultSettling())
	// A campaign on a node of its own (sends there answer within TUMA_REQUEST_TIMEOUT's default):
	// killed while it dispatches, every contact exactly once.
	if cerr := campaignCrash(ctx, r, rec); cerr != nil && err == nil {
		err = cerr
	}
	// The last process's resends count too, once it has settled.
	if m, serr := n.c.scrape(ctx); serr == nil {
		resent += m.sum(mResent)
		unsettled += m.askedFirst()
	} else {
		resentNote = " (the last scrape failed)"
	}
	rec.value("resent after crash", resent, "messages", resent <= bound,
		fmt.Sprintf("%.0f messages resent without the network able to say if it had them; %.0f asked about first%s", resent, unsettled, resentNote),
		fmt.Sprintf("≤ %.0f (3 networks × 256 × jobs dispatching at each kill)", bound), "more resends than the in-flight window allows")
	return err
}

// crashRequestTimeout is TUMA_REQUEST_TIMEOUT in the crash drill.
const crashRequestTimeout = 30 * time.Millisecond

// crashPlan gives each worker its own sends, sizes in turn from a random start, until it has
// sent its share of total messages, paced so its share spreads over window from start.
// Workers 2t and 2t+1 send as tenant t.
func crashPlan(r *runner, tenants []*tenant, workers, total int, start time.Time, window time.Duration) func(int) (send, bool) {
	return pacedPlan(r, tenants, "crash", crashSizes, workers, total, start, window)
}

// pacedPlan is crashPlan with sends of the given sizes, their keys starting with label.
func pacedPlan(r *runner, tenants []*tenant, label string, sizes []int, workers, total int, start time.Time, window time.Duration) func(int) (send, bool) {
	share := (total + workers - 1) / workers
	perMessage := window / time.Duration(share)
	type state struct {
		i, sent, rot int
	}
	var mu sync.Mutex
	st := make([]state, workers)
	for w := range st {
		st[w].rot = r.intN(len(sizes))
	}
	return func(w int) (send, bool) {
		mu.Lock()
		s := &st[w]
		if s.sent >= share {
			mu.Unlock()
			return send{}, false
		}
		size := sizes[(s.i+s.rot)%len(sizes)]
		i, due := s.i, start.Add(time.Duration(s.sent)*perMessage)
		s.i++
		s.sent += size
		mu.Unlock()
		time.Sleep(time.Until(due))
		t := tenants[(w/2)%len(tenants)]
		return send{t: t, key: fmt.Sprintf("%s-%s-%d-%d", label, r.id, w, i), n: size,
			body: sendBody(w*50_000+i*400, size, "Drill: your parcel is on its way")}, true
	}
}

// restartRows records the restarts' times to /healthz and /readyz.
func restartRows(rec *recorder, restarts []startTimes, want int) {
	if len(restarts) == 0 {
		rec.check("restarts", want == 0, "none", fmt.Sprintf("%d kill -9 and restarts", want), "no restart happened")
		return
	}
	var h, rd []time.Duration
	for _, s := range restarts {
		h, rd = append(h, s.healthz), append(rd, s.readyz)
	}
	rec.check("restarts", len(restarts) >= want, fmt.Sprintf("%d kill -9, each followed by a restart", len(restarts)), fmt.Sprintf("%d", want), "")
	hmax, rmax := slices.Max(h), slices.Max(rd)
	rec.value("restart → /healthz", hmax.Seconds(), "s", hmax <= time.Second,
		fmt.Sprintf("first %s, last %s, max %s", secs(h[0]), secs(h[len(h)-1]), secs(hmax)), "≤ 1 s", "")
	rec.value("restart → /readyz", rmax.Seconds(), "s", rmax <= 2*time.Second,
		fmt.Sprintf("first %s, last %s, max %s", secs(rd[0]), secs(rd[len(rd)-1]), secs(rmax)), "≤ 2 s", "")
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
