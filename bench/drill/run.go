package drill

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"
)

// runner is one `tuma-lab drill` or `tuma-lab security` run: its configuration, work folder
// and what every drill shares.
type runner struct {
	cfg       Config
	sizes     Sizes
	id        string // names the run's databases, Redis prefixes and accounts
	work      string // logs
	jwtSecret string
	secrets   *secrets

	mu        sync.Mutex
	rng       *mrand.Rand
	databases []string // to drop at the end
	nodes     []*node  // to stop at the end
}

// drillFunc runs one drill, recording its rows. An error ends the drill as a failed row.
type drillFunc func(ctx context.Context, r *runner, rec *recorder) error

func drills() map[string]drillFunc {
	return map[string]drillFunc{
		"crash":         crashDrill,
		"backlog":       backlogDrill,
		"deps":          depsDrill,
		"overload":      overloadDrill,
		"shutdown":      shutdownDrill,
		"hooks":         hooksDrill,
		"quiet":         quietDrill,
		"cluster-kill":  clusterKillDrill,
		"cluster-pause": clusterPauseDrill,
		"cluster-tps":   clusterTPSDrill,
		security:        securityDrill,
	}
}

// Run runs the configured drills and prints the table to stdout (progress to cfg.Progress).
// The report says whether every check passed.
func Run(ctx context.Context, cfg Config, stdout io.Writer) (Report, error) {
	if err := cfg.resolve(); err != nil {
		return Report{}, err
	}
	r := &runner{cfg: cfg, sizes: cfg.Sizes(), secrets: newSecrets()}
	r.id = randomHex(4)
	r.jwtSecret = randomHex(32)
	seed := cfg.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	r.rng = mrand.New(mrand.NewPCG(seed, 0x6472696c6c))
	r.work = cfg.WorkDir
	if r.work == "" {
		var err error
		if r.work, err = os.MkdirTemp("", "tuma-drill-"+r.id+"-"); err != nil {
			return Report{}, err
		}
	} else if err := os.MkdirAll(r.work, 0o755); err != nil {
		return Report{}, err
	}
	r.secrets.add("admin token", adminToken)

	tool := "tuma-lab drill"
	if slices.Equal(cfg.Only, []string{security}) {
		tool = "tuma-lab security"
	}
	rep := Report{Tool: tool, StartedAt: time.Now().UTC(), Short: cfg.Short, Faults: cfg.Faults,
		Binary: cfg.Bin, Machine: machine(), Sizes: r.sizes, Pass: true}
	r.logf("run %s (seed %d): %v, logs in %s", r.id, seed, cfg.Only, r.work)
	all := drills()
	for _, name := range cfg.Only {
		if ctx.Err() != nil {
			break
		}
		rec := &recorder{drill: name, progress: cfg.Progress}
		start := time.Now()
		rec.logf("starting")
		err := safeRun(ctx, all[name], r, rec)
		if err != nil {
			rec.fail("drill", err.Error())
		}
		r.stopNodes()
		d := rec.result(time.Since(start))
		rec.logf("done in %s: %s", secs(time.Since(start)), passWord(d.Pass))
		rep.Drills = append(rep.Drills, d)
		rep.Pass = rep.Pass && d.Pass
	}
	if ctx.Err() != nil {
		rep.Pass = false
	}
	rep.Seconds = time.Since(rep.StartedAt).Seconds()
	r.cleanup(rep.Pass)
	if cfg.Keep || !rep.Pass {
		rep.WorkDir = r.work
	}
	if cfg.JSON != "" {
		if err := rep.WriteJSON(cfg.JSON); err != nil {
			return rep, err
		}
	}
	return rep, rep.Print(stdout)
}

// safeRun runs a drill, turning a panic into an error.
func safeRun(ctx context.Context, f drillFunc, r *runner, rec *recorder) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f(ctx, r, rec)
}

// node starts tracking a node so it is stopped when its drill ends.
func (r *runner) node(name string, env map[string]string) (*node, error) {
	n, err := r.newNode(name, env)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.nodes = append(r.nodes, n)
	r.mu.Unlock()
	return n, nil
}

func (r *runner) stopNodes() {
	r.mu.Lock()
	nodes := r.nodes
	r.nodes = nil
	r.mu.Unlock()
	for _, n := range nodes {
		n.stop()
	}
}

// cleanup drops the run's databases and, when everything passed, its logs (unless --keep).
func (r *runner) cleanup(pass bool) {
	if r.cfg.Keep {
		return
	}
	for _, db := range r.databases {
		if err := dropDatabase(context.Background(), db); err != nil {
			r.logf("drop database: %v", err)
		}
	}
	if pass && r.cfg.WorkDir == "" {
		_ = os.RemoveAll(r.work)
	}
}

func (r *runner) logf(format string, a ...any) {
	fmt.Fprintf(r.cfg.Progress, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
}

// intN is a random number in [0, n) (the run's seeded source).
func (r *runner) intN(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rng.IntN(n)
}

// float is a random number in [0, 1).
func (r *runner) float() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rng.Float64()
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
