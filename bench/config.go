package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

// The scenarios.
const (
	ScenarioBulk      = "bulk"      // concurrent large sends
	ScenarioSmall     = "small"     // 1-recipient sends from many clients and accounts
	ScenarioMixed     = "mixed"     // mostly small sends with some bulk ones
	ScenarioThrottled = "throttled" // egress against the server's per-network caps
	ScenarioSoak      = "soak"      // a fixed send rate for a long time
)

// Scenarios lists the scenario names.
func Scenarios() []string {
	return []string{ScenarioBulk, ScenarioSmall, ScenarioMixed, ScenarioThrottled, ScenarioSoak}
}

// Limits of the configuration.
const (
	maxRecipients   = 10_000    // the API's limit per send
	maxFundKES      = 1_000_000 // the admin credit endpoint's limit per call
	maxAccounts     = 10_000    // registration is bcrypt-bound: more is a different test
	maxClients      = 4096      // beyond this the client box, not the server, is measured
	maxRate         = 100_000   // sends/s: more than any node takes, and about what the pacer can offer
	mixedMinBulk    = 100       // smallest bulk send of the mixed scenario
	defaultURL      = "http://127.0.0.1:8080"
	devAdminToken   = "dev-admin-token-change-me" // what `make run` sets
	maxWebhookBatch = 100                         // the API's largest batch_size
)

// Config is one run of `tuma-lab bench`. Build it with DefaultConfig or ParseArgs; Run validates it.
type Config struct {
	URL            string        // base URL of the Tuma under test
	AdminToken     string        // bearer token of the admin API (a secret: never written out)
	Scenario       string        // one of Scenarios()
	Accounts       int           // tenant accounts to register and fund
	Concurrency    int           // clients sending at once
	Duration       time.Duration // how long to send (throttled: how long the backlog lasts at the caps)
	Rate           float64       // sends per second offered (0: each client sends as fast as answered)
	Recipients     int           // recipients per send (mixed: the largest bulk send)
	Caps           Caps          // throttled: the server's TUMA_LINK_TPS
	JSONPath       string        // where to write the results ("" = nowhere)
	Keep           bool          // leave the accounts active instead of suspending them
	Timeout        time.Duration // most to wait after sending for every message's final state
	RequestTimeout time.Duration // most one request may take
	FundKES        int           // credit given to each account
	DBCPU          bool          // also measure this machine's PostgreSQL processes' CPU
	WebhookListen  string        // --webhooks: where the tool's webhook receiver listens ("" = no webhooks)
	WebhookHost    string        // the receiver's host as the server reaches it (default 127.0.0.1)
	WebhookBatch   int           // each endpoint's batch_size, 1..100
	Suppressed     int           // numbers put on each account's suppression list before the load (none is sent to)
}

// DefaultConfig is the configuration of a scenario before any flag: sized so a run offers
// about what a 2-core node can dispatch (~20,000 messages/s), and drains in seconds.
func DefaultConfig(scenario string) Config {
	c := Config{
		URL: defaultURL, AdminToken: devAdminToken, Scenario: scenario,
		Accounts: 16, Concurrency: 16, Duration: 10 * time.Second, Recipients: 1,
		Timeout: 5 * time.Minute, RequestTimeout: 60 * time.Second, FundKES: maxFundKES,
		WebhookBatch: maxWebhookBatch,
	}
	switch scenario {
	case ScenarioBulk:
		c.Accounts, c.Concurrency, c.Rate, c.Recipients = 8, 4, 2, maxRecipients
	case ScenarioSmall:
		c.Accounts, c.Concurrency = 64, 64
	case ScenarioMixed:
		c.Accounts, c.Concurrency, c.Rate, c.Recipients = 32, 32, 50, 5000
	case ScenarioThrottled:
		// 16 s leaves 12 s of steady egress once the first and last 2 s are set aside.
		c.Accounts, c.Concurrency, c.Duration, c.Recipients = 6, 6, 16*time.Second, maxRecipients
	case ScenarioSoak:
		c.Duration, c.Rate = time.Minute, 100
	}
	return c
}

// Validate reports every invalid field, naming its flag.
func (c Config) Validate() error {
	var errs []error
	bad := func(flag, format string, a ...any) {
		errs = append(errs, fmt.Errorf("--%s %s", flag, fmt.Sprintf(format, a...)))
	}
	if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("url", "must be an http:// or https:// URL with a host, got %q", c.URL)
	}
	if c.AdminToken == "" {
		bad("admin-token", "is required (or set TUMA_ADMIN_TOKEN)")
	}
	if !slices.Contains(Scenarios(), c.Scenario) {
		bad("scenario", "must be one of %s, got %q", strings.Join(Scenarios(), ", "), c.Scenario)
	}
	if c.Accounts < 1 || c.Accounts > maxAccounts {
		bad("accounts", "must be from 1 to %d, got %d", maxAccounts, c.Accounts)
	}
	if c.Concurrency < 1 || c.Concurrency > maxClients {
		bad("concurrency", "must be from 1 to %d, got %d", maxClients, c.Concurrency)
	}
	if c.Duration <= 0 {
		bad("duration", "must be positive, got %s", c.Duration)
	}
	switch {
	case !(c.Rate >= 0 && c.Rate <= maxRate): // NaN fails both
		bad("rate", "must be from 0 to %d sends/s, got %v", maxRate, c.Rate)
	case c.Scenario == ScenarioSoak && c.Rate == 0:
		bad("rate", "must be positive for the soak scenario (sends per second)")
	}
	switch {
	case c.Recipients < 1 || c.Recipients > maxRecipients:
		bad("recipients", "must be from 1 to %d, got %d", maxRecipients, c.Recipients)
	case c.Scenario == ScenarioMixed && c.Recipients < mixedMinBulk:
		bad("recipients", "must be at least %d for the mixed scenario (its bulk sends have %d to --recipients)", mixedMinBulk, mixedMinBulk)
	}
	if c.Scenario == ScenarioThrottled {
		if c.Caps.Empty() {
			bad("caps", "is required for the throttled scenario: the server's TUMA_LINK_TPS, e.g. safaricom=100,airtel=50,telkom=20")
		}
		if c.Duration < 6*time.Second {
			bad("duration", "must be at least 6s for the throttled scenario (its first and last 2 s are not steady), got %s", c.Duration)
		}
	}
	if c.Timeout <= 0 {
		bad("timeout", "must be positive, got %s", c.Timeout)
	}
	if c.RequestTimeout <= 0 {
		bad("request-timeout", "must be positive, got %s", c.RequestTimeout)
	}
	if c.FundKES < 1 || c.FundKES > maxFundKES {
		bad("fund-kes", "must be from 1 to %d, got %d", maxFundKES, c.FundKES)
	}
	if c.WebhookListen != "" {
		if _, _, err := net.SplitHostPort(c.WebhookListen); err != nil {
			bad("webhooks", "must be a listen address host:port, e.g. 127.0.0.1:9901, got %q", c.WebhookListen)
		}
		if c.WebhookBatch < 1 || c.WebhookBatch > maxWebhookBatch {
			bad("webhook-batch", "must be from 1 to %d, got %d", maxWebhookBatch, c.WebhookBatch)
		}
	}
	if c.Suppressed < 0 || c.Suppressed > maxSuppressed {
		bad("suppressed", "must be from 0 to %d, got %d", maxSuppressed, c.Suppressed)
	}
	return errors.Join(errs...)
}

// flags renders the configuration as the flags that give it, for the results (the admin
// token is left out).
func (c Config) flags() map[string]string {
	return map[string]string{
		"url": c.URL, "scenario": c.Scenario,
		"accounts": strconv.Itoa(c.Accounts), "concurrency": strconv.Itoa(c.Concurrency),
		"duration": c.Duration.String(), "rate": strconv.FormatFloat(c.Rate, 'f', -1, 64),
		"recipients": strconv.Itoa(c.Recipients), "caps": c.Caps.String(), "json": c.JSONPath,
		"keep": strconv.FormatBool(c.Keep), "timeout": c.Timeout.String(),
		"request-timeout": c.RequestTimeout.String(), "fund-kes": strconv.Itoa(c.FundKES),
		"webhooks": c.WebhookListen, "webhook-host": c.WebhookHost, "webhook-batch": strconv.Itoa(c.WebhookBatch),
		"suppressed": strconv.Itoa(c.Suppressed),
	}
}

// Caps are submit rates per network (messages/s), as in TUMA_LINK_TPS. Zero: no cap.
type Caps map[carriers.Network]float64

// ParseCaps reads "safaricom=100,airtel=50,telkom=20", or one number for every network.
func ParseCaps(s string) (Caps, error) {
	c := Caps{}
	if strings.TrimSpace(s) == "" {
		return c, nil
	}
	if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
		if f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("cap %q must be a positive number", s)
		}
		for _, n := range carriers.Networks() {
			c[n] = f
		}
		return c, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		name, num, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, known := carriers.ParseNetwork(strings.TrimSpace(name))
		f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		switch {
		case !ok || !known:
			return nil, fmt.Errorf("%q is not network=rate (networks: safaricom, airtel, telkom)", part)
		case err != nil || f <= 0 || math.IsInf(f, 0):
			return nil, fmt.Errorf("rate of %s must be a positive number, got %q", name, num)
		case c[n] != 0:
			return nil, fmt.Errorf("%s is capped twice", name)
		}
		c[n] = f
	}
	return c, nil
}

// Empty reports whether no network is capped.
func (c Caps) Empty() bool {
	for _, v := range c {
		if v > 0 {
			return false
		}
	}
	return true
}

// String renders the caps in ParseCaps's form, networks in their usual order.
func (c Caps) String() string {
	var parts []string
	for _, n := range carriers.Networks() {
		if v := c[n]; v > 0 {
			parts = append(parts, n.String()+"="+strconv.FormatFloat(v, 'f', -1, 64))
		}
	}
	return strings.Join(parts, ",")
}

// capsFlag lets flag parse Caps.
type capsFlag struct{ c *Caps }

func (f capsFlag) String() string {
	if f.c == nil {
		return ""
	}
	return f.c.String()
}

func (f capsFlag) Set(s string) error {
	c, err := ParseCaps(s)
	if err != nil {
		return err
	}
	*f.c = c
	return nil
}

// ParseArgs reads the flags of `tuma-lab bench` (after the word bench). Flags not given take the
// scenario's defaults (DefaultConfig). It returns flag.ErrHelp after printing the usage to out
// when asked for help. lookup reads the environment (TUMA_ADMIN_TOKEN).
func ParseArgs(args []string, lookup func(string) (string, bool), out io.Writer) (Config, error) {
	c := DefaultConfig("")
	if tok, ok := lookup("TUMA_ADMIN_TOKEN"); ok && tok != "" {
		c.AdminToken = tok
	}
	fs := flag.NewFlagSet("tuma-lab bench", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprint(out, Usage) }
	fs.StringVar(&c.URL, "url", c.URL, "")
	fs.StringVar(&c.AdminToken, "admin-token", c.AdminToken, "")
	fs.StringVar(&c.Scenario, "scenario", "", "")
	fs.IntVar(&c.Accounts, "accounts", 0, "")
	fs.IntVar(&c.Concurrency, "concurrency", 0, "")
	fs.DurationVar(&c.Duration, "duration", 0, "")
	fs.Float64Var(&c.Rate, "rate", 0, "")
	fs.IntVar(&c.Recipients, "recipients", 0, "")
	fs.Var(capsFlag{&c.Caps}, "caps", "")
	fs.StringVar(&c.JSONPath, "json", "", "")
	fs.BoolVar(&c.Keep, "keep", false, "")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "")
	fs.IntVar(&c.FundKES, "fund-kes", c.FundKES, "")
	fs.BoolVar(&c.DBCPU, "db-cpu", false, "")
	fs.StringVar(&c.WebhookListen, "webhooks", "", "")
	fs.StringVar(&c.WebhookHost, "webhook-host", "", "")
	fs.IntVar(&c.WebhookBatch, "webhook-batch", c.WebhookBatch, "")
	fs.IntVar(&c.Suppressed, "suppressed", 0, "")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q (flags only; see tuma-lab bench -h)", fs.Arg(0))
	}
	if c.Scenario == "" {
		return Config{}, fmt.Errorf("--scenario is required: one of %s", strings.Join(Scenarios(), ", "))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	def := DefaultConfig(c.Scenario)
	if !set["accounts"] {
		c.Accounts = def.Accounts
	}
	if !set["concurrency"] {
		c.Concurrency = def.Concurrency
	}
	if !set["duration"] {
		c.Duration = def.Duration
	}
	if !set["rate"] {
		c.Rate = def.Rate
	}
	if !set["recipients"] {
		c.Recipients = def.Recipients
	}
	return c, c.Validate()
}

// Usage is the help of `tuma-lab bench`.
const Usage = `usage: tuma-lab bench --scenario NAME [flags]
       tuma-lab bench compare [--threshold PCT] OLD.json... -- NEW.json...
       tuma-lab bench compare [--threshold PCT] OLD.json NEW.json
       tuma-lab bench summary RESULT.json...
       tuma-lab bench headline RESULT.json...
       tuma-lab bench contacts|campaign|dashboard|kannel|smpp [flags]   (each with -h for its flags)

Drives a running Tuma over HTTP like real tenants: registers and funds --accounts
accounts, sends for --duration, waits until every accepted message is delivered or
failed, then prints a table (and writes --json) next to the server's /metrics counters.

scenarios, and their defaults (accounts, concurrency, duration, rate, recipients):
  bulk       concurrent 10,000-recipient sends              8, 4, 10s, 2/s, 10000
  small      1-recipient sends, many clients and accounts   64, 64, 10s, 0, 1
  mixed      90% 1-recipient, 10% of 100 to --recipients    32, 32, 10s, 50/s, 5000
  throttled  egress per network held to --caps (±2%)        6, 6, 16s, -, 10000
  soak       a fixed --rate: latency and memory drift       16, 16, 1m, 100/s, 1
throttled sends caps × duration messages at once, one network per send, and the server
must run with TUMA_LINK_TPS equal to --caps.

flags:
  --url URL              Tuma's base URL (default http://127.0.0.1:8080)
  --admin-token TOKEN    admin bearer token (default $TUMA_ADMIN_TOKEN, else dev-admin-token-change-me)
  --scenario NAME        bulk, small, mixed, throttled or soak (required)
  --accounts N           tenant accounts to register and fund
  --concurrency N        clients sending at once
  --duration D           how long to send, e.g. 30s
  --rate R               sends per second offered (0: each client sends as fast as answered)
  --recipients N         recipients per send, 1..10000 (mixed: the largest bulk send)
  --caps LIST            throttled: the server's TUMA_LINK_TPS, e.g. safaricom=100,airtel=50,telkom=20
  --json FILE            write the results, configuration, commit and machine facts as JSON
  --keep                 leave the accounts active (default: suspend them at the end)
  --timeout D            most to wait for every message's final state after sending (default 5m)
  --request-timeout D    most one request may take (default 1m)
  --fund-kes N           credit per account in KES (default 1000000, the most one credit may be)
  --db-cpu               also report the CPU of this machine's PostgreSQL processes per message
                         (the database must run here; read from /proc)
  --webhooks ADDR        subscribe every account to message.sent and message.delivered at a
                         receiver the tool runs on ADDR (e.g. 127.0.0.1:9901); it verifies each
                         signature and reports events lost, duplicated, out of order and their
                         latency. The server needs TUMA_WEBHOOK_ALLOW_PRIVATE=true
  --webhook-host HOST    the receiver's host as the server reaches it (default 127.0.0.1)
  --webhook-batch N      each endpoint's batch_size, 1..100 (default 100)
  --suppressed N         put N numbers (none the load sends to) on each account's suppression
                         list before the load (POST /suppressions/import), 0..4000000: what
                         the lookups cost a send's acceptance (compare accept latency with 0)

summary prints the headline figures of several result files, one line each.
headline prints the engine's four speed figures (small: sends/s and, with --db-cpu, CPU per
send; bulk: the 202's p50 and p99 and, over runs of 1,000,000 messages, the end-to-end rate)
as medians of the runs given, with their spread, next to their targets.

compare prints the median of every figure on each side, the change, and flags changes
beyond --threshold percent (default 25) in the bad direction; it exits with an error
when any figure regressed. File arguments may be globs.

contacts imports, searches and exports a million contacts; campaign sends a campaign to an
imported group and reads the reports; dashboard seeds an account with a million messages
and times every dashboard page; kannel drives Kannel's sendsms the same way
(bench/kannel.sh); smpp measures one SMPP bind against a tuma smsc it starts.
`
