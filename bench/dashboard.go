// tuma-lab bench dashboard: the dashboard's pages on a big account, over HTTP, from this
// process. It seeds one account with a history (messages, jobs, campaigns, contacts in
// groups, the ledger) straight into the node's database, signs in as a browser does (the
// session cookie, the forms' CSRF token), then reads each page in turn, printing each one's
// time on loopback (p50, p99), the node's own Server-Timing, and what the page and its assets
// weigh compressed, next to the targets of issue 32.

package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// DashboardConfig is one run of `tuma-lab bench dashboard`.
type DashboardConfig struct {
	URL, DatabaseURL string
	Messages         int
	Contacts         int
	Days             int
	Reads            int    // timed requests of each page
	Reuse            string // the email of an account a run seeded before: no seeding
}

// dashboardPassword is the seeded account's password.
const dashboardPassword = "Bench1234"

// DashboardUsage is the help of `tuma-lab bench dashboard`.
const DashboardUsage = `usage: tuma-lab bench dashboard --database-url URL [flags]

Against a running node (its sign-up budget off: TUMA_SIGNUP_LIMIT_PER_IP=0) and its
PostgreSQL: registers an account through the API, writes MESSAGES messages (in jobs and
campaigns over DAYS days, delivered or failed, with their ledger, daily spend and counters)
and CONTACTS contacts in five groups straight into the database with COPY, signs in to the
dashboard, and requests each page READS times one after another. It prints each page's p50
and p99 on loopback, the p99 of the node's Server-Timing, and the page's and its assets'
compressed size (Accept-Encoding: br, gzip), next to the targets (p99 <= 50 ms, <= 150 KB).
Pages the node does not have (404) or has only as a placeholder are listed as skipped.
--reuse EMAIL measures an account an earlier run seeded (its password is Bench1234).

flags:`

// ParseDashboardArgs reads the flags of `tuma-lab bench dashboard`.
func ParseDashboardArgs(args []string, lookup func(string) (string, bool), stderr io.Writer) (DashboardConfig, error) {
	c := DashboardConfig{URL: defaultURL, Messages: 1_000_000, Contacts: 100_000, Days: 30, Reads: 100}
	if v, ok := lookup("TUMA_DATABASE_URL"); ok {
		c.DatabaseURL = v
	}
	fs := flag.NewFlagSet("bench dashboard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, DashboardUsage); fs.PrintDefaults() }
	fs.StringVar(&c.URL, "url", c.URL, "the node's base URL")
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "the node's PostgreSQL (default $TUMA_DATABASE_URL)")
	fs.IntVar(&c.Messages, "messages", c.Messages, "messages to seed")
	fs.IntVar(&c.Contacts, "contacts", c.Contacts, "contacts to seed")
	fs.IntVar(&c.Days, "days", c.Days, "days the history spans")
	fs.IntVar(&c.Reads, "reads", c.Reads, "timed requests of each page")
	fs.StringVar(&c.Reuse, "reuse", "", "measure the account of this email, seeded by an earlier run")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.Reuse == "" && c.DatabaseURL == "" {
		return c, errors.New("--database-url is needed to seed (or --reuse an account seeded before)")
	}
	if c.Messages < 1 || c.Contacts < 600 || c.Days < 1 || c.Reads < 1 {
		return c, errors.New("--messages, --days and --reads must be positive and --contacts at least 600")
	}
	return c, nil
}

// dashboardPage is one page the run reads.
type dashboardPage struct{ name, path string }

// dashboardPages are the dashboard's pages, in the navigation's order.
var dashboardPages = []dashboardPage{
	{"overview", "/app/"},
	{"send", "/app/send"},
	{"messages", "/app/messages"},
	{"messages, failed", "/app/messages?status=failed"},
	{"messages, Telkom, one day", "/app/messages?network=telkom&from=" + time.Now().UTC().AddDate(0, 0, -3).Format(time.DateOnly) + "&to=" + time.Now().UTC().AddDate(0, 0, -3).Format(time.DateOnly)},
	{"message", "link:/app/messages:/app/messages/"},
	{"campaigns", "/app/campaigns"},
	{"campaign", "link:/app/campaigns:/app/campaigns/"},
	{"reports", "/app/reports"},
	{"reports, 90 days", "/app/reports?period=90"},
	{"contacts", "/app/contacts"},
	{"contacts, search by name", "/app/contacts?search=wanjiru"},
	{"contacts, search by phone", "/app/contacts?search=0710001"},
	{"contacts, one group", ""}, // the path names a seeded group: filled in at run time
	{"groups", "/app/contacts/groups"},
	{"import", "/app/contacts/import"},
	{"senders", "/app/senders"},
	{"wallet", "/app/wallet"},
	{"notifications", "/app/notifications"},
	{"developers", "/app/developers"},
	{"webhooks", "/app/developers/webhooks"},
	{"smpp", "/app/developers/smpp"},
}

// PageFigures are one page's figures.
type PageFigures struct {
	Name, Path  string
	Skipped     string // why the page was not measured
	P50, P99    time.Duration
	ServerP99   time.Duration // the node's Server-Timing; 0 when it sends none
	PageBytes   int           // compressed
	AssetsBytes int           // compressed, every asset it links
}

// RunDashboard seeds (unless reusing), signs in and measures every page.
func RunDashboard(ctx context.Context, cfg DashboardConfig, stdout io.Writer) ([]PageFigures, error) {
	email := cfg.Reuse
	if email == "" {
		var err error
		if email, err = seedDashboard(ctx, cfg, stdout); err != nil {
			return nil, err
		}
	}
	b, err := newBrowser(cfg.URL)
	if err != nil {
		return nil, err
	}
	if err := b.signIn(ctx, email, dashboardPassword); err != nil {
		return nil, err
	}
	group, err := b.firstGroup(ctx)
	if err != nil {
		return nil, err
	}
	load := loadAverage()
	var out []PageFigures
	for _, pg := range dashboardPages {
		if pg.path == "" {
			pg.path = "/app/contacts?group_id=" + group
		}
		if spec, ok := strings.CutPrefix(pg.path, "link:"); ok { // the first such link of a list page
			list, prefix, _ := strings.Cut(spec, ":")
			if pg.path, err = b.firstLink(ctx, list, prefix); err != nil {
				return out, fmt.Errorf("%s: %w", pg.name, err)
			}
		}
		f, err := b.measure(ctx, pg, cfg.Reads)
		if err != nil {
			return out, fmt.Errorf("%s: %w", pg.name, err)
		}
		out = append(out, f)
	}
	printDashboard(stdout, cfg, email, load, loadAverage(), out)
	return out, nil
}

// seedDashboard registers the account and writes its history; it returns its email.
func seedDashboard(ctx context.Context, cfg DashboardConfig, log io.Writer) (string, error) {
	a, err := signUp(ctx, cfg.URL, "dashboard")
	if err != nil {
		return "", err
	}
	id, err := uuid.Parse(a.id)
	if err != nil {
		return "", fmt.Errorf("registered account id %q: %w", a.id, err)
	}
	conn, err := pgx.Connect(ctx, cfg.DatabaseURL)
	if err != nil {
		return "", fmt.Errorf("connect to the node's database: %w", err)
	}
	defer conn.Close(context.Background())
	fmt.Fprintf(log, "seeding %s (%s): %d messages over %d days, %d contacts\n", a.email, a.id, cfg.Messages, cfg.Days, cfg.Contacts)
	start := time.Now()
	if err := seed(ctx, conn, seedPlan{account: id, messages: cfg.Messages, contacts: cfg.Contacts, days: cfg.Days,
		now: time.Now(), priceCent: 50}, log); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "seeded in %s; measure it again with --reuse %s\n", time.Since(start).Round(time.Second), a.email)
	return a.email, nil
}

// browser is a person's browser on the dashboard: cookies kept, redirects not followed,
// compressed answers not decoded (their size on the wire is a figure).
type browser struct {
	hc   *http.Client
	base string
}

func newBrowser(base string) (*browser, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	return &browser{base: base, hc: &http.Client{Jar: jar, Timeout: time.Minute,
		Transport:     &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 2},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// answer is one response, its body as sent.
type answer struct {
	status int
	header http.Header
	body   []byte
	took   time.Duration
}

func (b *browser) do(ctx context.Context, method, path, encoding string, form url.Values) (answer, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, body)
	if err != nil {
		return answer{}, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept-Encoding", encoding)
	req.Header.Set("Accept", "text/html")
	start := time.Now()
	resp, err := b.hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: raw, took: time.Since(start)}, err
}

var (
	csrfField  = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)
	assetLink  = regexp.MustCompile(`(?:href|src)="(/app/static/[^"]+)"`)
	groupValue = regexp.MustCompile(`<option value="([0-9a-f-]{36})"`)
	comingSoon = "This page is coming soon."
)

// signIn signs in through the sign-in form, with the token its page gave.
func (b *browser) signIn(ctx context.Context, email, password string) error {
	page, err := b.do(ctx, "GET", "/app/login", "identity", nil)
	if err != nil {
		return err
	}
	m := csrfField.FindSubmatch(page.body)
	if m == nil {
		return fmt.Errorf("the sign-in page (%d) has no form token", page.status)
	}
	r, err := b.do(ctx, "POST", "/app/login", "identity", url.Values{"email": {email}, "password": {password}, "_csrf": {string(m[1])}})
	if err != nil {
		return err
	}
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/app/" {
		return fmt.Errorf("sign in as %s answered %d → %q", email, r.status, r.header.Get("Location"))
	}
	return nil
}

// firstGroup is a group of the account, from the contacts page's filter.
func (b *browser) firstGroup(ctx context.Context) (string, error) {
	r, err := b.do(ctx, "GET", "/app/contacts", "identity", nil)
	if err != nil {
		return "", err
	}
	m := groupValue.FindSubmatch(r.body)
	if m == nil {
		return "", fmt.Errorf("the contacts page (%d) lists no group", r.status)
	}
	return string(m[1]), nil
}

// firstLink is the first link on the page at list to a path under prefix followed by an id.
func (b *browser) firstLink(ctx context.Context, list, prefix string) (string, error) {
	r, err := b.do(ctx, "GET", list, "identity", nil)
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`href="(` + regexp.QuoteMeta(prefix) + `[0-9a-f-]{36})"`).FindSubmatch(r.body)
	if m == nil {
		return "", fmt.Errorf("%s (%d) links to no %s…", list, r.status, prefix)
	}
	return string(m[1]), nil
}

// measure reads a page twice to warm up, then reads times, one after another.
func (b *browser) measure(ctx context.Context, pg dashboardPage, reads int) (PageFigures, error) {
	f := PageFigures{Name: pg.name, Path: pg.path}
	plain, err := b.do(ctx, "GET", pg.path, "identity", nil)
	if err != nil {
		return f, err
	}
	switch {
	case plain.status == http.StatusNotFound:
		f.Skipped = "no such route (404)"
		return f, nil
	case plain.status != http.StatusOK:
		return f, fmt.Errorf("GET %s answered %d: %.300s", pg.path, plain.status, plain.body)
	case strings.Contains(string(plain.body), comingSoon):
		f.Skipped = "a placeholder (coming soon)"
		return f, nil
	}
	for _, m := range assetLink.FindAllSubmatch(plain.body, -1) {
		a, err := b.do(ctx, "GET", string(m[1]), "br, gzip", nil)
		if err != nil {
			return f, err
		}
		f.AssetsBytes += len(a.body)
	}
	var took, server []time.Duration
	for i := range reads + 2 {
		r, err := b.do(ctx, "GET", pg.path, "br, gzip", nil)
		if err != nil {
			return f, err
		}
		if r.status != http.StatusOK {
			return f, fmt.Errorf("GET %s answered %d", pg.path, r.status)
		}
		if i < 2 {
			continue
		}
		f.PageBytes = len(r.body)
		took = append(took, r.took)
		if d, ok := serverTiming(r.header.Get("Server-Timing")); ok {
			server = append(server, d)
		}
	}
	f.P50, f.P99 = quantile(took, 50), quantile(took, 99)
	f.ServerP99 = quantile(server, 99)
	return f, nil
}

// serverTiming is the largest dur of a Server-Timing header.
func serverTiming(h string) (time.Duration, bool) {
	var best float64
	found := false
	for _, metric := range strings.Split(h, ",") {
		for _, param := range strings.Split(metric, ";") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(param), "dur="); ok {
				if d, err := strconv.ParseFloat(v, 64); err == nil && d >= best {
					best, found = d, true
				}
			}
		}
	}
	return time.Duration(best * float64(time.Millisecond)), found
}

// loadAverage is this machine's 1, 5 and 15 minute load.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func printDashboard(w io.Writer, cfg DashboardConfig, email, before, after string, figs []PageFigures) {
	fmt.Fprintf(w, "\ntuma-lab bench dashboard · %s · %s · %d reads a page\n", cfg.URL, email, cfg.Reads)
	fmt.Fprintf(w, "load average before %s, after %s\n\n", before, after)
	fmt.Fprintf(w, "%-27s %8s %8s %10s %9s %9s %9s  %s\n", "PAGE", "p50 ms", "p99 ms", "server p99", "page KB", "assets KB", "total KB", "TARGETS (p99 ≤ 50 ms, ≤ 150 KB)")
	for _, f := range figs {
		if f.Skipped != "" {
			fmt.Fprintf(w, "%-27s skipped: %s\n", f.Name, f.Skipped)
			continue
		}
		server := "-"
		if f.ServerP99 > 0 {
			server = fmt.Sprintf("%.1f", ms(f.ServerP99))
		}
		total := float64(f.PageBytes+f.AssetsBytes) / 1024
		verdict := "met"
		if ms(f.P99) > 50 || total > 150 {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "%-27s %8.1f %8.1f %10s %9.1f %9.1f %9.1f  %s\n", f.Name, ms(f.P50), ms(f.P99), server,
			float64(f.PageBytes)/1024, float64(f.AssetsBytes)/1024, total, verdict)
	}
}
