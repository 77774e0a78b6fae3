package drill

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// smscProc is a `tuma smsc` the cluster drills start: one SMSC every node binds to, so what
// the networks accepted is counted in one place (GET /stats on its control port).
type smscProc struct {
	addr    string // SMPP
	control string // http://…
	cmd     *exec.Cmd
	exited  chan struct{}
	logPath string
}

// smscStats is the SMSC's GET /stats.
type smscStats struct {
	Submits  int64 `json:"submits"`
	Rejected int64 `json:"rejected"`
	Queries  int64 `json:"queries"`
	Seconds  []struct {
		Second  int64 `json:"second"`
		Submits int   `json:"submits"`
	} `json:"seconds"`
}

// smsc starts the SMSC simulator (it dies with the drill) and waits for its control port.
func (r *runner) smsc(ctx context.Context, name string, args ...string) (*smscProc, error) {
	sp, err := freePort()
	if err != nil {
		return nil, err
	}
	cp, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &smscProc{addr: fmt.Sprintf("127.0.0.1:%d", sp), control: fmt.Sprintf("http://127.0.0.1:%d", cp),
		logPath: filepath.Join(r.work, name+"-smsc.log"), exited: make(chan struct{})}
	logf, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(r.cfg.Bin, append([]string{"smsc", "--addr", s.addr, "--control", s.control[len("http://"):],
		"--receipt-delay", "200ms"}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start the SMSC: %w", err)
	}
	go func() {
		_ = s.cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := s.stats(ctx); err == nil {
			return s, nil
		}
		if time.Now().After(deadline) || closed(s.exited) || ctx.Err() != nil {
			s.stop()
			return nil, fmt.Errorf("the SMSC did not start: see %s", s.logPath)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// url is what a node's TUMA_SMPP_<NETWORK> says to bind here.
func (s *smscProc) url() string { return "smpp://tuma:secret@" + s.addr }

// env points every network of a node at this SMSC.
func (s *smscProc) env() map[string]string {
	return map[string]string{"TUMA_CARRIERS": "smpp", "TUMA_SMPP_SAFARICOM": s.url(), "TUMA_SMPP_AIRTEL": s.url(), "TUMA_SMPP_TELKOM": s.url()}
}

func (s *smscProc) stats(ctx context.Context) (smscStats, error) {
	var st smscStats
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, "GET", s.control+"/stats", nil)
	if err != nil {
		return st, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return st, fmt.Errorf("SMSC /stats: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

func (s *smscProc) stop() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}
