package drill

import (
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

// Config is one `tuma drill` run.
type Config struct {
	Bin         string   // the tuma binary the drills start (default: this executable)
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
	Govulncheck bool     // the security drill runs govulncheck on the source tree
	Source      string   // the module's folder, for govulncheck (default: the working directory)
	Progress    io.Writer
}

// Sizes are a run's figures: the full drill or its CI-sized --short form.
type Sizes struct {
	CrashMessages    int // messages the crash drill sends, at least
	CrashKills       int
	CrashCampaign    int // contacts of the campaign killed while it dispatches
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
}

// FullSizes are the figures of `tuma drill` (make drills).
var FullSizes = Sizes{
	CrashMessages: 200_000, CrashKills: 20, CrashCampaign: 100_000,
	BacklogMessages: 1_000_000, BacklogJobs: 5_000, BacklogTenants: 50, BacklogKills: 20,
	BacklogKillEvery: 3 * time.Second, BacklogLatency: 20 * time.Millisecond, BacklogRSSGrowth: 200 << 20, ProbeDelay: time.Second,
	PGOutage: 30 * time.Second, RedisOutage: 15 * time.Second, NetworkOutage: 10 * time.Second,
	SlowLoad: 40 * time.Second, Storm: 15 * time.Second, StormAcceptP99: 2 * time.Second, ShutdownLoad: 5 * time.Second,
}

// ShortSizes are the figures of `tuma drill --short` (CI).
var ShortSizes = Sizes{
	CrashMessages: 20_000, CrashKills: 3, CrashCampaign: 20_000,
	BacklogMessages: 50_000, BacklogJobs: 500, BacklogTenants: 10, BacklogKills: 3,
	BacklogKillEvery: time.Second, BacklogLatency: 100 * time.Millisecond, BacklogRSSGrowth: 100 << 20, ProbeDelay: time.Second,
	PGOutage: 10 * time.Second, RedisOutage: 5 * time.Second, NetworkOutage: 5 * time.Second,
	SlowLoad: 12 * time.Second, Storm: 5 * time.Second, StormAcceptP99: 2 * time.Second, ShutdownLoad: 3 * time.Second,
}

// Sizes of this run.
func (c Config) Sizes() Sizes {
	if c.Short {
		return ShortSizes
	}
	return FullSizes
}

// Names lists every drill in the order `tuma drill` runs them. security runs last: it reads
// the logs of every node the run started.
func Names() []string {
	return []string{"crash", "backlog", "deps", "overload", "shutdown", "security"}
}

// Usage is the help of `tuma drill`.
const Usage = `usage: tuma drill [flags]

Runs reliability drills against the real tuma binary on real PostgreSQL and Redis, each in
its own database, and prints one table: drill, check, figure, target, PASS/FAIL.

drills: crash, backlog, deps, overload, shutdown, security (all by default)

flags:`

// ParseArgs reads the flags of `tuma drill`. lookup reads the environment.
func ParseArgs(args []string, lookup func(string) (string, bool), stderr io.Writer) (Config, error) {
	env := func(k, def string) string {
		if v, ok := lookup(k); ok && v != "" {
			return v
		}
		return def
	}
	var c Config
	var only string
	fs := flag.NewFlagSet("drill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, Usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&only, "only", "", "comma-separated drills to run (default: all)")
	fs.BoolVar(&c.Short, "short", false, "CI-sized figures (see README: Reliability)")
	fs.StringVar(&c.JSON, "json", "", "write the results to this file as JSON")
	fs.StringVar(&c.Bin, "bin", "", "the tuma binary to drill (default: this executable)")
	fs.StringVar(&c.DatabaseURL, "database-url", env("TUMA_DRILL_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL server the drills create their own databases on (env TUMA_DRILL_DATABASE_URL)")
	fs.StringVar(&c.RedisURL, "redis-url", env("TUMA_DRILL_REDIS_URL", "redis://127.0.0.1:6379/0"), "Redis the drills share, each with its own key prefix (env TUMA_DRILL_REDIS_URL)")
	fs.StringVar(&c.PGBin, "pg-bin", env("TUMA_DRILL_PG_BIN", ""), "folder of initdb and pg_ctl for the private cluster (default: found)")
	fs.StringVar(&c.RedisServer, "redis-server", env("TUMA_DRILL_REDIS_SERVER", "redis-server"), "redis-server binary for the private Redis")
	fs.StringVar(&c.Faults, "faults", "", "TUMA_FAULTS for the nodes (a binary built with -tags faults; the drills' own tests)")
	fs.BoolVar(&c.Keep, "keep", false, "keep the drills' databases and logs")
	fs.StringVar(&c.WorkDir, "work-dir", "", "folder for the nodes' logs (default: a temporary folder, removed when every drill passes)")
	fs.Uint64Var(&c.Seed, "seed", 0, "seed of the random kill moments (0: from the clock)")
	fs.BoolVar(&c.Govulncheck, "govulncheck", true, "the security drill runs govulncheck on the source (go run golang.org/x/vuln/cmd/govulncheck@latest)")
	fs.StringVar(&c.Source, "source", "", "module folder govulncheck scans (default: the working directory)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	var err error
	if c.Only, err = parseOnly(only); err != nil {
		return c, err
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
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find this executable (use --bin): %w", err)
		}
		c.Bin = exe
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
