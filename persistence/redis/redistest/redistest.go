// Package redistest gives integration tests an isolated view of Redis: the shared local server
// under a key prefix unique to the test, or a private redis-server the test may kill.
package redistest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// URL returns the shared Redis URL (TUMA_TEST_REDIS_URL, else local) after checking it answers.
// When it does not, the test is skipped, or fails when CI is set.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("TUMA_TEST_REDIS_URL")
	addr := "127.0.0.1:6379"
	if u == "" {
		u = "redis://" + addr + "/0"
	} else if h, err := hostOf(u); err == nil {
		addr = h
	}
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Redis unreachable at %s (CI is set, so this fails): %v", addr, err)
		}
		t.Skipf("Redis unreachable (%v); set CI=1 to make this a failure", err)
	}
	c.Close()
	return u
}

// Prefix returns a key prefix no other test uses.
func Prefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "tumatest:" + hex.EncodeToString(b) + ":"
}

// Server is a private redis-server process.
type Server struct {
	URL  string
	Addr string
	t    testing.TB
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
}

// StartServer runs a private redis-server on a free port; it is killed when the test ends.
func StartServer(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server not installed (CI is set, so this fails): %v", err)
		}
		t.Skipf("redis-server not installed; set CI=1 to make this a failure")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), t: t, bin: bin, dir: t.TempDir(), port: port}
	s.URL = "redis://" + s.Addr + "/0"
	t.Cleanup(s.Kill)
	s.start()
	return s
}

// Restart starts the server again on the same port, empty, as after a crash.
func (s *Server) Restart() {
	s.Kill()
	s.start()
}

func (s *Server) start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, "--port", fmt.Sprint(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--logfile", filepath.Join(s.dir, "redis.log"))
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("private redis-server did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops the server abruptly, as a crash or network cut would.
func (s *Server) Kill() {
	if s.cmd.Process != nil && s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

func hostOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	return u.Host, nil
}
