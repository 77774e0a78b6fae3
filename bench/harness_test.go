package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/cmd/tuma/app"
	"github.com/tuma-sms/tuma/persistence/pgtest"
	"github.com/tuma-sms/tuma/persistence/redis/redistest"
)

const adminToken = "bench-admin-token-0123456789"

// node is a whole Tuma running in this process on a fresh database.
type node struct {
	b      *testing.B
	base   string
	client *fasthttp.Client
	dbURL  string
	stop   func()
}

func startNode(b *testing.B, env map[string]string) *node {
	b.Helper()
	vars := map[string]string{
		"TUMA_HTTP_ADDR":          "127.0.0.1:0",
		"TUMA_DATABASE_URL":       pgtest.NewDatabase(b),
		"TUMA_REDIS_URL":          redistest.URL(b),
		"TUMA_REDIS_PREFIX":       redistest.Prefix(),
		"TUMA_DATA_DIR":           b.TempDir(),
		"TUMA_ADMIN_TOKEN":        adminToken,
		"TUMA_ACCESS_LOG":         "false",
		"TUMA_LOG_LEVEL":          "warn",
		"TUMA_BCRYPT_COST":        "4",
		"TUMA_RATE_LIMIT_RPS":     "0",
		"TUMA_SIM_LATENCY":        "0s",
		"TUMA_SIM_RECEIPT_DELAY":  "0s",
		"TUMA_SIM_OUTCOMES":       "delivered=1",
		"TUMA_DATABASE_MAX_CONNS": "24",
		// Benchmarks register their accounts from one address.
		"TUMA_SIGNUP_LIMIT_PER_IP": "0",
		"TUMA_AUTH_LIMIT_PER_IP":   "0",
	}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := app.LoadConfig(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		b.Fatal(err)
	}
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	select { // it serves at once; wait until it has booted
	case <-a.Ready():
	case err := <-done:
		b.Fatalf("node stopped while booting: %v", err)
	case <-time.After(time.Minute):
		b.Fatalf("node did not boot within a minute")
	}
	n := &node{b: b, base: "http://" + a.Addr(), dbURL: cfg.DatabaseURL,
		client: &fasthttp.Client{MaxConnsPerHost: 512, ReadTimeout: time.Minute, WriteTimeout: time.Minute}}
	var once sync.Once
	n.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				b.Errorf("node: %v", err)
			}
		})
	}
	b.Cleanup(n.stop)
	return n
}

// do sends a request and returns status and body.
func (n *node) do(method, path string, body []byte, headers ...string) (int, []byte) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(n.base + path)
	req.Header.SetMethod(method)
	if body != nil {
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(body)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if err := n.client.Do(req, resp); err != nil {
		return 0, []byte(err.Error())
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...)
}

type account struct{ id, key string }

// accounts registers and funds n accounts.
func (n *node) accounts(count int, kes int) []account {
	n.b.Helper()
	out := make([]account, count)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range out {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			body := fmt.Sprintf(`{"email":"bench%d-%d@example.com","password":"Secret123","full_name":"Bench","company_name":"Bench Co"}`, i, time.Now().UnixNano())
			st, resp := n.do("POST", "/auth/register", []byte(body))
			if st != 201 {
				n.b.Errorf("register: %d %s", st, resp)
				return
			}
			var u struct{ ID, APIKey string }
			var m map[string]any
			_ = json.Unmarshal(resp, &m)
			u.ID, u.APIKey = m["id"].(string), m["api_key"].(string)
			st, resp = n.do("POST", "/admin/accounts/"+u.ID+"/credit", []byte(fmt.Sprintf(`{"amount_kes": %d}`, kes)),
				"Authorization", "Bearer "+adminToken)
			if st != 200 {
				n.b.Errorf("credit: %d %s", st, resp)
				return
			}
			out[i] = account{id: u.ID, key: u.APIKey}
		}()
	}
	wg.Wait()
	if n.b.Failed() {
		n.b.FailNow()
	}
	return out
}

// stats reads an account's counts.
func (n *node) stats(a account) map[string]float64 {
	_, body := n.do("GET", "/sms/stats", nil, "X-API-Key", a.key)
	var m map[string]float64
	_ = json.Unmarshal(body, &m)
	return m
}

// sendBody builds a send of count distinct numbers starting at offset.
func sendBody(count, offset int) []byte {
	var sb strings.Builder
	sb.Grow(count*16 + 64)
	sb.WriteString(`{"recipients":[`)
	prefixes := []string{"071", "072", "073", "075", "077", "079", "011", "070"}
	for i := range count {
		if i > 0 {
			sb.WriteByte(',')
		}
		k := offset + i
		fmt.Fprintf(&sb, `"%s%07d"`, prefixes[k%len(prefixes)], k/len(prefixes))
	}
	sb.WriteString(`],"message":"Your order has shipped. Track it at example.com/t/123"}`)
	return []byte(sb.String())
}

// percentile of sorted durations.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	i := int(p * float64(len(ds)-1))
	return ds[i]
}

// rssMB reads this process's resident set size.
func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.Atoi(f[1])
			return float64(kb) / 1024
		}
	}
	return 0
}

// peakRSS samples RSS until stop is closed and returns the highest value seen.
func peakRSS(stop <-chan struct{}) <-chan float64 {
	out := make(chan float64, 1)
	go func() {
		peak := rssMB()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				out <- max(peak, rssMB())
				return
			case <-t.C:
				peak = max(peak, rssMB())
			}
		}
	}()
	return out
}

// cpuMeter measures CPU used by this process and by the rest of the machine (PostgreSQL,
// Redis) over an interval, in cores.
type cpuMeter struct {
	self, total, idle float64
	at                time.Time
}

func readCPU() cpuMeter {
	m := cpuMeter{at: time.Now()}
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		m.self = (ut + st) / 100 // clock ticks (USER_HZ = 100)
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])[1:]
		for i, v := range f {
			x, _ := strconv.ParseFloat(v, 64)
			m.total += x / 100
			if i == 3 || i == 4 { // idle, iowait
				m.idle += x / 100
			}
		}
	}
	return m
}

// report adds this process's and everything else's CPU (cores) since m to the benchmark.
func (m cpuMeter) report(b *testing.B) {
	now := readCPU()
	secs := now.at.Sub(m.at).Seconds()
	busy := (now.total - now.idle) - (m.total - m.idle)
	self := now.self - m.self
	b.ReportMetric(self/secs, "tuma_cores")
	b.ReportMetric((busy-self)/secs, "other_cores")
}

// logMeans logs the mean of a histogram (sum/count) from /metrics, for a breakdown.
func (n *node) logMeans(name, labels string) {
	_, body := n.do("GET", "/metrics", nil)
	var sum, count float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.Contains(line, labels) {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch {
		case strings.HasPrefix(line, name+"_sum"):
			sum += v
		case strings.HasPrefix(line, name+"_count"):
			count += v
		}
	}
	if count > 0 {
		var buckets []string
		prev := 0.0
		for _, line := range strings.Split(string(body), "\n") {
			if !strings.HasPrefix(line, name+"_bucket") || !strings.Contains(line, labels) {
				continue
			}
			le := line[strings.Index(line, `le="`)+4:]
			le = le[:strings.IndexByte(le, '"')]
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			if v > prev {
				buckets = append(buckets, fmt.Sprintf("≤%s:%.0f", le, v-prev))
			}
			prev = v
		}
		n.b.Logf("%s{%s}: mean %.1f ms over %.0f; %s", name, labels, sum/count*1000, count, strings.Join(buckets, " "))
	}
}

// logTableStats logs how PostgreSQL's tables were written (HOT updates keep indexes untouched).
func (n *node) logTableStats() {
	conn, err := pgx.Connect(context.Background(), n.dbURL)
	if err != nil {
		n.b.Log(err)
		return
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_dead_tup
		FROM pg_stat_user_tables WHERE n_tup_ins + n_tup_upd > 0 ORDER BY n_tup_ins + n_tup_upd DESC`)
	if err != nil {
		n.b.Log(err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var ins, upd, hot, dead int64
		_ = rows.Scan(&name, &ins, &upd, &hot, &dead)
		n.b.Logf("%-20s inserts %9d updates %9d hot %9d dead %9d", name, ins, upd, hot, dead)
	}
}

var _ = runtime.GOMAXPROCS
