package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	tapi "github.com/tuma-sms/tuma/transport/api"
)

// api talks to the Tuma under test. Safe for concurrent use.
type api struct {
	base       string
	adminToken string
	timeout    time.Duration
	client     *fasthttp.Client
}

func newAPI(cfg Config) *api {
	return &api{
		base:       strings.TrimRight(cfg.URL, "/"),
		adminToken: cfg.AdminToken,
		timeout:    cfg.RequestTimeout,
		client: &fasthttp.Client{
			Name: "tuma-bench",
			// Every client, the sampler and the drain pollers may hold a connection at once.
			MaxConnsPerHost:     cfg.Concurrency + 32,
			MaxConnWaitTimeout:  cfg.RequestTimeout,
			MaxIdleConnDuration: time.Minute,
			ReadTimeout:         cfg.RequestTimeout,
			WriteTimeout:        cfg.RequestTimeout,
			// Large sends answer in one small body; /metrics is the largest thing read.
			MaxResponseBodySize: 64 << 20,
		},
	}
}

// call is one request's outcome: status 0 means a transport error (err is set).
type call struct {
	status    int
	body      []byte
	metricsAt string // the server's time of a /metrics reading (tapi.MetricsTimeHeader)
	err       error
}

// do sends a request. body may be nil; headers are name, value pairs. The response body is
// copied out, so the caller may keep it. fasthttp takes no context, so ctx bounds the request
// through its deadline, and its cancellation is seen before the request starts.
func (a *api) do(ctx context.Context, method, path string, body []byte, headers ...string) call {
	if err := ctx.Err(); err != nil {
		return call{err: err}
	}
	timeout := a.timeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	a.prepare(req, method, path, body, headers...)
	if err := a.client.DoTimeout(req, resp, timeout); err != nil {
		return call{err: fmt.Errorf("%s %s: %w", method, path, err)}
	}
	return call{status: resp.StatusCode(), body: append([]byte(nil), resp.Body()...),
		metricsAt: string(resp.Header.Peek(tapi.MetricsTimeHeader))}
}

func (a *api) prepare(req *fasthttp.Request, method, path string, body []byte, headers ...string) {
	req.SetRequestURI(a.base + path)
	req.Header.SetMethod(method)
	if body != nil {
		req.Header.SetContentType("application/json")
		// The caller keeps body alive and unchanged until the call returns.
		req.SetBodyRaw(body)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
}

// expect turns a call into an error unless it answered want.
func (c call) expect(want int) error {
	if c.err != nil {
		return c.err
	}
	if c.status != want {
		return fmt.Errorf("status %d (want %d): %s", c.status, want, truncate(c.body, 300))
	}
	return nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func (a *api) admin() []string { return []string{"Authorization", "Bearer " + a.adminToken} }

// health checks the server answers at all, so a wrong --url fails fast and clearly.
func (a *api) health(ctx context.Context) error {
	if err := a.do(ctx, "GET", "/healthz", nil).expect(200); err != nil {
		return fmt.Errorf("tuma at %s is not answering: %w", a.base, err)
	}
	return nil
}

// tenant is one benchmark account. accepted counts the messages the server accepted (202)
// for it, which is what its statistics must add up to once drained.
type tenant struct {
	id, key  string
	accepted atomic.Int64
}

// benchPassword satisfies the password rules (8+ characters, an upper-case letter, a digit).
const benchPassword = "BenchSecret1"

// register creates one account and returns it with its API key.
func (a *api) register(ctx context.Context, email string) (*tenant, error) {
	body, err := json.Marshal(map[string]string{
		"email": email, "password": benchPassword, "full_name": "Bench Tenant", "company_name": "Bench",
		"phone": "0712345678", "business_type": "load test", "country": "KE",
	})
	if err != nil {
		return nil, err
	}
	c := a.do(ctx, "POST", "/auth/register", body)
	if err := c.expect(201); err != nil {
		return nil, fmt.Errorf("register %s: %w", email, err)
	}
	var u struct {
		ID     string `json:"id"`
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(c.body, &u); err != nil || u.ID == "" || u.APIKey == "" {
		return nil, fmt.Errorf("register %s: response has no id and api_key: %s", email, truncate(c.body, 300))
	}
	return &tenant{id: u.ID, key: u.APIKey}, nil
}

// credit funds an account through the admin API.
func (a *api) credit(ctx context.Context, id string, kes int) error {
	body := fmt.Appendf(nil, `{"amount_kes":%d,"description":"tuma bench"}`, kes)
	if err := a.do(ctx, "POST", "/admin/accounts/"+id+"/credit", body, a.admin()...).expect(200); err != nil {
		return fmt.Errorf("credit account %s (is --admin-token right?): %w", id, err)
	}
	return nil
}

// suspend is the admin API's only way to retire an account.
func (a *api) suspend(ctx context.Context, id string) error {
	if err := a.do(ctx, "POST", "/admin/accounts/"+id+"/suspend", nil, a.admin()...).expect(200); err != nil {
		return fmt.Errorf("suspend account %s: %w", id, err)
	}
	return nil
}

// messageStats is GET /sms/stats.
type messageStats struct {
	Total     int64 `json:"total"`
	Delivered int64 `json:"delivered"`
	Sent      int64 `json:"sent"`
	Failed    int64 `json:"failed"`
	Queued    int64 `json:"queued"`
}

func (a *api) stats(ctx context.Context, t *tenant) (messageStats, error) {
	c := a.do(ctx, "GET", "/sms/stats", nil, "X-API-Key", t.key)
	if err := c.expect(200); err != nil {
		return messageStats{}, fmt.Errorf("stats of %s: %w", t.id, err)
	}
	var s messageStats
	if err := json.Unmarshal(c.body, &s); err != nil {
		return messageStats{}, fmt.Errorf("stats of %s: %w", t.id, err)
	}
	return s, nil
}

// scrape reads the server's Prometheus metrics. The snapshot's time is the middle of the
// request, the best guess at when the server read its counters.
func (a *api) scrape(ctx context.Context) (snapshot, error) {
	start := time.Now()
	c := a.do(ctx, "GET", "/metrics", nil)
	end := time.Now()
	if err := c.expect(200); err != nil {
		return snapshot{}, fmt.Errorf("metrics: %w", err)
	}
	samples, err := parseProm(c.body, wantedMetrics())
	if err != nil {
		return snapshot{}, fmt.Errorf("metrics: %w", err)
	}
	// The server says when it read its counters; a scrape answered late (a busy CPU) would
	// otherwise misplace its counts by up to the whole round trip, enough to fake a burst.
	at := start.Add(end.Sub(start) / 2)
	if t, err := time.Parse(time.RFC3339Nano, c.metricsAt); err == nil {
		at = t
	}
	return newSnapshot(at, samples), nil
}

// runID names this run's accounts, so several runs against one server never collide.
func runID() (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("run id: %w", err)
	}
	return time.Now().UTC().Format("20060102t150405") + "-" + hex.EncodeToString(b), nil
}
