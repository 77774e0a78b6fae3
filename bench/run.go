package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// ErrProblems is returned (wrapped) by Run when the run finished but its checks failed: not
// drained, the tool and the server disagree, or egress outside the caps' tolerance.
var ErrProblems = errors.New("the run's checks failed")

// setupWorkers bounds registrations in flight: each costs the server a bcrypt hash.
const setupWorkers = 8

// cleanupTimeout bounds each piece of work done after the run (final scrape, suspensions).
const cleanupTimeout = time.Minute

// Run performs one benchmark run: set up the accounts, send, wait for every accepted message
// to reach a final state, print the results to stdout (and --json), retire the accounts. The
// progress display goes to stdout as well; stderr gets warnings.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	id, err := runID()
	if err != nil {
		return err
	}
	a := newAPI(cfg)
	if err := a.health(ctx); err != nil {
		return err
	}
	lv := &live{}
	prog := startProgress(stdout, cfg, lv)
	progStopped := false
	stopProgress := func() {
		if !progStopped {
			progStopped = true
			prog.stop()
		}
	}
	defer stopProgress()

	var rcv *hookReceiver
	if cfg.WebhookListen != "" {
		if rcv, err = startHookReceiver(cfg.WebhookListen, cfg.expectedEvents()); err != nil {
			return err
		}
		defer func() {
			if err := rcv.stop(); err != nil {
				fmt.Fprintln(stderr, "tuma-lab bench: webhook receiver:", err)
			}
		}()
	}

	started := time.Now()
	tenants, err := setup(ctx, a, cfg, id, lv)
	if err == nil && rcv != nil {
		err = subscribe(ctx, a, cfg, rcv, tenants)
	}
	if err == nil {
		err = suppress(ctx, a, cfg, tenants)
	}
	if err != nil {
		stopProgress()
		return errors.Join(err, retire(ctx, a, cfg, tenants))
	}

	var db [2]float64
	dbErr := error(nil)
	if cfg.DBCPU {
		db[0], dbErr = processCPU("/proc", "postgres")
	}
	base, err := a.scrape(ctx)
	if err == nil && dbErr != nil {
		err = dbErr
	}
	if err != nil {
		stopProgress()
		return errors.Join(err, retire(ctx, a, cfg, tenants))
	}
	smp := startSampler(ctx, a, samplePeriod)
	prog.setPhase(phaseLoad)
	ld := (&loader{cfg: cfg, api: a, tenants: tenants, live: lv,
		messages: newNumbers(mixPrefixes(), poolSize(cfg.Recipients))}).run(ctx)
	prog.setPhase(phaseDrain)
	dr := drain(ctx, a, tenants, ld.end.Add(cfg.Timeout), lv)
	var hooks *Webhooks
	if rcv != nil {
		w := awaitHooks(ctx, rcv, cfg, len(tenants), dr, ld.end.Add(cfg.Timeout))
		hooks = &w
	}
	samples := smp.stop()
	sctx, cancel := detached(ctx)
	final, ferr := a.scrape(sctx)
	cancel()
	if cfg.DBCPU {
		db[1], dbErr = processCPU("/proc", "postgres")
	}
	stopProgress()
	if ferr != nil {
		fmt.Fprintln(stderr, "tuma-lab bench: final scrape:", ferr)
	}
	var sample []time.Duration
	var sampleErrs int
	if dr.drained {
		sample, sampleErrs = sampleEndToEnd(ctx, a, tenants, ld.jobs)
	}

	res := newResult(ctx, observed{cfg: cfg, runID: id, started: started, load: ld, drain: dr,
		base: base, final: final, finalOK: ferr == nil, dbCPU: db, dbCPUOK: cfg.DBCPU && dbErr == nil, samples: samples, scrapeErrs: smp.errors.Load(),
		e2e: newEndToEnd(sample, sampleErrs, base, final), hooks: hooks})
	res.Accounts = "kept"
	rerr := retire(ctx, a, cfg, tenants)
	if !cfg.Keep {
		res.Accounts = "suspended"
		if rerr != nil {
			res.Accounts = "NOT all suspended (see the error)"
		}
	}
	errs := []error{rerr}
	if err := res.print(stdout); err != nil {
		errs = append(errs, err)
	}
	if cfg.JSONPath != "" {
		errs = append(errs, res.writeJSON(cfg.JSONPath))
	}
	if ctx.Err() != nil {
		errs = append(errs, fmt.Errorf("interrupted: %w", context.Cause(ctx)))
	} else if len(res.Problems) > 0 {
		errs = append(errs, fmt.Errorf("%w: %s", ErrProblems, strings.Join(res.Problems, "; ")))
	}
	return errors.Join(errs...)
}

// setup registers and funds the accounts, a few at a time. On error it returns the accounts
// made so far, so they can be retired.
func setup(ctx context.Context, a *api, cfg Config, id string, lv *live) ([]*tenant, error) {
	out := make([]*tenant, cfg.Accounts)
	errs := make([]error, cfg.Accounts)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(next)
		for i := range cfg.Accounts {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	})
	for range min(setupWorkers, cfg.Accounts) {
		wg.Go(func() {
			for i := range next {
				t, err := a.register(ctx, fmt.Sprintf("bench-%s-%d@example.com", id, i))
				if err == nil {
					out[i] = t // retired even if funding fails
					err = a.credit(ctx, t.id, cfg.FundKES)
				}
				if err != nil {
					errs[i] = err
					cancel() // one failure is enough to stop: the rest would fail alike
					continue
				}
				lv.ready.Add(1)
			}
		})
	}
	wg.Wait()
	var made []*tenant
	for _, t := range out {
		if t != nil {
			made = append(made, t)
		}
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return made, fmt.Errorf("setup: %w", err)
		}
	}
	if err := ctx.Err(); err != nil && len(made) < cfg.Accounts {
		return made, fmt.Errorf("setup: %w", err)
	}
	return made, nil
}

// detached is a context for work after the run that must happen even when ctx was
// interrupted: the final scrape and the retirement of the accounts.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// retire suspends the accounts unless --keep, even when ctx is already cancelled.
func retire(ctx context.Context, a *api, cfg Config, tenants []*tenant) error {
	if cfg.Keep {
		return nil
	}
	ctx, cancel := detached(ctx)
	defer cancel()
	return teardown(ctx, a, tenants)
}

// teardown suspends every account, a few at a time: suspension is the admin API's only way
// to retire one.
func teardown(ctx context.Context, a *api, tenants []*tenant) error {
	errs := make([]error, len(tenants))
	sem := make(chan struct{}, setupWorkers)
	var wg sync.WaitGroup
	for i, t := range tenants {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = a.suspend(ctx, t.id)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("retire accounts: %w", err)
	}
	return nil
}
