package drill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// The deps drill owns a PostgreSQL cluster and a Redis of its own, so it can stop them
// without touching the stores other drills (or other people) use. Both run as direct children
// of the drill (postgres in the foreground, not through pg_ctl) so they die with it however
// it ends: nothing is left running on the machine.

// pgCluster is a private PostgreSQL cluster: initdb in a temporary folder, trust
// authentication, a free port on the loopback.
type pgCluster struct {
	bin     string // folder of initdb and postgres
	dir     string // the cluster (and its socket)
	port    int
	logPath string
	cred    *syscall.Credential // set when the drill runs as root (postgres refuses root)
	cmd     *exec.Cmd
	exited  chan struct{}
}

// url is the address of database db on the cluster.
func (c *pgCluster) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// newPGCluster runs initdb. The cluster's folder is a fresh temporary folder (not under the
// work folder: when the drill runs as root the cluster belongs to the postgres user, who must
// reach it); its log goes to logPath.
func newPGCluster(ctx context.Context, bin, logPath string) (*pgCluster, error) {
	if bin == "" {
		return nil, errors.New("no initdb found: install PostgreSQL's server binaries or pass --pg-bin")
	}
	// A symlinked initdb (/usr/local/bin) finds its postgres next to the real file.
	if real, err := filepath.EvalSymlinks(filepath.Join(bin, "initdb")); err == nil {
		bin = filepath.Dir(real)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tuma-drill-pg-")
	if err != nil {
		return nil, err
	}
	c := &pgCluster{bin: bin, dir: dir, port: port, logPath: logPath}
	if os.Geteuid() == 0 {
		if c.cred, err = postgresUser(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if err := os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	ictx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ictx, filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", "postgres",
		"--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w: %s", err, clip(out, 600))
	}
	return c, nil
}

// postgresUser is the account a root drill runs PostgreSQL as.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL needs another user and there is no postgres user: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("postgres user: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// start runs the server and waits until it takes connections.
func (c *pgCluster) start(ctx context.Context) error {
	if c.running() {
		return errors.New("the private PostgreSQL is already running")
	}
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	// Unix sockets need a short path; the drill connects over TCP anyway.
	sock := c.dir
	if len(sock) > 90 {
		sock = ""
	}
	cmd := exec.Command(filepath.Join(c.bin, "postgres"), "-D", filepath.Join(c.dir, "data"), "-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+sock, "-c", "max_connections=100",
		"-c", "log_min_messages=warning")
	cmd.Dir = c.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start postgres: %w", err)
	}
	c.cmd, c.exited = cmd, make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}(cmd, c.exited)
	deadline := time.Now().Add(60 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgx.Connect(cctx, c.url("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.WithoutCancel(ctx))
			return nil
		}
		if !c.running() {
			return fmt.Errorf("the private PostgreSQL exited while starting; see %s", c.logPath)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the private PostgreSQL did not take connections within a minute: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the server: SIGQUIT is an immediate shutdown (what a crash leaves: only what was
// committed survives), SIGINT a fast one. It waits for the exit.
func (c *pgCluster) stop(sig syscall.Signal) error {
	if !c.running() {
		return nil
	}
	if err := c.cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case <-c.exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.exited
		return errors.New("the private PostgreSQL did not stop within 30 s; killed")
	}
}

func (c *pgCluster) running() bool {
	if c.exited == nil {
		return false
	}
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// close stops the server and removes the cluster.
func (c *pgCluster) close() error {
	err := c.stop(syscall.SIGINT)
	return errors.Join(err, os.RemoveAll(c.dir))
}

// redisServer is a private redis-server without persistence on a free port.
type redisServer struct {
	bin     string
	port    int
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

func newRedisServer(bin, logPath string) (*redisServer, error) {
	if _, err := exec.LookPath(bin); err != nil {
		return nil, fmt.Errorf("redis-server: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return &redisServer{bin: bin, port: port, logPath: logPath}, nil
}

func (s *redisServer) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.port) }

// start runs the server on its port (the same one every time) and waits until it answers.
func (s *redisServer) start(ctx context.Context) error {
	if s.running() {
		return errors.New("the private Redis is already running")
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", os.TempDir())
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start redis-server: %w", err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}(cmd, s.exited)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if redisPing(s.port) == nil {
			return nil
		}
		if !s.running() {
			return fmt.Errorf("the private Redis exited while starting; see %s", s.logPath)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.New("the private Redis did not answer within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill is kill -9.
func (s *redisServer) kill() error {
	if !s.running() {
		return nil
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-s.exited
	return nil
}

func (s *redisServer) running() bool {
	if s.exited == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// redisPing sends PING and expects +PONG.
func redisPing(port int) error {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 7)
	if _, err := io.ReadFull(conn, buf); err != nil {
		return err
	}
	if string(buf) != "+PONG\r\n" {
		return fmt.Errorf("redis answered %q to PING", buf)
	}
	return nil
}
