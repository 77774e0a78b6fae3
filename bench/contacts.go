// tuma bench contacts: the address book at scale, over HTTP, from this process: a CSV import
// streamed from a generator, searches by phone fragment and by name, and an export.

package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// ContactsConfig is one run of `tuma bench contacts`.
type ContactsConfig struct {
	URL, AdminToken string
	Rows            int // contacts imported
	Searches        int // of each kind
}

// ContactsUsage is the help of `tuma bench contacts`.
const ContactsUsage = `usage: tuma bench contacts [flags]

Against a running node (its sign-up budget off: TUMA_SIGNUP_LIMIT_PER_IP=0): registers an
account, imports ROWS generated contacts as one CSV upload (streamed: the file is never built
in memory), searches them by phone fragment and by name, and exports them, printing each
figure next to its target.

flags:`

// ParseContactsArgs reads the flags of `tuma bench contacts`.
func ParseContactsArgs(args []string, lookup func(string) (string, bool), stderr io.Writer) (ContactsConfig, error) {
	c := ContactsConfig{URL: defaultURL, AdminToken: devAdminToken, Rows: 1_000_000, Searches: 200}
	if v, ok := lookup("TUMA_ADMIN_TOKEN"); ok && v != "" {
		c.AdminToken = v
	}
	fs := flag.NewFlagSet("bench contacts", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, ContactsUsage); fs.PrintDefaults() }
	fs.StringVar(&c.URL, "url", c.URL, "the node's base URL")
	fs.IntVar(&c.Rows, "rows", c.Rows, "contacts to import")
	fs.IntVar(&c.Searches, "searches", c.Searches, "searches of each kind (phone fragment, name)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.Rows < 1 || c.Searches < 1 {
		return c, fmt.Errorf("--rows and --searches must be positive")
	}
	return c, nil
}

// Kenyan names to spread the search text the way an address book does.
var (
	firstNames = []string{"Jane", "John", "Akinyi", "Otieno", "Wanjiru", "Kamau", "Achieng", "Mwangi", "Njeri", "Kiprop",
		"Chebet", "Mutua", "Wambui", "Omondi", "Nyambura", "Kibet", "Atieno", "Macharia", "Wairimu", "Ochieng"}
	lastNames = []string{"Odhiambo", "Kariuki", "Onyango", "Njoroge", "Wekesa", "Kimani", "Ouma", "Mutiso", "Korir", "Nduta",
		"Were", "Ruto", "Maina", "Owino", "Gitau", "Cheruiyot", "Mugo", "Okoth", "Kiptoo", "Wafula", "Nyaga", "Barasa"}
)

// contactRow is the generated contact number i: a unique number on each network in turn
// (Safaricom 071…, Airtel 073…, Telkom 077…), a name spread over the lists above and a number
// in the surname, as sales people add.
func contactRow(i int) (phone, first, last string) {
	return fmt.Sprintf("%s%07d", []string{"071", "073", "077"}[i%3], i/3), firstNames[i%len(firstNames)],
		fmt.Sprintf("%s %d", lastNames[i/len(firstNames)%len(lastNames)], i%997)
}

// ContactsResult are a run's figures.
type ContactsResult struct {
	Rows           int     `json:"rows"`
	ImportSeconds  float64 `json:"import_seconds"`
	ImportRowsPerS float64 `json:"import_rows_per_second"`
	RSSGrowthMB    float64 `json:"import_rss_growth_mb"`
	PhoneP50MS     float64 `json:"search_phone_p50_ms"`
	PhoneP99MS     float64 `json:"search_phone_p99_ms"`
	NameP50MS      float64 `json:"search_name_p50_ms"`
	NameP99MS      float64 `json:"search_name_p99_ms"`
	ExportRowsPerS float64 `json:"export_rows_per_second"`
}

// RunContacts runs the contacts benchmark and prints its table.
func RunContacts(ctx context.Context, cfg ContactsConfig, stdout io.Writer) (ContactsResult, error) {
	hc := &http.Client{Timeout: 30 * time.Minute}
	res := ContactsResult{Rows: cfg.Rows}
	key, _, err := register(ctx, hc, cfg.URL, "contacts")
	if err != nil {
		return res, err
	}

	// Import, the CSV written as it is sent; the node's RSS sampled meanwhile.
	before, err := scrapeRSS(ctx, hc, cfg.URL)
	if err != nil {
		return res, err
	}
	peak := before
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Go(func() {
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if v, err := scrapeRSS(ctx, hc, cfg.URL); err == nil {
				peak = max(peak, v)
			}
		}
	})
	start := time.Now()
	err = importContacts(ctx, hc, cfg.URL, key, cfg.Rows, "")
	res.ImportSeconds = time.Since(start).Seconds()
	close(stopSampling)
	sampling.Wait()
	if err != nil {
		return res, err
	}
	res.ImportRowsPerS = float64(cfg.Rows) / res.ImportSeconds
	res.RSSGrowthMB = (peak - before) / (1 << 20)

	// Searches: a phone fragment in the form people type, and a name fragment.
	rng := rand.New(rand.NewPCG(1, 2))
	search := func(term string) (time.Duration, error) {
		t0 := time.Now()
		r, err := get(ctx, hc, cfg.URL+"/contacts?search="+url.QueryEscape(term), key)
		if err != nil {
			return 0, err
		}
		var page struct {
			Total int `json:"total"`
		}
		if json.Unmarshal(r, &page) != nil || page.Total == 0 {
			return 0, fmt.Errorf("search %q found nothing: %.200s", term, r)
		}
		return time.Since(t0), nil
	}
	var phoneLat, nameLat []time.Duration
	for range cfg.Searches {
		phone, first, last := contactRow(rng.IntN(cfg.Rows))
		d, err := search(phone[:4] + " " + phone[4:7]) // "0712 345": a fragment, spaced as typed
		if err != nil {
			return res, err
		}
		phoneLat = append(phoneLat, d)
		name := []string{strings.ToLower(first[:4]), strings.ToUpper(last[:5]), last}[rng.IntN(3)]
		if d, err = search(name); err != nil {
			return res, err
		}
		nameLat = append(nameLat, d)
	}
	res.PhoneP50MS, res.PhoneP99MS = ms(quantile(phoneLat, 50)), ms(quantile(phoneLat, 99))
	res.NameP50MS, res.NameP99MS = ms(quantile(nameLat, 50)), ms(quantile(nameLat, 99))

	// Export, counted as it streams.
	req, _ := http.NewRequestWithContext(ctx, "GET", cfg.URL+"/contacts/export", nil)
	req.Header.Set("X-API-Key", key)
	start = time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return res, fmt.Errorf("export: %w", err)
	}
	rows := 0
	cr := csv.NewReader(bufio.NewReaderSize(resp.Body, 256<<10))
	cr.ReuseRecord = true
	for {
		if _, err := cr.Read(); err != nil {
			break
		}
		rows++
	}
	resp.Body.Close()
	if rows-1 != cfg.Rows {
		return res, fmt.Errorf("export gave %d rows; want %d", rows-1, cfg.Rows)
	}
	res.ExportRowsPerS = float64(cfg.Rows) / time.Since(start).Seconds()

	fmt.Fprintf(stdout, "\ntuma bench contacts · %s · %d contacts\n\n", cfg.URL, cfg.Rows)
	fmt.Fprintf(stdout, "%-34s %-28s %s\n", "FIGURE", "RESULT", "TARGET")
	fmt.Fprintf(stdout, "%-34s %-28s %s\n", "import over HTTP", fmt.Sprintf("%.0f rows/s (%.1f s)", res.ImportRowsPerS, res.ImportSeconds), "≥ 100,000 rows/s")
	fmt.Fprintf(stdout, "%-34s %-28s %s\n", "server RSS growth during import", fmt.Sprintf("%.0f MB", res.RSSGrowthMB), "< 100 MB")
	fmt.Fprintf(stdout, "%-34s %-28s %s\n", "search by phone fragment", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms", res.PhoneP50MS, res.PhoneP99MS), "p99 ≤ 20 ms")
	fmt.Fprintf(stdout, "%-34s %-28s %s\n", "search by name", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms", res.NameP50MS, res.NameP99MS), "p99 ≤ 20 ms")
	fmt.Fprintf(stdout, "%-34s %-28s %s\n", "export over HTTP", fmt.Sprintf("%.0f rows/s", res.ExportRowsPerS), "≥ 200,000 rows/s")
	return res, nil
}

// importContacts imports rows generated contacts (contactRow) as one CSV upload, written as
// it is sent, into group when given.
func importContacts(ctx context.Context, hc *http.Client, base, key string, rows int, group string) error {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("file", "contacts.csv")
		if err == nil {
			bw := bufio.NewWriterSize(part, 64<<10)
			bw.WriteString("phone,first_name,last_name\n")
			for i := range rows {
				phone, first, last := contactRow(i)
				bw.WriteString(phone + "," + first + "," + last + "\n")
			}
			err = bw.Flush()
		}
		if err == nil && group != "" {
			err = mw.WriteField("group_id", group)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/contacts/import", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-API-Key", key)
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var imported struct {
		Imported int `json:"imported"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &imported) != nil || imported.Imported != rows {
		return fmt.Errorf("import answered %d %s; want %d imported", resp.StatusCode, body, rows)
	}
	return nil
}

// register registers an account for a run and returns its API key and id.
func register(ctx context.Context, hc *http.Client, base, label string) (key, id string, err error) {
	email := fmt.Sprintf("bench-%s-%d@example.com", label, time.Now().UnixNano())
	body, _ := json.Marshal(map[string]string{"email": email, "password": "Bench1234", "full_name": "Bench", "company_name": "Bench"})
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/auth/register", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("register: %w", err)
	}
	defer resp.Body.Close()
	var u struct {
		APIKey string `json:"api_key"`
		ID     string `json:"id"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 || json.Unmarshal(b, &u) != nil {
		return "", "", fmt.Errorf("register answered %d %s (is TUMA_SIGNUP_LIMIT_PER_IP=0 on the node?)", resp.StatusCode, b)
	}
	return u.APIKey, u.ID, nil
}

func get(ctx context.Context, hc *http.Client, u, key string) ([]byte, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	req.Header.Set("X-API-Key", key)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %d %.200s", u, resp.StatusCode, b)
	}
	return b, err
}

// scrapeRSS reads the node's resident memory from /metrics.
func scrapeRSS(ctx context.Context, hc *http.Client, base string) (float64, error) {
	m, err := scrape(ctx, hc, base, metricRSS)
	if err != nil {
		return 0, err
	}
	return m[metricRSS], nil
}

// scrape reads the node's /metrics once and sums each named metric's samples; a metric with
// no samples (a vector not used yet) is 0, but the process's RSS must be there.
func scrape(ctx context.Context, hc *http.Client, base string, names ...string) (map[string]float64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/metrics", nil)
	resp, err := hc.Do(req)
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

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*q/100))]
}
