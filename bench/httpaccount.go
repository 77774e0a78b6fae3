// The account a contacts or campaign run drives the node as, over net/http: its CSV uploads
// and exports stream, which the load runs' fasthttp client (client.go) does not do.

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// httpAccount is an account registered for one run, with the client that drives it.
type httpAccount struct {
	hc                   *http.Client
	base, key, id, email string
}

// signUp registers an account for a run. The client's timeout outlasts the longest request
// (an import of a million rows).
func signUp(ctx context.Context, base, label string) (*httpAccount, error) {
	a := &httpAccount{hc: &http.Client{Timeout: 30 * time.Minute}, base: base}
	email := fmt.Sprintf("bench-%s-%d@example.com", label, time.Now().UnixNano())
	body, _ := json.Marshal(map[string]string{"email": email, "password": "Bench1234", "full_name": "Bench", "company_name": "Bench"})
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/auth/register", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("register: %w", err)
	}
	defer resp.Body.Close()
	var u struct {
		APIKey string `json:"api_key"`
		ID     string `json:"id"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 || json.Unmarshal(b, &u) != nil {
		return nil, fmt.Errorf("register answered %d %s (is TUMA_SIGNUP_LIMIT_PER_IP=0 on the node?)", resp.StatusCode, b)
	}
	a.key, a.id, a.email = u.APIKey, u.ID, email
	return a, nil
}

// get reads path (with the query) as the account and wants 200.
func (a *httpAccount) get(ctx context.Context, path string) ([]byte, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", a.base+path, nil)
	req.Header.Set("X-API-Key", a.key)
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %d %.200s", a.base+path, resp.StatusCode, b)
	}
	return b, err
}

// post sends body as JSON as the account and wants status.
func (a *httpAccount) post(ctx context.Context, path string, body any, want int) ([]byte, error) {
	return a.send(ctx, path, "X-API-Key", a.key, body, want)
}

// fund credits the account with kes through the admin API.
func (a *httpAccount) fund(ctx context.Context, adminToken string, kes int) error {
	_, err := a.send(ctx, "/admin/accounts/"+a.id+"/credit", "Authorization", "Bearer "+adminToken, map[string]any{"amount_kes": kes}, 200)
	return err
}

func (a *httpAccount) send(ctx context.Context, path, authHeader, auth string, body any, want int) ([]byte, error) {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, "POST", a.base+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(authHeader, auth)
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return b, fmt.Errorf("POST %s: %d %.300s", a.base+path, resp.StatusCode, b)
	}
	return b, nil
}

// scrape reads the node's /metrics once and sums each named metric's samples; a metric with
// no samples (a vector not used yet) is 0, but the process's RSS must be there.
func (a *httpAccount) scrape(ctx context.Context, names ...string) (map[string]float64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", a.base+"/metrics", nil)
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	samples, err := parseProm(b, want)
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(names))
	for _, x := range samples {
		out[x.name] += x.value
	}
	if _, ok := out[metricRSS]; want[metricRSS] && !ok {
		return nil, fmt.Errorf("no %s in /metrics", metricRSS)
	}
	return out, nil
}

// rss is the node's resident memory, from /metrics.
func (a *httpAccount) rss(ctx context.Context) (float64, error) {
	m, err := a.scrape(ctx, metricRSS)
	if err != nil {
		return 0, err
	}
	return m[metricRSS], nil
}

// figure is a line of a contacts or campaign run's table: what was measured, the result and
// its target.
type figure struct{ name, result, target string }

// printFigures writes a run's table under its title.
func printFigures(w io.Writer, title string, figs ...figure) {
	fmt.Fprintf(w, "\n%s\n\n", title)
	fmt.Fprintf(w, "%-34s %-28s %s\n", "FIGURE", "RESULT", "TARGET")
	for _, f := range figs {
		fmt.Fprintf(w, "%-34s %-28s %s\n", f.name, f.result, f.target)
	}
}
