package drill

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Config is one `tuma-lab drill` or `tuma-lab security` run.
type Config struct {
	Bin         string   // the tuma server binary the run starts (required)
	Only        []string // drills to run, in the suite's order (default: all)
	Short       bool     // CI-sized figures
	JSON        string   // write machine-readable results here
	DatabaseURL string   // a PostgreSQL server the drills create their databases on
	RedisURL    string   // a Redis the drills share (each run has its own key prefix)
	PGBin       string   // where initdb and pg_ctl live (the deps drill's private cluster)
	RedisServer string   // the redis-server binary (the deps drill's private Redis)
	Faults      string   // TUMA_FAULTS for every node (binaries built with -tags faults only)
	Keep        bool     // keep the databases and the work folder (logs)
	WorkDir     string   // where logs go (default: a new temporary folder)
	Seed        uint64   // the random moments of kills (0: from the clock)
	Govulncheck bool     // the security checks run govulncheck (GovulncheckModule) on the source tree
	Source      string   // the module's folder, for govulncheck (default: the working directory)
	Progress    io.Writer
}

// Sizes are a run's figures: the full drill or its CI-sized --short form.
type Sizes struct {
	CrashMessages    int // messages the crash drill sends, at least
	CrashKills       int
	CrashCampaign    int // contacts of the campaign killed while it dispatches
	QuietMessages    int // promotional messages waiting out quiet hours through a kill -9
	BacklogMessages  int // messages in the backlog, at least
	BacklogJobs      int // jobs they are sent in
	BacklogTenants   int
	BacklogKills     int           // kills of the backlog drill's second load
	BacklogKillEvery time.Duration // mean time between those kills
	BacklogLatency   time.Duration // the simulated networks' submit latency in the backlog drill
	BacklogRSSGrowth float64       // bytes the node may grow by holding the backlog
	ProbeDelay       time.Duration // longest wait of another tenant's new send behind the backlog
	PGOutage         time.Duration // how long the deps drill stops PostgreSQL
	RedisOutage      time.Duration
	NetworkOutage    time.Duration // how long one network is down
	SlowLoad         time.Duration // sustained load on slow networks
	Storm            time.Duration // the overload drill's storm
	StormAcceptP99   time.Duration // slowest accepted send (p99) during the storm
	ShutdownLoad     time.Duration // load before SIGTERM
	HookMessages     int           // messages whose webhook events wait through the hooks drill's kills
	ClusterMessages  int           // messages the cluster-kill drill sends through HAProxy, at least
	ClusterKills     int           // nodes killed with kill -9 (and started again), one at a time
	ClusterKillGap   time.Duration // mean time between those kills (and the cluster-pause drill's pauses)
	ClusterPauses    int           // nodes paused with SIGSTOP past eviction, then continued
	ClusterPauseFor  time.Duration // how long each stays stopped
	// ClusterTPSMessages: messages to one network capped at 100 TPS over three nodes.
	ClusterTPSMessages int
}

// FullSizes are the figures of `tuma-lab drill` (make drills).
var FullSizes = Sizes{
	CrashMessages: 200_000, CrashKills: 20, CrashCampaign: 100_000, QuietMessages: 100_000,
	BacklogMessages: 1_000_000, BacklogJobs: 5_000, BacklogTenants: 50, BacklogKills: 20,
	BacklogKillEvery: 3 * time.Second, BacklogLatency: 20 * time.Millisecond, BacklogRSSGrowth: 200 << 20, ProbeDelay: time.Second,
	PGOutage: 30 * time.Second, RedisOutage: 15 * time.Second, NetworkOutage: 10 * time.Second,
	SlowLoad: 40 * time.Second, Storm: 15 * time.Second, StormAcceptP99: 2 * time.Second, ShutdownLoad: 5 * time.Second,
	HookMessages: 50_000, ClusterMessages: 100_000, ClusterKills: 10, ClusterKillGap: 15 * time.Second,
	ClusterPauses: 5, ClusterPauseFor: 5 * time.Second, ClusterTPSMessages: 6_000,
}

// ShortSizes are the figures of `tuma-lab drill --short` (CI).
var ShortSizes = Sizes{
	CrashMessages: 20_000, CrashKills: 3, CrashCampaign: 20_000, QuietMessages: 100_000,
	BacklogMessages: 50_000, BacklogJobs: 500, BacklogTenants: 10, BacklogKills: 3,
	BacklogKillEvery: time.Second, BacklogLatency: 100 * time.Millisecond, BacklogRSSGrowth: 100 << 20, ProbeDelay: time.Second,
	PGOutage: 10 * time.Second, RedisOutage: 5 * time.Second, NetworkOutage: 5 * time.Second,
	SlowLoad: 12 * time.Second, Storm: 5 * time.Second, StormAcceptP99: 2 * time.Second, ShutdownLoad: 3 * time.Second,
	HookMessages: 50_000, ClusterMessages: 20_000, ClusterKills: 2, ClusterKillGap: 6 * time.Second,
	ClusterPauses: 1, ClusterPauseFor: 4 * time.Second, ClusterTPSMessages: 1_500,
}

// Sizes of this run.
func (c Config) Sizes() Sizes {
	if c.Short {
		return ShortSizes
	}
	return FullSizes
}

// Names lists everything `tuma-lab drill` runs, in its order: the reliability drills, then the
// security checks, which read the logs of every node the run started.
func Names() []string {
	return []string{"crash", "backlog", "deps", "overload", "shutdown", "hooks", "quiet", "cluster-kill", "cluster-pause", "cluster-tps", security}
}

// security names the security checks among the drills (--only security, the table's rows).
const security = "security"

// GovulncheckModule is the govulncheck the security checks run: pinned, so a run checks the
// same way until someone moves the pin (go list -m -versions golang.org/x/vuln).
const GovulncheckModule = "golang.org/x/vuln/cmd/govulncheck@v1.9.0"

// Usage is the help of `tuma-lab drill`.
const Usage = `usage: tuma-lab drill [flags]

Starts tuma nodes of its own (--bin) on loopback, each on its own database of a real
PostgreSQL and a real Redis, and runs against them:

  reliability drills  crash, backlog, deps, overload, shutdown, hooks: kill -9, a backlog of
                      a million, stores and networks down or slow, request storms, SIGTERM,
                      webhook events pending through kills
  security checks     security: see tuma-lab security -h; last, as they read every log of
                      the run

All by default (--only to choose). Prints one table: drill, check, figure, target, PASS/FAIL.

flags:`

// SecurityUsage is the help of `tuma-lab security`.
const SecurityUsage = `usage: tuma-lab security [flags]

The security checks alone. They start two tuma nodes of their own (--bin) on loopback and
probe only those, never another host: every operation of the node's /openapi.json without
credentials, with bad ones, with another tenant's and as a suspended account; oversized,
malformed, mistyped and hostile input (SQL, markup, NUL, 100 KB strings) in every field;
brute force on the sign-up, login, code and mail budgets; the API documents' exposure; every
log searched for every secret used; and govulncheck on the source:
go run ` + GovulncheckModule + `.

Prints one table: check, figure, target, PASS/FAIL.

flags:`

// ParseArgs reads the flags of `tuma-lab drill`. lookup reads the environment.
func ParseArgs(args []string, lookup func(string) (string, bool), stderr io.Writer) (Config, error) {
	var only string
	c, err := parse("drill", Usage, args, lookup, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&only, "only", "", "comma-separated drills to run (default: all)")
	})
	if err != nil {
		return c, err
	}
	if c.Only, err = parseOnly(only); err != nil {
		return c, err
	}
	return c, nil
}

// ParseSecurityArgs reads the flags of `tuma-lab security`: those of drill but --only.
func ParseSecurityArgs(args []string, lookup func(string) (string, bool), stderr io.Writer) (Config, error) {
	c, err := parse("security", SecurityUsage, args, lookup, stderr, func(*flag.FlagSet) {})
	c.Only = []string{security}
	return c, err
}

// parse reads the flags drill and security share, and those more adds.
func parse(name, usage string, args []string, lookup func(string) (string, bool), stderr io.Writer, more func(*flag.FlagSet)) (Config, error) {
	env := func(k, def string) string {
		if v, ok := lookup(k); ok && v != "" {
			return v
		}
		return def
	}
	var c Config
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	more(fs)
	fs.BoolVar(&c.Short, "short", false, "CI-sized figures (see README: Reliability)")
	fs.StringVar(&c.JSON, "json", "", "write the results to this file as JSON")
	fs.StringVar(&c.Bin, "bin", "", "the tuma server binary to start (default: tuma beside tuma-lab, else on PATH)")
	fs.StringVar(&c.DatabaseURL, "database-url", env("TUMA_DRILL_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL server the drills create their own databases on (env TUMA_DRILL_DATABASE_URL)")
	fs.StringVar(&c.RedisURL, "redis-url", env("TUMA_DRILL_REDIS_URL", "redis://127.0.0.1:6379/0"), "Redis the drills share, each with its own key prefix (env TUMA_DRILL_REDIS_URL)")
	fs.StringVar(&c.PGBin, "pg-bin", env("TUMA_DRILL_PG_BIN", ""), "folder of initdb and pg_ctl for the private cluster (default: found)")
	fs.StringVar(&c.RedisServer, "redis-server", env("TUMA_DRILL_REDIS_SERVER", "redis-server"), "redis-server binary for the private Redis")
	fs.StringVar(&c.Faults, "faults", "", "TUMA_FAULTS for the nodes (a binary built with -tags faults; the drills' own tests)")
	fs.BoolVar(&c.Keep, "keep", false, "keep the drills' databases and logs")
	fs.StringVar(&c.WorkDir, "work-dir", "", "folder for the nodes' logs (default: a temporary folder, removed when every drill passes)")
	fs.Uint64Var(&c.Seed, "seed", 0, "seed of the random kill moments (0: from the clock)")
	fs.BoolVar(&c.Govulncheck, "govulncheck", true, "the security checks run govulncheck on the source (go run "+GovulncheckModule+")")
	fs.StringVar(&c.Source, "source", "", "module folder govulncheck scans (default: the working directory)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	return c, nil
}

func parseOnly(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return Names(), nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(Names(), n) {
			return nil, fmt.Errorf("unknown drill %q (%s)", n, strings.Join(Names(), ", "))
		}
		want[n] = true
	}
	var out []string
	for _, n := range Names() {
		if want[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// resolve fills the defaults that need the file system.
func (c *Config) resolve() error {
	if c.Bin == "" {
		return errors.New("no tuma binary to start (--bin)")
	}
	if _, err := os.Stat(c.Bin); err != nil {
		return fmt.Errorf("tuma binary: %w", err)
	}
	if len(c.Only) == 0 {
		c.Only = Names()
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Source == "" {
		c.Source, _ = os.Getwd()
	}
	if c.PGBin == "" {
		c.PGBin = findPGBin()
	}
	return nil
}

// findPGBin finds the folder of initdb: on PATH, else Debian's /usr/lib/postgresql/<n>/bin.
func findPGBin() string {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.Sort(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	return ""
}
