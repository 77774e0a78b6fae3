// tuma-lab bench smpp: one SMPP bind's submit rate against an SMSC in another process.

package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tuma-sms/tuma/carriers/smpp"
)

// SMPPUsage introduces tuma-lab bench smpp's flags.
const SMPPUsage = `usage: tuma-lab bench smpp [flags]

One bind_transceiver with a window of in-flight submit_sm against an SMSC in another process
(by default tuma smsc of the server binary --bin, started on a free loopback port), for a
fixed time. With --url, a Tuma node's API, it measures the node's SMPP server (--addr, default
the URL's host and port 2775): it signs up an account, funds it with the admin token and makes
an SMPP credential, and binds with it; every submit_sm_resp there comes once the message is
durable and charged. (--system-id, --password and --source bind to any other SMSC.) Every submit asks for a receipt, which the SMSC sends and the bind acknowledges.
Prints submit_sm/s, resp latency and the CPU per message of this process and of the SMSC it
started.`

// SMPPConfig is a run.
type SMPPConfig struct {
	Addr       string // an SMSC to bind to; empty starts Bin's smsc command
	URL        string // a Tuma node's API: bench its SMPP server with an account made there
	AdminToken string
	SystemID   string
	Password   string
	Source     string // source_addr of every submit_sm
	Bin        string // the tuma server binary whose smsc command is started
	Window     int
	Duration   time.Duration
	JSON       bool
}

// ParseSMPPArgs reads tuma-lab bench smpp's flags.
func ParseSMPPArgs(args []string, stderr io.Writer) (SMPPConfig, error) {
	c := SMPPConfig{Window: 100, Duration: 10 * time.Second, SystemID: "tuma", Password: "secret", Source: "TUMA", AdminToken: devAdminToken}
	fs := flag.NewFlagSet("bench smpp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, SMPPUsage); fs.PrintDefaults() }
	fs.StringVar(&c.Addr, "addr", "", "host:port of an SMSC taking system_id tuma, password secret (empty: start tuma smsc)")
	fs.StringVar(&c.URL, "url", "", "a Tuma node's API (e.g. http://127.0.0.1:8080): bench its SMPP server with an account and credential made there")
	fs.StringVar(&c.AdminToken, "admin-token", c.AdminToken, "with --url: the node's TUMA_ADMIN_TOKEN, to fund the account")
	fs.StringVar(&c.SystemID, "system-id", c.SystemID, "system_id to bind with (a Tuma node's SMPP server: a credential's)")
	fs.StringVar(&c.Password, "password", c.Password, "password to bind with")
	fs.StringVar(&c.Source, "source", c.Source, `source_addr of every submit ("" on a Tuma node: the account's default sender)`)
	fs.StringVar(&c.Bin, "bin", "", "the tuma binary whose smsc command to start (default: tuma beside tuma-lab, else on PATH)")
	fs.IntVar(&c.Window, "window", c.Window, "submit_sm in flight on the bind")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long to submit")
	fs.BoolVar(&c.JSON, "json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.Window < 1 || c.Duration <= 0 {
		return c, errors.New("--window and --duration must be positive")
	}
	return c, nil
}

// SMPPResult are a run's figures.
type SMPPResult struct {
	Submits         int64   `json:"submits"`
	PerSecond       float64 `json:"submits_per_second"`
	P50MS           float64 `json:"resp_p50_ms"`
	P99MS           float64 `json:"resp_p99_ms"`
	ClientMicros    float64 `json:"client_cpu_us_per_message"`
	SMSCMicros      float64 `json:"smsc_cpu_us_per_message"` // 0 when the SMSC was not started here
	Receipts        int64   `json:"receipts"`
	PDUsPerWrite    float64 `json:"client_pdus_per_write"`
	Window          int     `json:"window"`
	DurationSeconds float64 `json:"duration_seconds"`
}

// RunSMPP runs the bench.
func RunSMPP(ctx context.Context, c SMPPConfig, stdout io.Writer) (SMPPResult, error) {
	res := SMPPResult{Window: c.Window}
	smscPID := 0
	if c.URL != "" {
		var err error
		if c, err = tumaCredential(ctx, c); err != nil {
			return res, err
		}
	}
	if c.Addr == "" {
		addr, pid, stop, err := startSMSC(ctx, c.Bin)
		if err != nil {
			return res, err
		}
		defer stop()
		c.Addr, smscPID = addr, pid
	}
	var receipts atomic.Int64
	reg := prometheus.NewRegistry()
	bind, err := smpp.NewBind(smpp.BindConfig{Name: "bench", Addr: c.Addr, SystemID: c.SystemID, Password: c.Password,
		Window: c.Window, EnquireLink: 30 * time.Second, ResponseTimeout: 10 * time.Second,
		ReconnectMin: 100 * time.Millisecond, ReconnectMax: time.Second, ThrottlePause: 100 * time.Millisecond},
		smpp.BindHooks{Deliver: func(*smpp.PDU) smpp.Status { receipts.Add(1); return smpp.StatusOK }},
		slog.New(slog.NewTextHandler(io.Discard, nil)), smpp.NewMetrics(reg))
	if err != nil {
		return res, err
	}
	defer bind.Close()
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = bind.WaitBound(bctx)
	cancel()
	if err != nil {
		return res, fmt.Errorf("bind to %s: %w", c.Addr, err)
	}
	cpu0, smsc0 := pidCPU(os.Getpid()), pidCPU(smscPID)
	start := time.Now()
	end := start.Add(c.Duration)
	var wg sync.WaitGroup
	var total atomic.Int64
	var failed error
	var mu sync.Mutex
	lat := make([][]float64, c.Window)
	for w := range c.Window {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
				p := &smpp.PDU{SourceTON: 5, Source: c.Source, DestTON: 1, DestNPI: 1,
					Dest: "25471" + strconv.Itoa(1_000_000+(w*100_000+i)%9_000_000), RegisteredDelivery: 1, // 0710–0719: Safaricom
					ShortMessage: []byte("Habari! Your order 4411 has shipped and arrives tomorrow.")}
				t0 := time.Now()
				if _, err := bind.Submit(ctx, p); err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
				lat[w] = append(lat[w], time.Since(t0).Seconds()*1000)
				total.Add(1)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	res.Submits, res.DurationSeconds = total.Load(), took.Seconds()
	res.PerSecond = float64(res.Submits) / took.Seconds()
	if res.Submits > 0 {
		res.ClientMicros = (pidCPU(os.Getpid()) - cpu0) * 1e6 / float64(res.Submits)
		if smscPID != 0 {
			res.SMSCMicros = (pidCPU(smscPID) - smsc0) * 1e6 / float64(res.Submits)
		}
	}
	var all []float64
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Float64s(all)
	if len(all) > 0 {
		res.P50MS, res.P99MS = all[len(all)/2], all[len(all)*99/100]
	}
	res.Receipts = receipts.Load()
	res.PDUsPerWrite = pdusPerWrite(reg)
	if failed != nil {
		return res, fmt.Errorf("a submit failed: %w", failed)
	}
	if c.JSON {
		return res, json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "one bind, window %d, %s against %s\n", c.Window, took.Round(time.Millisecond), c.Addr)
	fmt.Fprintf(stdout, "  submit_sm/s            %10.0f  (%d submits, %d receipts acknowledged)\n", res.PerSecond, res.Submits, res.Receipts)
	fmt.Fprintf(stdout, "  resp latency p50/p99   %6.2f / %.2f ms\n", res.P50MS, res.P99MS)
	fmt.Fprintf(stdout, "  CPU per message        %6.1f µs client", res.ClientMicros)
	if smscPID != 0 {
		fmt.Fprintf(stdout, ", %.1f µs SMSC", res.SMSCMicros)
	}
	fmt.Fprintf(stdout, "\n  PDUs per write         %6.1f\n", res.PDUsPerWrite)
	return res, nil
}

// startSMSC runs bin's smsc command (tuma smsc) on a free loopback port.
func startSMSC(ctx context.Context, bin string) (addr string, pid int, stop func(), err error) {
	if bin == "" {
		return "", 0, nil, errors.New("no tuma binary to start tuma smsc with (--bin, or --addr of a running SMSC)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", 0, nil, err
	}
	addr = ln.Addr().String()
	_ = ln.Close()
	cmd := exec.CommandContext(ctx, bin, "smsc", "--addr", addr, "--fail-rate", "0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", 0, nil, fmt.Errorf("start %s smsc: %w", filepath.Base(bin), err)
	}
	br := bufio.NewReader(out)
	_, readErr := br.ReadString('\n') // "tuma smsc listening on …"
	drained := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, br); close(drained) }()
	stop = func() { _ = cmd.Process.Signal(os.Interrupt); <-drained; _ = cmd.Wait() }
	if readErr != nil {
		stop()
		return "", 0, nil, fmt.Errorf("tuma smsc did not start: %w", readErr)
	}
	return addr, cmd.Process.Pid, stop, nil
}

// pidCPU is a process's CPU seconds so far (0 for pid 0 or when unreadable).
func pidCPU(pid int) float64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	_, ticks, ok := parseStat(b)
	if !ok {
		return 0
	}
	return float64(ticks) / clockTicks
}

func pdusPerWrite(reg *prometheus.Registry) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return 0
	}
	var pdus, writes float64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "tuma_smpp_pdus_written_total":
				pdus += m.GetCounter().GetValue()
			case "tuma_smpp_writes_total":
				writes += m.GetCounter().GetValue()
			}
		}
	}
	if writes == 0 {
		return 0
	}
	return pdus / writes
}

// tumaCredential makes, on the Tuma node at c.URL, an account funded for the run and an SMPP
// credential, and points c at the node's SMPP server with it.
func tumaCredential(ctx context.Context, c SMPPConfig) (SMPPConfig, error) {
	u, err := url.Parse(c.URL)
	if err != nil || u.Hostname() == "" {
		return c, fmt.Errorf("--url %q: want the node's API, e.g. http://127.0.0.1:8080", c.URL)
	}
	if c.Addr == "" {
		c.Addr = net.JoinHostPort(u.Hostname(), "2775")
	}
	a, err := signUp(ctx, strings.TrimRight(c.URL, "/"), "smpp")
	if err != nil {
		return c, err
	}
	if err := a.fund(ctx, c.AdminToken, 1_000_000); err != nil { // the most one credit may be: 2,000,000 messages
		return c, fmt.Errorf("fund the account (--admin-token): %w", err)
	}
	b, err := a.post(ctx, "/smpp/credentials", map[string]any{"max_binds": 10}, 201)
	if err != nil {
		return c, fmt.Errorf("make an SMPP credential: %w", err)
	}
	var cred struct {
		SystemID string `json:"system_id"`
		Password string `json:"password"`
	}
	if err := json.Unmarshal(b, &cred); err != nil {
		return c, fmt.Errorf("make an SMPP credential: %w", err)
	}
	c.SystemID, c.Password, c.Source = cred.SystemID, cred.Password, "" // the account's default sender
	return c, nil
}
