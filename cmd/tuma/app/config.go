// Package app assembles a Tuma node from its configuration: stores, caches, the actor engine
// and the HTTP front door, with an orderly start and a bounded graceful shutdown.
package app

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/carriers/smpp"
)

// Config is the whole configuration of a node, read once from the environment and validated.
type Config struct {
	Env               string // development | production (unset: development, on loopback only)
	HTTPAddr          string
	MetricsAddr       string // internal listener for /metrics and pprof; "" = /metrics on HTTPAddr
	Pprof             bool   // /debug/pprof/* on HTTPAddr, behind the admin token
	PublicURL         string
	DashboardURL      string
	DatabaseURL       string
	DatabaseMaxConns  int
	MigrateOnStart    bool
	RedisURL          string
	RedisPrefix       string
	JWTSecret         string
	AdminToken        string
	SMTPURL           string
	MailFrom          string
	PaymentProvider   string
	PaymentSecretKey  string
	PaystackBaseURL   string
	SharedSenderID    string
	HandOffMessages   int
	WaitingMessages   int // 0: waiting jobs keep none of their messages in memory
	CampaignWindow    int
	JobWindow         int // 0: no limit
	ImportWorkers     int // transactions a contact import merges in at once
	AcceptWriters     int // group-commit writers of accepted sends
	SenderFees        SenderFees
	DataDir           string
	Carriers          string
	SMPPBinds         map[carriers.Network][]smpp.BindConfig // TUMA_CARRIERS=smpp: each network's binds
	smppRaw           [carriers.NetworkSlots]string
	LogLevel          slog.Level
	LogFormat         string // text | json
	AccessLog         bool
	LogBuffer         time.Duration
	MaxBodyBytes      int
	RequestTimeout    time.Duration
	MaxInFlight       int
	ShedLatency       time.Duration
	ShutdownTimeout   time.Duration
	NodeLockWait      time.Duration
	ClusterAddr       string        // "": a single node
	ClusterPeers      []string      // every node's ClusterAddr
	NodeID            string        // default ClusterAddr
	ClusterPauseLimit time.Duration // a pause past it: restart to rejoin (0: off)
	RateLimitRPS      float64
	RateLimitBurst    int
	LoginPerMinute    int // attempts per email and minute; per IP it is ten times this
	BcryptCost        int
	RefreshTokenTTL   time.Duration
	SessionMaxAge     time.Duration  // a dashboard session's absolute lifetime
	TrustedProxies    []netip.Prefix // peers whose X-Forwarded-For is believed

	// Budgets of what outside input can make a node do (0: off).
	AuthLimitPerIP            int    // per minute, unauthenticated auth endpoints
	SignupLimitPerIP          int    // per hour
	CodeAttemptsPerDay        int    // wrong verification codes per account, across codes
	DeliveryChecksPerMinute   int    // live carrier status checks per account
	LocalLimitKeys            int    // in-process rate-limit buckets while Redis is down
	SMPPCredentialsPerAccount int    // SMPP credentials an account may have
	SMPPServerAddr            string // the tenants' SMPP server; "" = off
	SMPPServerTPS             int    // its submits per second per account on a node; 0 = no limit

	SimLatency      time.Duration
	SimReceiptDelay time.Duration
	SimTPS          PerNetwork
	SimFailureRate  float64
	SimThrottleRate float64
	SimOutcomes     Outcomes
	LinkTPS         PerNetwork
	LinkWindow      int
	BulkAcceptYield time.Duration // 0: links never give way to a bulk accept
	QuietHoursCheck time.Duration
	ReceiptTimeout  time.Duration
	ReceiptDeadline time.Duration
	OrphanSweep     time.Duration // 0: never
	TakeoverSettle  time.Duration // 0: ask about another node's marks at once
	Faults          Faults

	EmailsPerHour int
	MailRetryMin  time.Duration
	MailRetryMax  time.Duration
	MailGiveUp    time.Duration // 0: retry forever

	LowBalanceCents int64 // a send leaving less raises a low_balance notification (0: never)

	WebhookSchedule     []time.Duration // retry delays of a failed webhook delivery
	WebhookAllowPrivate bool            // webhooks may go to http:// and private addresses (tests, development)
	WebhookSecretKey    string          // seals webhook secrets at rest; "" derives one from JWTSecret
	WebhookLanes        int             // requests in flight per webhook endpoint
	WebhookCache        int             // messages remembered from status flushes for webhook deliveries (0: none)
	WebhookDisableAfter time.Duration   // an endpoint failing this long is disabled (0: never)

	// publicDerived and dashboardDerived: the URLs were not configured and follow the address
	// the node listens on (see resolveListener).
	publicDerived, dashboardDerived bool

	// JWTSecretGenerated is set when no secret was configured and a random one was made.
	JWTSecretGenerated bool
}

// devPaymentSecret signs the sandbox's webhooks in development; production refuses it.
const devPaymentSecret = "sk_test_tuma_sandbox_secret"

// devAdminToken is the Makefile's admin token for `make run`; production refuses it.
const devAdminToken = "dev-admin-token-change-me"

// removedVariables were replaced; setting one is refused rather than silently ignored.
var removedVariables = map[string]string{
	"TUMA_TRUST_FORWARDED_FOR": "it trusted any client's X-Forwarded-For: list your proxies in TUMA_TRUSTED_PROXIES instead",
}

// LoadConfig reads the configuration from lookup (os.LookupEnv in production) and validates it.
// An error names the variable at fault.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	var c Config
	var errs []error
	for name, why := range removedVariables {
		if _, ok := lookup(name); ok {
			errs = append(errs, fmt.Errorf("%s is no longer read: %s", name, why))
		}
	}
	for _, o := range options() {
		v, ok := lookup(o.name)
		if !ok {
			v = o.def
		}
		if err := o.set(&c, strings.TrimSpace(v)); err != nil {
			shown := v
			if o.secret {
				shown = "[redacted]"
			}
			errs = append(errs, fmt.Errorf("%s=%q: %w", o.name, shown, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("invalid configuration:\n%w", err)
	}
	return c, c.finish()
}

// finish derives defaults that depend on other values and checks combinations.
func (c *Config) finish() error {
	if c.Env == "" {
		// Development serves a sandbox whose Pay button credits wallets for nothing: only on
		// this machine unless asked for by name.
		if !loopbackAddr(c.HTTPAddr) {
			return fmt.Errorf("invalid configuration: TUMA_ENV is unset and TUMA_HTTP_ADDR=%s is not a loopback address; "+
				"set TUMA_ENV=production (or TUMA_ENV=development to run development defaults, such as the sandbox "+
				"payment provider that credits wallets for nothing, where others can reach them)", c.HTTPAddr)
		}
		c.Env = "development"
	}
	if c.PublicURL == "" {
		c.publicDerived = true
		c.PublicURL = "http://" + listenURLHost(c.HTTPAddr)
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.DashboardURL == "" {
		c.dashboardDerived = true
		c.DashboardURL = c.PublicURL + "/app/"
	}
	if c.LogFormat == "" {
		c.LogFormat = "text"
		if c.Env == "production" {
			c.LogFormat = "json"
		}
	}
	if c.JWTSecret == "" {
		if c.Env == "production" {
			return errors.New("invalid configuration: TUMA_JWT_SECRET is required when TUMA_ENV=production")
		}
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		c.JWTSecret, c.JWTSecretGenerated = hex.EncodeToString(b), true
	}
	if c.Env == "production" && c.PaymentProvider == "sandbox" {
		return errors.New("invalid configuration: TUMA_PAYMENT_PROVIDER=sandbox is for development; set paystack in production")
	}
	if c.Env == "production" && c.PaymentSecretKey == devPaymentSecret {
		return errors.New("invalid configuration: TUMA_PAYMENT_SECRET_KEY is the development default; set the provider's secret key")
	}
	if c.Env == "production" && c.AdminToken != "" && (len(c.AdminToken) < 32 || c.AdminToken == devAdminToken) {
		return errors.New("invalid configuration: TUMA_ADMIN_TOKEN must be at least 32 characters and not the development token when TUMA_ENV=production (e.g. openssl rand -hex 32)")
	}
	if c.Carriers == "smpp" {
		for _, n := range carriers.Networks() {
			if len(c.SMPPBinds[n]) == 0 {
				return fmt.Errorf("invalid configuration: TUMA_CARRIERS=smpp needs binds for every network; TUMA_SMPP_%s is unset",
					strings.ToUpper(n.String()))
			}
		}
	}
	if c.ClusterAddr != "" {
		if !slices.Contains(c.ClusterPeers, c.ClusterAddr) {
			return fmt.Errorf("invalid configuration: TUMA_CLUSTER_PEERS must list every node, this one (TUMA_CLUSTER_ADDR=%s) included", c.ClusterAddr)
		}
		if c.NodeID == "" {
			c.NodeID = c.ClusterAddr
		}
		if l := c.ClusterPauseLimit; l != 0 && (l < minPauseLimit || l >= evictionWait) {
			// Past the others' health-check wait, a node they evicted during a pause would not
			// notice it; far below it, the collector's and the scheduler's own pauses would
			// restart a healthy node.
			return fmt.Errorf("invalid configuration: TUMA_CLUSTER_PAUSE_LIMIT=%s must be at least %s and below %s (the others evict a node that does not answer their health check for %s), or 0 for off",
				l, minPauseLimit, evictionWait, evictionWait)
		}
		if c.JWTSecretGenerated {
			// Each node would sign (and seal webhook secrets) with a secret of its own: a login
			// made on one node would fail on the others.
			return errors.New("invalid configuration: a cluster node needs TUMA_JWT_SECRET, the same on every node")
		}
	} else if len(c.ClusterPeers) > 0 {
		return errors.New("invalid configuration: TUMA_CLUSTER_PEERS needs TUMA_CLUSTER_ADDR, this node's own address among them")
	}
	if c.Pprof && c.AdminToken == "" {
		return errors.New("invalid configuration: TUMA_PPROF=true needs TUMA_ADMIN_TOKEN: the profiles are for operators only")
	}
	return nil
}

// The pause limit's bounds: evictionWait is how long the other members wait on a node's
// health check before evicting it (protoactor's automanaged provider, notes/wave3.md).
const (
	minPauseLimit = 100 * time.Millisecond
	evictionWait  = 2 * time.Second
)

// loopbackAddr reports whether a listen address only accepts connections from this machine.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// Print writes the effective configuration with secrets redacted.
func (c Config) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, o := range options() {
		v := o.get(&c)
		switch {
		case o.name == "TUMA_JWT_SECRET" && c.JWTSecretGenerated:
			v = "(random per process)"
		case o.secret && v != "":
			v = redact(o.name, v)
		case v == "":
			v = "(unset)"
		}
		fmt.Fprintf(tw, "%s\t%s\n", o.name, v)
	}
	return tw.Flush()
}

// redact hides secrets; URLs keep their shape with the password masked.
func redact(name, v string) string {
	if strings.HasSuffix(name, "_URL") {
		if u, err := url.Parse(v); err == nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			}
			return u.Redacted()
		}
	}
	return "[redacted]"
}

// Markdown writes the configuration table for the README.
func Markdown(w io.Writer) {
	fmt.Fprintln(w, "| Variable | Default | Meaning |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, o := range options() {
		def := "`" + o.def + "`"
		if o.def == "" {
			def = "unset"
		}
		fmt.Fprintf(w, "| `%s` | %s | %s |\n", o.name, def, o.help)
	}
}

// PerNetwork is a number for each network, written "100" (all the same) or
// "safaricom=100,airtel=50" (unnamed networks get 0).
type PerNetwork [4]float64

func (p *PerNetwork) parse(v string) error {
	*p = PerNetwork{}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f < 0 {
			return errors.New("must not be negative")
		}
		for _, n := range carriers.Networks() {
			p[n] = f
		}
		return nil
	}
	for _, part := range strings.Split(v, ",") {
		name, num, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, known := carriers.ParseNetwork(strings.TrimSpace(name))
		f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if !ok || !known || err != nil || f < 0 {
			return errors.New(`must be a number, or network=number pairs such as "safaricom=100,airtel=50"`)
		}
		p[n] = f
	}
	return nil
}

func (p PerNetwork) String() string {
	if p[1] == p[2] && p[2] == p[3] {
		return strconv.FormatFloat(p[1], 'f', -1, 64)
	}
	var parts []string
	for _, n := range carriers.Networks() {
		parts = append(parts, n.String()+"="+strconv.FormatFloat(p[n], 'f', -1, 64))
	}
	return strings.Join(parts, ",")
}

// Outcomes weighs the final outcomes of simulated messages.
type Outcomes struct {
	Delivered, Undeliverable, Expired, Rejected float64
}

func (o *Outcomes) parse(v string) error {
	*o = Outcomes{}
	for _, part := range strings.Split(v, ",") {
		name, num, ok := strings.Cut(strings.TrimSpace(part), "=")
		f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if !ok || err != nil || f < 0 {
			return errors.New(`must be name=weight pairs such as "delivered=97,undeliverable=2,expired=1"`)
		}
		switch strings.TrimSpace(name) {
		case "delivered":
			o.Delivered = f
		case "undeliverable":
			o.Undeliverable = f
		case "expired":
			o.Expired = f
		case "rejected":
			o.Rejected = f
		default:
			return fmt.Errorf("unknown outcome %q (delivered, undeliverable, expired, rejected)", name)
		}
	}
	if o.Delivered+o.Undeliverable+o.Expired+o.Rejected == 0 {
		return errors.New("weights must not all be zero")
	}
	return nil
}

func (o Outcomes) String() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	return "delivered=" + f(o.Delivered) + ",undeliverable=" + f(o.Undeliverable) + ",expired=" + f(o.Expired) + ",rejected=" + f(o.Rejected)
}

// listenURLHost is host:port as a URL on this machine reaches a listen address: a wildcard or
// empty host is 127.0.0.1.
func listenURLHost(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// resolveListener fills the URLs that follow the listen address once the node listens (the
// port is only known then when TUMA_HTTP_ADDR asks for port 0).
func (c *Config) resolveListener(addr string) {
	if c.publicDerived {
		c.PublicURL = "http://" + listenURLHost(addr)
	}
	if c.dashboardDerived {
		c.DashboardURL = c.PublicURL + "/app/"
	}
}

// SenderFees are the sender ID registration fees in cents, by network ("all" included).
type SenderFees map[string]int64

var senderFeeNetworks = []string{"safaricom", "airtel", "telkom", "all"}

func (f *SenderFees) parse(v string) error {
	out := SenderFees{}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || !slices.Contains(senderFeeNetworks, k) {
			return fmt.Errorf("want network=KES for each of %s", strings.Join(senderFeeNetworks, ", "))
		}
		kes, err := strconv.ParseFloat(val, 64)
		if err != nil || kes < 0 || kes > 10_000_000 || math.Round(kes*100) != kes*100 {
			return fmt.Errorf("%s: want an amount in KES with at most two decimals", k)
		}
		out[k] = int64(math.Round(kes * 100))
	}
	for _, n := range senderFeeNetworks {
		if _, ok := out[n]; !ok {
			return fmt.Errorf("no fee for %s", n)
		}
	}
	*f = out
	return nil
}

func (f SenderFees) String() string {
	var parts []string
	for _, n := range senderFeeNetworks {
		c := f[n]
		if c%100 == 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", n, c/100))
		} else {
			parts = append(parts, fmt.Sprintf("%s=%d.%02d", n, c/100, c%100))
		}
	}
	return strings.Join(parts, ",")
}
