// tuma-lab bench contacts: the address book at scale, over HTTP, from this process: a CSV import
// streamed from a generator, searches by phone fragment and by name, and an export.

package bench

import (
	"bufio"
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

// ContactsConfig is one run of `tuma-lab bench contacts`.
type ContactsConfig struct {
	URL, AdminToken string
	Rows            int // contacts imported
	Searches        int // of each kind
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

// ContactsUsage is the help of `tuma-lab bench contacts`.
const ContactsUsage = `usage: tuma-lab bench contacts [flags]

Against a running node (its sign-up budget off: TUMA_SIGNUP_LIMIT_PER_IP=0): registers an
account, imports ROWS generated contacts as one CSV upload (streamed: the file is never built
in memory), searches them by phone fragment and by name, and exports them, printing each
figure next to its target.

flags:`

// ParseContactsArgs reads the flags of `tuma-lab bench contacts`.
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

// RunContacts runs the contacts benchmark and prints its table.
func RunContacts(ctx context.Context, cfg ContactsConfig, stdout io.Writer) (ContactsResult, error) {
	res := ContactsResult{Rows: cfg.Rows}
	a, err := signUp(ctx, cfg.URL, "contacts")
	if err != nil {
		return res, err
	}

	// Import, the CSV written as it is sent; the node's RSS sampled meanwhile.
	before, err := a.rss(ctx)
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
			if v, err := a.rss(ctx); err == nil {
				peak = max(peak, v)
			}
		}
	})
	start := time.Now()
	err = a.importContacts(ctx, cfg.Rows, "")
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
		r, err := a.get(ctx, "/contacts?search="+url.QueryEscape(term))
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
	req, _ := http.NewRequestWithContext(ctx, "GET", a.base+"/contacts/export", nil)
	req.Header.Set("X-API-Key", a.key)
	start = time.Now()
	resp, err := a.hc.Do(req)
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

	printFigures(stdout, fmt.Sprintf("tuma-lab bench contacts · %s · %d contacts", cfg.URL, cfg.Rows),
		figure{"import over HTTP", fmt.Sprintf("%.0f rows/s (%.1f s)", res.ImportRowsPerS, res.ImportSeconds), "≥ 100,000 rows/s"},
		figure{"server RSS growth during import", fmt.Sprintf("%.0f MB", res.RSSGrowthMB), "< 100 MB"},
		figure{"search by phone fragment", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms", res.PhoneP50MS, res.PhoneP99MS), "p99 ≤ 20 ms"},
		figure{"search by name", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms", res.NameP50MS, res.NameP99MS), "p99 ≤ 20 ms"},
		figure{"export over HTTP", fmt.Sprintf("%.0f rows/s", res.ExportRowsPerS), "≥ 200,000 rows/s"})
	return res, nil
}

// importContacts imports rows generated contacts (contactRow) as one CSV upload, written as
// it is sent, into group when given.
func (a *httpAccount) importContacts(ctx context.Context, rows int, group string) error {
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
	req, _ := http.NewRequestWithContext(ctx, "POST", a.base+"/contacts/import", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-API-Key", a.key)
	resp, err := a.hc.Do(req)
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

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*q/100))]
}
