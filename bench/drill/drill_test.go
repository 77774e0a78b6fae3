package drill

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// faultsBin is a tuma binary built with -tags faults for the drills' own tests: the same
// code as the real one, plus the TUMA_FAULTS switches that make each drill's checks fail.
var faultsBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tuma-drill-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	faultsBin = filepath.Join(dir, "tuma")
	build := exec.Command("go", "build", "-tags", "faults", "-o", faultsBin, "./cmd/tuma")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the faults binary: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runDrill runs one drill in its --short form on the faults binary with the given faults
// ("" for none), logging its progress to the test.
func runDrill(t *testing.T, name, faults string) Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cfg := Config{Bin: faultsBin, Only: []string{name}, Short: true, Faults: faults,
		DatabaseURL: envOr("TUMA_DRILL_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		RedisURL:    envOr("TUMA_DRILL_REDIS_URL", "redis://127.0.0.1:6379/0"),
		RedisServer: "redis-server", Source: "../..", Progress: testWriter{t}}
	rep, err := Run(ctx, cfg, io.Discard)
	if err != nil {
		t.Fatalf("drill %s: %v", name, err)
	}
	return rep
}

// mustPass fails the test with every failed row unless the run passed.
func mustPass(t *testing.T, rep Report) {
	t.Helper()
	if !rep.Pass {
		t.Fatalf("the drill failed:\n  %s", strings.Join(rep.Failed(), "\n  "))
	}
}

// mustFail fails the test unless every named check of the drill failed (a fault must be noticed
// where it shows).
func mustFail(t *testing.T, rep Report, drill string, checks ...string) {
	t.Helper()
	if rep.Pass {
		t.Fatalf("the drill passed with faults %q injected", rep.Faults)
	}
	for _, c := range checks {
		row, ok := rep.Row(drill, c)
		if !ok {
			t.Errorf("no %s/%s row", drill, c)
			continue
		}
		if row.Pass {
			t.Errorf("%s/%s passed with faults %q injected: %s", drill, c, rep.Faults, row.Figure)
		}
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// testWriter logs a drill's progress lines to the test.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestCrashDrill(t *testing.T) {
	mustPass(t, runDrill(t, "crash", ""))
}

// The crash drill notices refunds that never reach the wallet, accounts' message counts that
// never move, and keys given back after an unknown outcome (a retry charged twice).
func TestCrashDrillNoticesFaults(t *testing.T) {
	t.Run("skip-refunds", func(t *testing.T) {
		mustFail(t, runDrill(t, "crash", "skip-refunds"), "crash", "ledger")
	})
	t.Run("skip-counts", func(t *testing.T) {
		mustFail(t, runDrill(t, "crash", "skip-counts"), "crash", "account counts")
	})
	t.Run("release-keys", func(t *testing.T) {
		// A key given back shows only when a send answered 503 (its outcome unknown) is
		// retried within the claim's lease, which depends on where the kills land: about one
		// short run in four has no such retry (measured: 2 of 8). The check must notice the
		// fault within a few runs; it never fails without it (TestCrashDrill).
		const tries = 4
		for i := 1; ; i++ {
			rep := runDrill(t, "crash", "release-keys")
			row, ok := rep.Row("crash", "claims kept on unknown outcomes")
			if !ok || !row.Pass || i == tries {
				mustFail(t, rep, "crash", "claims kept on unknown outcomes")
				return
			}
			t.Logf("run %d had no retry within a lease (%s); running again", i, row.Figure)
		}
	})
}

// Promotional messages accepted inside quiet hours wait through a kill -9 and go, each once,
// when the window ends.
func TestQuietDrill(t *testing.T) {
	mustPass(t, runDrill(t, "quiet", ""))
}

// Three nodes as one cluster behind HAProxy, two of them killed -9 in turn under load: every
// message final once, every ledger balanced, no key charged twice.
func TestClusterKillDrill(t *testing.T) {
	mustPass(t, runDrill(t, "cluster-kill", ""))
}

// A node of three paused past eviction and continued exits to rejoin; nothing it held is
// sent or charged twice.
func TestClusterPauseDrill(t *testing.T) {
	mustPass(t, runDrill(t, "cluster-pause", ""))
}

// The cluster-pause drill notices a node that wakes from a pause and goes on.
func TestClusterPauseDrillNoticesFaults(t *testing.T) {
	mustFail(t, runDrill(t, "cluster-pause", "unwatched"), "cluster-pause", "woken node exits")
}

// Three nodes keep one network to its 100 TPS, counted at the SMSC.
func TestClusterTPSDrill(t *testing.T) {
	mustPass(t, runDrill(t, "cluster-tps", ""))
}

// The cluster-tps drill notices nodes that each keep to the cap alone.
func TestClusterTPSDrillNoticesFaults(t *testing.T) {
	mustFail(t, runDrill(t, "cluster-tps", "local-tps"), "cluster-tps", "submits in a second, at worst")
}

// Webhook events pending through two kills -9 all arrive, once each by id, in order.
func TestHooksDrill(t *testing.T) {
	mustPass(t, runDrill(t, "hooks", ""))
}

func TestBacklogDrill(t *testing.T) {
	mustPass(t, runDrill(t, "backlog", ""))
}

// The backlog drill notices a start that serves but never resumes the work of earlier runs.
func TestBacklogDrillNoticesFaults(t *testing.T) {
	mustFail(t, runDrill(t, "backlog", "skip-resume"), "backlog", "backlog drain rate")
}

func TestOverloadDrill(t *testing.T) {
	mustPass(t, runDrill(t, "overload", ""))
}

// The overload drill notices a node that queues every request instead of shedding.
func TestOverloadDrillNoticesFaults(t *testing.T) {
	mustFail(t, runDrill(t, "overload", "no-shed"), "overload", "crowd shed (storm 1)", "accepted sends stay fast (storm 1)")
}
