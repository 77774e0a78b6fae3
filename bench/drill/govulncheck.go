package drill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// govulncheckLimit bounds the govulncheck run, its download and build included.
const govulncheckLimit = 5 * time.Minute

// vulnResult is what one govulncheck run said.
type vulnResult struct {
	code int // exit code: 0 clean, 3 vulnerabilities found, anything else: it could not check
	out  string
	err  error
	took time.Duration
}

// startGovulncheck runs `go run GovulncheckModule ./...` on the source in the background,
// while the probes run.
func startGovulncheck(ctx context.Context, dir string, limit time.Duration) <-chan vulnResult {
	ch := make(chan vulnResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		start := time.Now()
		cmd := exec.CommandContext(ctx, "go", "run", GovulncheckModule, "./...")
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		// go run starts govulncheck as a child: stop the whole group, not just go.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 5 * time.Second
		err := cmd.Run()
		res := vulnResult{out: out.String(), err: err, took: time.Since(start)}
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit):
			res.code = exit.ExitCode()
		default:
			res.code = -1
		}
		ch <- res
	}()
	return ch
}

// vulnRow records govulncheck's verdict: clean passes, findings fail, and a run that could
// not check (no module proxy, no vulnerability database reachable) is reported as such.
func vulnRow(rec *recorder, res vulnResult) {
	switch res.code {
	case 0:
		rec.check("govulncheck", true, "no known vulnerability reaches the code ("+secs(res.took)+")", "clean", "")
	case 3:
		var found []string
		for _, l := range strings.Split(res.out, "\n") {
			if strings.HasPrefix(l, "Vulnerability #") {
				found = append(found, strings.TrimSpace(l))
			}
		}
		rec.check("govulncheck", false, fmt.Sprintf("%d vulnerabilities reach the code", len(found)), "clean", strings.Join(found, "; "))
	default:
		rec.info("govulncheck", 0, "", fmt.Sprintf("could not check (%v): %s", res.err, lastLine(res.out)))
	}
}

// lastLine is the last line of out that says something (go run's "exit status" does not).
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "exit status") {
			return clip([]byte(l), 200)
		}
	}
	return "no output"
}
