package drill

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// node is one tuma server process the drill starts, kills and starts again: the same
// address, database and Redis prefix every time.
type node struct {
	r       *runner
	name    string
	env     map[string]string
	base    string // http://127.0.0.1:port
	dbURL   string
	logPath string
	c       *client

	cmd       *exec.Cmd
	exited    chan struct{}
	state     *os.ProcessState
	starts    int
	startedAt time.Time
}

// startTimes is how long a start took to serve: to /healthz 2xx and to /readyz 200.
type startTimes struct {
	healthz, readyz time.Duration
}

// newNode prepares a node with its own database (created by the node on first start) and
// Redis prefix. env overrides the drill defaults ("" deletes a variable).
func (r *runner) newNode(name string, env map[string]string) (*node, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	db := "tuma_drill_" + r.id + "_" + strings.ReplaceAll(name, "-", "_")
	dbURL, err := withDatabase(r.cfg.DatabaseURL, db)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.databases = append(r.databases, dbURL)
	r.mu.Unlock()
	vars := map[string]string{
		"TUMA_HTTP_ADDR":    fmt.Sprintf("127.0.0.1:%d", port),
		"TUMA_DATABASE_URL": dbURL,
		"TUMA_REDIS_URL":    r.cfg.RedisURL,
		"TUMA_REDIS_PREFIX": "drill:" + r.id + ":" + name + ":",
		"TUMA_DATA_DIR":     filepath.Join(r.work, name+"-data"),
		"TUMA_ADMIN_TOKEN":  adminToken,
		"TUMA_ENV":          "development",
		"TUMA_JWT_SECRET":   r.jwtSecret,
		"TUMA_ACCESS_LOG":   "false",
		"TUMA_LOG_FORMAT":   "json",
		// Nodes are killed with SIGKILL and their logs scanned for secrets: every line on disk.
		"TUMA_LOG_BUFFER":          "0",
		"TUMA_RATE_LIMIT_RPS":      "0",
		"TUMA_AUTH_LIMIT_PER_IP":   "0",
		"TUMA_SIGNUP_LIMIT_PER_IP": "0",
		"TUMA_BCRYPT_COST":         "4",
		"TUMA_LOW_BALANCE_KES":     "0",
		"TUMA_SIM_LATENCY":         "20ms",
		// Receipts come soon after a submit, so few are pending (and lost with the
		// simulated network's memory) at a kill; the stale-sent sweep asks about those.
		"TUMA_SIM_RECEIPT_DELAY": "200ms",
		"TUMA_RECEIPT_TIMEOUT":   "5s",
		"TUMA_RECEIPT_DEADLINE":  "10m",
		"TUMA_REQUEST_TIMEOUT":   "10s",
		"TUMA_SHUTDOWN_TIMEOUT":  "10s",
	}
	if r.cfg.Faults != "" {
		vars["TUMA_FAULTS"] = r.cfg.Faults
	}
	for k, v := range env {
		if v == "" {
			delete(vars, k)
		} else {
			vars[k] = v
		}
	}
	base := "http://" + vars["TUMA_HTTP_ADDR"]
	return &node{r: r, name: name, env: vars, base: base, dbURL: vars["TUMA_DATABASE_URL"],
		logPath: filepath.Join(r.work, name+".log"), c: newClient(base, 256, 60*time.Second, r.secrets)}, nil
}

// start runs the node and waits until /healthz and then /readyz answer, measuring both from
// the moment the process was started.
func (n *node) start(ctx context.Context) (startTimes, error) {
	if err := n.launch(); err != nil {
		return startTimes{}, err
	}
	return n.waitServing(ctx, n.lastStart())
}

func (n *node) lastStart() time.Time { return n.startedAt }

// launch starts the process without waiting for it to serve.
func (n *node) launch() error {
	if n.running() {
		return fmt.Errorf("node %s is already running", n.name)
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(n.r.cfg.Bin, "serve")
	cmd.Env = n.environ()
	cmd.Stdout, cmd.Stderr = logf, logf
	// The node dies with the drill, whatever happens to the drill.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	n.startedAt = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", n.r.cfg.Bin, err)
	}
	n.starts++
	n.cmd, n.exited = cmd, make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		logf.Close()
		n.state = cmd.ProcessState
		close(done)
	}(cmd, n.exited)
	return nil
}

// waitServing waits for /healthz 2xx, then /readyz 200, timed from since.
func (n *node) waitServing(ctx context.Context, since time.Time) (startTimes, error) {
	var st startTimes
	if err := n.poll(ctx, "/healthz", 30*time.Second); err != nil {
		return st, err
	}
	st.healthz = time.Since(since)
	if err := n.poll(ctx, "/readyz", 3*time.Minute); err != nil {
		return st, err
	}
	st.readyz = time.Since(since)
	return st, nil
}

// poll waits until path answers 200, failing early if the process exits.
func (n *node) poll(ctx context.Context, path string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var last reply
	for time.Now().Before(deadline) {
		if !n.running() {
			return fmt.Errorf("node %s exited while starting (%v); see %s", n.name, n.state, n.logPath)
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		last = n.c.do(rctx, "GET", path, nil)
		cancel()
		if last.status == 200 {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("node %s: %s did not answer 200 within %s (last %d %v %s)", n.name, path, limit, last.status, last.err, clip(last.body, 200))
}

func (n *node) running() bool {
	if n.exited == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// kill is kill -9.
func (n *node) kill() error {
	if !n.running() {
		return fmt.Errorf("node %s is not running", n.name)
	}
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-n.exited
	return nil
}

// term sends SIGTERM and waits up to limit for the exit; it returns the exit code and how
// long the exit took (code -1 and an error when it did not exit in time: it is then killed).
func (n *node) term(limit time.Duration) (int, time.Duration, error) {
	if !n.running() {
		return -1, 0, fmt.Errorf("node %s is not running", n.name)
	}
	start := time.Now()
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return -1, 0, err
	}
	select {
	case <-n.exited:
		return n.state.ExitCode(), time.Since(start), nil
	case <-time.After(limit):
		_ = n.cmd.Process.Signal(syscall.SIGKILL)
		<-n.exited
		return -1, time.Since(start), fmt.Errorf("node %s did not exit within %s of SIGTERM", n.name, limit)
	}
}

// stop ends the node however it can (cleanup).
func (n *node) stop() {
	if n.running() {
		if _, _, err := n.term(30 * time.Second); err != nil {
			n.r.logf("%v", err)
		}
	}
}

// environ is the process environment without the caller's TUMA_* variables, plus the node's.
func (n *node) environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TUMA_") {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(n.env))
	for k := range n.env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, k+"="+n.env[k])
	}
	return out
}

// db opens a connection to the node's database.
func (n *node) db(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return pgx.Connect(ctx, n.dbURL)
}

// freePort asks the kernel for a free TCP port on the loopback.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// withDatabase is the PostgreSQL URL u naming database db instead.
func withDatabase(u, db string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("database URL: %w", err)
	}
	if p.Scheme != "postgres" && p.Scheme != "postgresql" {
		return "", errors.New("database URL must be postgres://…")
	}
	p.Path = "/" + db
	return p.String(), nil
}

// dropDatabase drops a drill's database (the node's own URL names it).
func dropDatabase(ctx context.Context, dbURL string) error {
	p, err := url.Parse(dbURL)
	if err != nil {
		return err
	}
	name := strings.TrimPrefix(p.Path, "/")
	p.Path = "/postgres"
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.String())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}
