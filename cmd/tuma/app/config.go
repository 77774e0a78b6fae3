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
	"net"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

// Config is the whole configuration of a node, read once from the environment and validated.
type Config struct {
	Env               string // development | production
	HTTPAddr          string
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
	Carriers          string
	LogLevel          slog.Level
	LogFormat         string // text | json
	AccessLog         bool
	MaxBodyBytes      int
	RequestTimeout    time.Duration
	ShutdownTimeout   time.Duration
	RateLimitRPS      float64
	RateLimitBurst    int
	LoginPerMinute    int // attempts per email and minute; per IP it is ten times this
	BcryptCost        int
	RefreshTokenTTL   time.Duration
	TrustForwardedFor bool

	SimLatency      time.Duration
	SimReceiptDelay time.Duration
	SimTPS          PerNetwork
	SimFailureRate  float64
	SimThrottleRate float64
	SimOutcomes     Outcomes
	LinkTPS         PerNetwork
	LinkWindow      int
	ReceiptTimeout  time.Duration

	EmailsPerHour int
	MailRetryMin  time.Duration
	MailRetryMax  time.Duration

	LowBalanceCents int64 // a send leaving less raises a low_balance notification (0: never)

	// publicDerived and dashboardDerived: the URLs were not configured and follow the address
	// the node listens on (see resolveListener).
	publicDerived, dashboardDerived bool

	// JWTSecretGenerated is set when no secret was configured and a random one was made.
	JWTSecretGenerated bool
}

// devPaymentSecret signs the sandbox's webhooks in development; production refuses it.
const devPaymentSecret = "sk_test_tuma_sandbox_secret"

// option is one environment variable: its default, what it means, and how it is read.
type option struct {
	name   string
	def    string
	help   string
	secret bool
	set    func(c *Config, v string) error
	get    func(c *Config) string
}

// options is the table of every variable, in the order `tuma config` prints them. The
// defaults work on a development machine with local PostgreSQL and Redis.
func options() []option {
	return []option{
		{"TUMA_ENV", "development", "development or production (production requires TUMA_JWT_SECRET, logs JSON)", false,
			func(c *Config, v string) error { return oneOf(&c.Env, v, "development", "production") },
			func(c *Config) string { return c.Env }},
		{"TUMA_HTTP_ADDR", "127.0.0.1:8080", "address the API listens on", false,
			func(c *Config, v string) error {
				if _, _, err := net.SplitHostPort(v); err != nil {
					return errors.New("must be host:port")
				}
				c.HTTPAddr = v
				return nil
			},
			func(c *Config) string { return c.HTTPAddr }},
		{"TUMA_PUBLIC_URL", "", "base URL clients reach the API at, for links and checkout pages (default http://<TUMA_HTTP_ADDR>)", false,
			func(c *Config, v string) error {
				if v == "" {
					return nil
				}
				return httpURL(&c.PublicURL, v)
			},
			func(c *Config) string { return c.PublicURL }},
		{"TUMA_DASHBOARD_URL", "", "where browser flows land after verification and payment (default <public url>/docs)", false,
			func(c *Config, v string) error {
				if v == "" {
					return nil
				}
				return httpURL(&c.DashboardURL, v)
			},
			func(c *Config) string { return c.DashboardURL }},
		{"TUMA_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tuma?sslmode=disable", "PostgreSQL URL; the database is created when missing", true,
			func(c *Config, v string) error {
				u, err := url.Parse(v)
				if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
					return errors.New("must be a postgres:// URL")
				}
				c.DatabaseURL = v
				return nil
			},
			func(c *Config) string { return c.DatabaseURL }},
		{"TUMA_DATABASE_MAX_CONNS", "16", "PostgreSQL connection pool size", false,
			func(c *Config, v string) error { return intIn(&c.DatabaseMaxConns, v, 2, 1000) },
			func(c *Config) string { return strconv.Itoa(c.DatabaseMaxConns) }},
		{"TUMA_MIGRATE_ON_START", "true", "apply pending migrations when serve starts", false,
			func(c *Config, v string) error { return boolean(&c.MigrateOnStart, v) },
			func(c *Config) string { return strconv.FormatBool(c.MigrateOnStart) }},
		{"TUMA_REDIS_URL", "redis://127.0.0.1:6379/0", "Redis URL (caches and shared limits; the service runs degraded without it)", true,
			func(c *Config, v string) error {
				u, err := url.Parse(v)
				if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix") {
					return errors.New("must be a redis:// URL")
				}
				c.RedisURL = v
				return nil
			},
			func(c *Config) string { return c.RedisURL }},
		{"TUMA_REDIS_PREFIX", "tuma:", "prefix of every Redis key", false,
			func(c *Config, v string) error { c.RedisPrefix = v; return nonEmpty(v) },
			func(c *Config) string { return c.RedisPrefix }},
		{"TUMA_JWT_SECRET", "", "HMAC secret for access tokens, at least 32 bytes; random per process in development", true,
			func(c *Config, v string) error {
				if v != "" && len(v) < 32 {
					return errors.New("must be at least 32 bytes")
				}
				c.JWTSecret = v
				return nil
			},
			func(c *Config) string { return c.JWTSecret }},
		{"TUMA_ADMIN_TOKEN", "", "bearer token of the admin API; unset turns the admin API off", true,
			func(c *Config, v string) error {
				if v != "" && len(v) < 16 {
					return errors.New("must be at least 16 characters")
				}
				c.AdminToken = v
				return nil
			},
			func(c *Config) string { return c.AdminToken }},
		{"TUMA_SMTP_URL", "", "smtp://user:pass@host:port for outgoing mail; unset writes mail to the log", true,
			func(c *Config, v string) error {
				if v == "" {
					return nil
				}
				u, err := url.Parse(v)
				if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Host == "" {
					return errors.New("must be an smtp:// or smtps:// URL with a host")
				}
				c.SMTPURL = v
				return nil
			},
			func(c *Config) string { return c.SMTPURL }},
		{"TUMA_MAIL_FROM", "Tuma <no-reply@localhost>", "sender of outgoing mail", false,
			func(c *Config, v string) error { c.MailFrom = v; return nonEmpty(v) },
			func(c *Config) string { return c.MailFrom }},
		{"TUMA_EMAILS_PER_HOUR", "5", "verification and reset emails one address may receive per hour (a client IP may ask for twenty times this)", false,
			func(c *Config, v string) error { return intIn(&c.EmailsPerHour, v, 1, 10_000) },
			func(c *Config) string { return strconv.Itoa(c.EmailsPerHour) }},
		{"TUMA_MAIL_RETRY_MIN", "5s", "first retry delay of an undelivered email (doubles per attempt)", false,
			func(c *Config, v string) error { return duration(&c.MailRetryMin, v) },
			func(c *Config) string { return c.MailRetryMin.String() }},
		{"TUMA_MAIL_RETRY_MAX", "10m", "longest retry delay of an undelivered email", false,
			func(c *Config, v string) error { return duration(&c.MailRetryMax, v) },
			func(c *Config) string { return c.MailRetryMax.String() }},
		{"TUMA_LOW_BALANCE_KES", "100", "a send that leaves the wallet under this many KES raises a low_balance notification, once until it is topped up again (0 disables)", false,
			func(c *Config, v string) error {
				var kes int
				if err := intIn(&kes, v, 0, 1_000_000); err != nil {
					return err
				}
				c.LowBalanceCents = int64(kes) * 100
				return nil
			},
			func(c *Config) string { return strconv.FormatInt(c.LowBalanceCents/100, 10) }},
		{"TUMA_PAYMENT_PROVIDER", "sandbox", "sandbox (built-in checkout) or paystack", false,
			func(c *Config, v string) error { return oneOf(&c.PaymentProvider, v, "sandbox", "paystack") },
			func(c *Config) string { return c.PaymentProvider }},
		{"TUMA_PAYMENT_SECRET_KEY", devPaymentSecret, "payment provider secret key (signs and verifies webhooks)", true,
			func(c *Config, v string) error { c.PaymentSecretKey = v; return nonEmpty(v) },
			func(c *Config) string { return c.PaymentSecretKey }},
		{"TUMA_PAYSTACK_BASE_URL", "https://api.paystack.co", "Paystack API base URL (tests point it at a fake)", false,
			func(c *Config, v string) error { return httpURL(&c.PaystackBaseURL, v) },
			func(c *Config) string { return c.PaystackBaseURL }},
		{"TUMA_SHARED_SENDER_ID", "TUMA", "the shared sender ID used when an account has no default sender", false,
			func(c *Config, v string) error {
				if len(v) < 2 || len(v) > 11 || strings.Trim(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") != "" {
					return errors.New("must be 2-11 letters and digits")
				}
				c.SharedSenderID = v
				return nil
			},
			func(c *Config) string { return c.SharedSenderID }},
		{"TUMA_CARRIERS", "sim", "carrier links: sim (in-process simulated networks)", false,
			func(c *Config, v string) error { return oneOf(&c.Carriers, v, "sim") },
			func(c *Config) string { return c.Carriers }},
		{"TUMA_LOG_LEVEL", "info", "debug, info, warn or error", false,
			func(c *Config, v string) error { return c.LogLevel.UnmarshalText([]byte(v)) },
			func(c *Config) string { return strings.ToLower(c.LogLevel.String()) }},
		{"TUMA_LOG_FORMAT", "", "text or json (default: text in development, json in production)", false,
			func(c *Config, v string) error {
				if v == "" {
					return nil
				}
				return oneOf(&c.LogFormat, v, "text", "json")
			},
			func(c *Config) string { return c.LogFormat }},
		{"TUMA_ACCESS_LOG", "true", "log every HTTP request", false,
			func(c *Config, v string) error { return boolean(&c.AccessLog, v) },
			func(c *Config) string { return strconv.FormatBool(c.AccessLog) }},
		{"TUMA_MAX_BODY_BYTES", "4194304", "largest request body accepted (413 beyond)", false,
			func(c *Config, v string) error { return intIn(&c.MaxBodyBytes, v, 1024, 1<<30) },
			func(c *Config) string { return strconv.Itoa(c.MaxBodyBytes) }},
		{"TUMA_REQUEST_TIMEOUT", "30s", "deadline of each request's work", false,
			func(c *Config, v string) error { return duration(&c.RequestTimeout, v) },
			func(c *Config) string { return c.RequestTimeout.String() }},
		{"TUMA_SHUTDOWN_TIMEOUT", "20s", "how long a graceful shutdown may take", false,
			func(c *Config, v string) error { return duration(&c.ShutdownTimeout, v) },
			func(c *Config) string { return c.ShutdownTimeout.String() }},
		{"TUMA_RATE_LIMIT_RPS", "100", "API requests per second per account (0 disables)", false,
			func(c *Config, v string) error {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil || f < 0 {
					return errors.New("must be a non-negative number")
				}
				c.RateLimitRPS = f
				return nil
			},
			func(c *Config) string { return strconv.FormatFloat(c.RateLimitRPS, 'f', -1, 64) }},
		{"TUMA_RATE_LIMIT_BURST", "200", "burst of the per-account rate limit", false,
			func(c *Config, v string) error { return intIn(&c.RateLimitBurst, v, 1, 1_000_000) },
			func(c *Config) string { return strconv.Itoa(c.RateLimitBurst) }},
		{"TUMA_LOGIN_ATTEMPTS_PER_MINUTE", "10", "login attempts per email per minute (per client IP: ten times this)", false,
			func(c *Config, v string) error { return intIn(&c.LoginPerMinute, v, 1, 1_000_000) },
			func(c *Config) string { return strconv.Itoa(c.LoginPerMinute) }},
		{"TUMA_BCRYPT_COST", "10", "bcrypt cost of password hashes (4-31)", false,
			func(c *Config, v string) error { return intIn(&c.BcryptCost, v, 4, 31) },
			func(c *Config) string { return strconv.Itoa(c.BcryptCost) }},
		{"TUMA_REFRESH_TOKEN_TTL", "720h", "lifetime of refresh tokens", false,
			func(c *Config, v string) error { return duration(&c.RefreshTokenTTL, v) },
			func(c *Config) string { return c.RefreshTokenTTL.String() }},
		{"TUMA_SIM_LATENCY", "20ms", "simulated networks: time a submit takes", false,
			func(c *Config, v string) error { return nonNegDuration(&c.SimLatency, v) },
			func(c *Config) string { return c.SimLatency.String() }},
		{"TUMA_SIM_RECEIPT_DELAY", "1s", "simulated networks: time from submit to delivery receipt", false,
			func(c *Config, v string) error { return nonNegDuration(&c.SimReceiptDelay, v) },
			func(c *Config) string { return c.SimReceiptDelay.String() }},
		{"TUMA_SIM_TPS", "0", "simulated networks: submits per second each accepts before throttling (0 = unlimited; or safaricom=100,airtel=50,telkom=20)", false,
			func(c *Config, v string) error { return c.SimTPS.parse(v) },
			func(c *Config) string { return c.SimTPS.String() }},
		{"TUMA_SIM_FAILURE_RATE", "0", "simulated networks: probability a submit fails temporarily (retried)", false,
			func(c *Config, v string) error { return rate(&c.SimFailureRate, v) },
			func(c *Config) string { return strconv.FormatFloat(c.SimFailureRate, 'f', -1, 64) }},
		{"TUMA_SIM_THROTTLE_RATE", "0", "simulated networks: probability a submit is answered with a throttle", false,
			func(c *Config, v string) error { return rate(&c.SimThrottleRate, v) },
			func(c *Config) string { return strconv.FormatFloat(c.SimThrottleRate, 'f', -1, 64) }},
		{"TUMA_SIM_OUTCOMES", "delivered=97,undeliverable=2,expired=1", "simulated networks: mix of final outcomes (delivered, undeliverable, expired, rejected weights)", false,
			func(c *Config, v string) error { return c.SimOutcomes.parse(v) },
			func(c *Config) string { return c.SimOutcomes.String() }},
		{"TUMA_LINK_TPS", "0", "carrier links: our own submit rate cap per network (0 = none; or safaricom=100,…)", false,
			func(c *Config, v string) error { return c.LinkTPS.parse(v) },
			func(c *Config) string { return c.LinkTPS.String() }},
		{"TUMA_LINK_WINDOW", "100", "carrier links: most submits in flight per network", false,
			func(c *Config, v string) error { return intIn(&c.LinkWindow, v, 1, 10_000) },
			func(c *Config) string { return strconv.Itoa(c.LinkWindow) }},
		{"TUMA_RECEIPT_TIMEOUT", "10m", "a sent message with no delivery receipt after this is asked about", false,
			func(c *Config, v string) error { return duration(&c.ReceiptTimeout, v) },
			func(c *Config) string { return c.ReceiptTimeout.String() }},
		{"TUMA_TRUST_FORWARDED_FOR", "false", "take client IPs from X-Forwarded-For (only behind a trusted proxy)", false,
			func(c *Config, v string) error { return boolean(&c.TrustForwardedFor, v) },
			func(c *Config) string { return strconv.FormatBool(c.TrustForwardedFor) }},
	}
}

// LoadConfig reads the configuration from lookup (os.LookupEnv in production) and validates it.
// An error names the variable at fault.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	var c Config
	var errs []error
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
	if c.PublicURL == "" {
		c.publicDerived = true
		c.PublicURL = "http://" + listenURLHost(c.HTTPAddr)
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.DashboardURL == "" {
		c.dashboardDerived = true
		c.DashboardURL = c.PublicURL + "/docs"
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
	return nil
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

func oneOf(dst *string, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			*dst = v
			return nil
		}
	}
	return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
}

func boolean(dst *bool, v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return errors.New("must be true or false")
	}
	*dst = b
	return nil
}

func intIn(dst *int, v string, lo, hi int) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return fmt.Errorf("must be an integer from %d to %d", lo, hi)
	}
	*dst = n
	return nil
}

func duration(dst *time.Duration, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return errors.New("must be a positive duration such as 30s or 5m")
	}
	*dst = d
	return nil
}

func nonNegDuration(dst *time.Duration, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return errors.New("must be a duration such as 0s, 20ms or 2s")
	}
	*dst = d
	return nil
}

func rate(dst *float64, v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 1 {
		return errors.New("must be a probability from 0 to 1")
	}
	*dst = f
	return nil
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

func httpURL(dst *string, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an http:// or https:// URL")
	}
	*dst = strings.TrimRight(v, "/")
	return nil
}

func nonEmpty(v string) error {
	if v == "" {
		return errors.New("must not be empty")
	}
	return nil
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
		c.DashboardURL = c.PublicURL + "/docs"
	}
}
