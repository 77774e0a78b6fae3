package app

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/carriers/smpp"
	"github.com/tuma-sms/tuma/transport/webhooks"
)

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
		{"TUMA_ENV", "", "development or production (production requires TUMA_JWT_SECRET and a real payment provider, logs JSON); unset means development and is refused unless TUMA_HTTP_ADDR is a loopback address", false,
			func(c *Config, v string) error {
				if v == "" {
					return nil // decided in finish, from the listen address
				}
				return oneOf(&c.Env, v, "development", "production")
			},
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
		{"TUMA_METRICS_ADDR", "", "internal address for /metrics and /debug/pprof/* (no credentials: keep it off public networks); unset serves /metrics on the API port", false,
			func(c *Config, v string) error {
				if v == "" {
					return nil
				}
				if _, _, err := net.SplitHostPort(v); err != nil {
					return errors.New("must be host:port")
				}
				c.MetricsAddr = v
				return nil
			},
			func(c *Config) string { return c.MetricsAddr }},
		boolOption("TUMA_PPROF", "false", "serve /debug/pprof/* on the API port to callers with the admin token (needs TUMA_ADMIN_TOKEN)", func(c *Config) *bool { return &c.Pprof }),
		{"TUMA_PUBLIC_URL", "", "base URL clients reach the API at, for links and checkout pages (default http://<TUMA_HTTP_ADDR>)", false,
			func(c *Config, v string) error {
				if v == "" {
					return nil
				}
				return httpURL(&c.PublicURL, v)
			},
			func(c *Config) string { return c.PublicURL }},
		{"TUMA_DASHBOARD_URL", "", "the dashboard, where browser flows land after verification, payment and a password reset (default <public url>/app/)", false,
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
		intOption("TUMA_DATABASE_MAX_CONNS", "16", "PostgreSQL connection pool size", func(c *Config) *int { return &c.DatabaseMaxConns }, 2, 1000),
		boolOption("TUMA_MIGRATE_ON_START", "true", "apply pending migrations when serve starts", func(c *Config) *bool { return &c.MigrateOnStart }),
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
		{"TUMA_ADMIN_TOKEN", "", "bearer token of the admin API; unset turns the admin API off (production: at least 32 characters, not the Makefile's development token)", true,
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
		intOption("TUMA_EMAILS_PER_HOUR", "5", "verification and reset emails one address may receive per hour (a client IP may ask for twenty times this)", func(c *Config) *int { return &c.EmailsPerHour }, 1, 10_000),
		intOption("TUMA_CODE_ATTEMPTS_PER_DAY", "20", "wrong verification codes one account may enter in 24 hours across codes (a new code unlocks its own five tries, not this); then code_locked (0 disables)", func(c *Config) *int { return &c.CodeAttemptsPerDay }, 0, 1_000_000),
		durationOption("TUMA_MAIL_RETRY_MIN", "5s", "first retry delay of an undelivered email (doubles per attempt)", func(c *Config) *time.Duration { return &c.MailRetryMin }, duration),
		durationOption("TUMA_MAIL_RETRY_MAX", "10m", "longest retry delay of an undelivered email", func(c *Config) *time.Duration { return &c.MailRetryMax }, duration),
		durationOption("TUMA_MAIL_GIVE_UP", "24h", "an email still undelivered this long after it was queued is marked failed and no longer retried (0 = retry forever)", func(c *Config) *time.Duration { return &c.MailGiveUp }, nonNegDuration),
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
		{"TUMA_SENDER_FEES", "safaricom=6000,airtel=4000,telkom=3000,all=12000", "sender ID registration fee in KES per network (all four: safaricom, airtel, telkom, all)", false,
			func(c *Config, v string) error { return c.SenderFees.parse(v) },
			func(c *Config) string { return c.SenderFees.String() }},
		{"TUMA_DATA_DIR", "data", "folder for uploaded sender ID documents (created when missing)", false,
			func(c *Config, v string) error {
				if strings.TrimSpace(v) == "" {
					return errors.New("must name a folder")
				}
				c.DataDir = v
				return nil
			},
			func(c *Config) string { return c.DataDir }},
		{"TUMA_CARRIERS", "sim", "carrier links: sim (in-process simulated networks) or smpp (SMPP 3.4 binds, configured by TUMA_SMPP_SAFARICOM, TUMA_SMPP_AIRTEL and TUMA_SMPP_TELKOM)", false,
			func(c *Config, v string) error { return oneOf(&c.Carriers, v, "sim", "smpp") },
			func(c *Config) string { return c.Carriers }},
		smppOption(carriers.Safaricom),
		smppOption(carriers.Airtel),
		smppOption(carriers.Telkom),
		{"TUMA_SMPP_SERVER_ADDR", "", "address of the SMPP 3.4 server for tenants' ESMEs, binding with /smpp/credentials (transport/smppserver/README.md); unset: off", false,
			func(c *Config, v string) error {
				if v == "" {
					return nil
				}
				if _, _, err := net.SplitHostPort(v); err != nil {
					return errors.New("must be host:port")
				}
				c.SMPPServerAddr = v
				return nil
			},
			func(c *Config) string { return c.SMPPServerAddr }},
		intOption("TUMA_SMPP_SERVER_TPS", "0", "submits per second per account over the SMPP server, all its binds on every node (one bucket in Redis), answered ESME_RTHROTTLED above (0 = no limit)", func(c *Config) *int { return &c.SMPPServerTPS }, 0, 1_000_000),
		intOption("TUMA_SMPP_CREDENTIALS_PER_ACCOUNT", "10", "most SMPP credentials (/smpp/credentials: system_id, password, allowed addresses) an account may have (0 = no limit)", func(c *Config) *int { return &c.SMPPCredentialsPerAccount }, 0, 100_000),
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
		durationOption("TUMA_LOG_BUFFER", "50ms", "how long log lines may wait to be written together (warnings and errors, and everything before them, are written at once; a kill -9 loses at most this much of the rest; 0 writes every line at once)", func(c *Config) *time.Duration { return &c.LogBuffer }, durationOrZero),
		boolOption("TUMA_ACCESS_LOG", "true", "log every HTTP request", func(c *Config) *bool { return &c.AccessLog }),
		intOption("TUMA_MAX_BODY_BYTES", "4194304", "largest request body accepted (413 beyond)", func(c *Config) *int { return &c.MaxBodyBytes }, 1024, 1<<30),
		durationOption("TUMA_REQUEST_TIMEOUT", "30s", "deadline of each request's work", func(c *Config) *time.Duration { return &c.RequestTimeout }, duration),
		intOption("TUMA_MAX_IN_FLIGHT", "512", "most API requests served at once, reads and writes together; beyond the bound (or its class's, TUMA_SHED_LATENCY) a request is answered 503 overloaded with Retry-After at once instead of queueing (health, readiness and metrics are never refused; 0 = no bound)", func(c *Config) *int { return &c.MaxInFlight }, 0, 1_000_000),
		durationOption("TUMA_SHED_LATENCY", "250ms", "each class of API request (reads: GET and HEAD; writes: the rest) has an in-flight bound that shrinks while the mean latency of its requests exceeds this, and grows back to TUMA_MAX_IN_FLIGHT when it does not, so slow reads never shed quick sends (0 = fixed bounds)", func(c *Config) *time.Duration { return &c.ShedLatency }, durationOrZero),
		{"TUMA_CLUSTER_ADDR", "", "host:port this node's actor system listens on for the other nodes (its health port, for the membership checks, is the next port); unset: a single node, which refuses to share its database", false,
			func(c *Config, v string) error {
				if v == "" {
					c.ClusterAddr = ""
					return nil
				}
				if _, err := actors.HealthAddr(v); err != nil {
					return errors.New("must be host:port, the port 1-65534 (the next port is its health port)")
				}
				c.ClusterAddr = v
				return nil
			},
			func(c *Config) string { return c.ClusterAddr }},
		{"TUMA_CLUSTER_PEERS", "", "with TUMA_CLUSTER_ADDR: every node's TUMA_CLUSTER_ADDR, comma-separated, this one included (static membership)", false,
			func(c *Config, v string) error {
				c.ClusterPeers = nil
				for _, p := range strings.Split(v, ",") {
					if p = strings.TrimSpace(p); p == "" {
						continue
					}
					if _, err := actors.HealthAddr(p); err != nil {
						return fmt.Errorf("%q must be host:port, the port 1-65534", p)
					}
					c.ClusterPeers = append(c.ClusterPeers, p)
				}
				return nil
			},
			func(c *Config) string { return strings.Join(c.ClusterPeers, ",") }},
		{"TUMA_NODE_ID", "", "a stable name for this node in leases, fences and logs, at most 63 characters, one node's alone (default: TUMA_CLUSTER_ADDR; a single node needs none)", false,
			func(c *Config, v string) error {
				if len(v) > 63 {
					return errors.New("at most 63 characters")
				}
				c.NodeID = v
				return nil
			},
			func(c *Config) string { return c.NodeID }},
		durationOption("TUMA_CLUSTER_PAUSE_LIMIT", "1500ms", "with TUMA_CLUSTER_ADDR: a node that finds it did not run for longer than this (SIGSTOP, a frozen VM) may have been evicted by the others, who wait 2 s on a health check: it stops submitting and serving, fails /readyz and exits with status 75 to be restarted as a new member (100ms to under 2s; 0 = off)", func(c *Config) *time.Duration { return &c.ClusterPauseLimit }, nonNegDuration),
		durationOption("TUMA_NODE_LOCK_WAIT", "5s", "a node holds its database for its whole life (several nodes on one database would send messages twice); a node that finds another holding it waits this long for it to go (one killed a moment ago), then refuses to start, naming it (0 = refuse at once)", func(c *Config) *time.Duration { return &c.NodeLockWait }, nonNegDuration),
		durationOption("TUMA_SHUTDOWN_TIMEOUT", "20s", "how long a graceful shutdown may take", func(c *Config) *time.Duration { return &c.ShutdownTimeout }, duration),
		{"TUMA_RATE_LIMIT_RPS", "100", "API requests per second per account, one bucket in Redis shared by every node (0 disables); a busy account's node takes tokens in leases of up to 50 ms of the rate, so the limit may let through one lease (5 requests at 100/s) per node beyond it", false,
			func(c *Config, v string) error {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil || f < 0 {
					return errors.New("must be a non-negative number")
				}
				c.RateLimitRPS = f
				return nil
			},
			func(c *Config) string { return strconv.FormatFloat(c.RateLimitRPS, 'f', -1, 64) }},
		intOption("TUMA_RATE_LIMIT_BURST", "200", "burst of the per-account rate limit", func(c *Config) *int { return &c.RateLimitBurst }, 1, 1_000_000),
		intOption("TUMA_DELIVERY_CHECKS_PER_MINUTE", "60", "live carrier status checks (GET /sms/delivery/{id}) per account per minute (0 disables)", func(c *Config) *int { return &c.DeliveryChecksPerMinute }, 0, 1_000_000),
		intOption("TUMA_LOCAL_LIMIT_KEYS", "100000", "most rate-limit buckets a node keeps in memory while Redis is down; the least recently used are dropped (0 = no cap)", func(c *Config) *int { return &c.LocalLimitKeys }, 0, 100_000_000),
		intOption("TUMA_LOGIN_ATTEMPTS_PER_MINUTE", "10", "login attempts per email per minute (per client IP: ten times this)", func(c *Config) *int { return &c.LoginPerMinute }, 1, 1_000_000),
		intOption("TUMA_AUTH_LIMIT_PER_IP", "60", "requests per minute per client IP to register, login, refresh, resend-verification, forgot-password and reset-password, checked before any password hashing (0 disables)", func(c *Config) *int { return &c.AuthLimitPerIP }, 0, 1_000_000),
		intOption("TUMA_SIGNUP_LIMIT_PER_IP", "10", "registrations per hour per client IP (0 disables; test and load rigs that register many accounts set 0)", func(c *Config) *int { return &c.SignupLimitPerIP }, 0, 1_000_000),
		intOption("TUMA_BCRYPT_COST", "10", "bcrypt cost of password hashes (4-31; SMPP passwords, random and checked at each bind, at most 8)", func(c *Config) *int { return &c.BcryptCost }, 4, 31),
		durationOption("TUMA_REFRESH_TOKEN_TTL", "720h", "lifetime of refresh tokens", func(c *Config) *time.Duration { return &c.RefreshTokenTTL }, duration),
		durationOption("TUMA_SESSION_MAX_AGE", "12h", "dashboard sessions end this long after sign-in, however active (they also end after 30 minutes unused)", func(c *Config) *time.Duration { return &c.SessionMaxAge }, duration),
		durationOption("TUMA_SIM_LATENCY", "20ms", "simulated networks: time a submit takes", func(c *Config) *time.Duration { return &c.SimLatency }, nonNegDuration),
		durationOption("TUMA_SIM_RECEIPT_DELAY", "1s", "simulated networks: time from submit to delivery receipt", func(c *Config) *time.Duration { return &c.SimReceiptDelay }, nonNegDuration),
		{"TUMA_SIM_TPS", "0", "simulated networks: submits per second each accepts before throttling (0 = unlimited; or safaricom=100,airtel=50,telkom=20)", false,
			func(c *Config, v string) error { return c.SimTPS.parse(v) },
			func(c *Config) string { return c.SimTPS.String() }},
		rateOption("TUMA_SIM_FAILURE_RATE", "0", "simulated networks: probability a submit fails temporarily (retried)", func(c *Config) *float64 { return &c.SimFailureRate }),
		rateOption("TUMA_SIM_THROTTLE_RATE", "0", "simulated networks: probability a submit is answered with a throttle", func(c *Config) *float64 { return &c.SimThrottleRate }),
		{"TUMA_SIM_OUTCOMES", "delivered=97,undeliverable=2,expired=1", "simulated networks: mix of final outcomes (delivered, undeliverable, expired, rejected weights)", false,
			func(c *Config, v string) error { return c.SimOutcomes.parse(v) },
			func(c *Config) string { return c.SimOutcomes.String() }},
		{"TUMA_LINK_TPS", "0", "carrier links: our own submit rate cap per network (0 = none; or safaricom=100,…)", false,
			func(c *Config, v string) error { return c.LinkTPS.parse(v) },
			func(c *Config) string { return c.LinkTPS.String() }},
		intOption("TUMA_HANDOFF_MESSAGES", "100000", "messages of small jobs that may wait at the links for their outcomes after giving their tenant's dispatch slot back, so one unreachable network does not hold up a tenant's others (0 = jobs keep their slots)", func(c *Config) *int { return &c.HandOffMessages }, 0, 100_000_000),
		intOption("TUMA_CAMPAIGN_WINDOW", "1024", "messages a campaign hands each network's link before their outcomes are recorded (a send's job: 256); larger is faster, and a tenant's own sends wait behind at most this many", func(c *Config) *int { return &c.CampaignWindow }, 1, 100_000),
		intOption("TUMA_WAITING_MESSAGES", "65536", "messages that sends waiting for a dispatch slot keep in memory on the node, all tenants together, so that a tenant sending one message a request dispatches without reading each back (0 = none kept: each waiting send reads its messages back when its turn comes)", func(c *Config) *int { return &c.WaitingMessages }, 0, 10_000_000),
		intOption("TUMA_JOB_WINDOW", "256", "messages a send's job hands each network's link before their outcomes are recorded (0: no limit): the tenant's other sends to that network wait behind at most this many of one bulk send", func(c *Config) *int { return &c.JobWindow }, 0, 100_000),
		intOption("TUMA_ACCEPT_WRITERS", "1", "group-commit writers of accepted sends, each committing a disjoint share of accounts one transaction at a time: one carries the most sends a commit (on 2 cores 6–8 % more 1-recipient sends/s than two, 10,000-recipient accepts within the noise); more commit in parallel on a larger machine", func(c *Config) *int { return &c.AcceptWriters }, 1, 64),
		intOption("TUMA_IMPORT_WORKERS", "2", "database connections a contact import merges its rows through at once, each in a transaction of its own, committed together (1: one transaction)", func(c *Config) *int { return &c.ImportWorkers }, 1, 16),
		durationOption("TUMA_BULK_ACCEPT_YIELD", "10ms", "while a send of 1,000 or more recipients is being accepted, carrier links take no new submits for up to this long, then at least as long again, so its 202 does not wait behind dispatch for the CPU (0: links never give way)", func(c *Config) *time.Duration { return &c.BulkAcceptYield }, durationOrZero),
		durationOption("TUMA_QUIET_HOURS_CHECK", "30s", "how often a tenant looks at its quiet hours between their edges (it also wakes at each edge): promotional messages go within this of a clock that jumps", func(c *Config) *time.Duration { return &c.QuietHoursCheck }, duration),
		intOption("TUMA_LINK_WINDOW", "256", "carrier links: most submits in flight per network (with SMPP, at least the sum of its binds' windows); a network answering in L passes at most this many per L", func(c *Config) *int { return &c.LinkWindow }, 1, 10_000),
		durationOption("TUMA_RECEIPT_TIMEOUT", "10m", "a sent message with no delivery receipt after this is asked about", func(c *Config) *time.Duration { return &c.ReceiptTimeout }, duration),
		{"TUMA_FAULTS", "", "deliberate defects for the drills' own tests (skip-refunds, skip-counts, skip-resume, release-keys, hold-slots, log-secrets, cross-tenant, abrupt-shutdown, no-shed, local-tps, unwatched); only binaries built with -tags faults accept it", false,
			func(c *Config, v string) error { return c.Faults.parse(v) },
			func(c *Config) string { return c.Faults.String() }},
		durationOption("TUMA_RECEIPT_DEADLINE", "72h", "a sent message still without a final status after this fails and is refunded (the stale-sent sweep; at least TUMA_RECEIPT_TIMEOUT)", func(c *Config) *time.Duration { return &c.ReceiptDeadline }, duration),
		durationOption("TUMA_ORPHAN_SWEEP", "30s", "how often a node looks for accounts it owns with unfinished jobs whose tenant fence another node holds and that no tenant here runs (a cluster handoff that raced a retiring tenant), and wakes them (0: never)", func(c *Config) *time.Duration { return &c.OrphanSweep }, durationOrZero),
		durationOption("TUMA_TAKEOVER_SETTLE", "15s", "how long after another node marked a submit it may still reach its network (queue, window, its wait for a rate slot: up to half a second of a capped link's sending is marked ahead, response timeout): a node taking the account over sends that message only once this has passed, the network does not have it (asked again then) or, for SMPP, which cannot be asked, the other node has recorded no outcome for it (0: at once, and a submit still on its way goes twice)", func(c *Config) *time.Duration { return &c.TakeoverSettle }, durationOrZero),
		{"TUMA_WEBHOOK_RETRY_SCHEDULE", "5s,5m,30m,2h,5h,10h,10h,14h", "delays before each retry of a failed webhook delivery (±10 % jitter); after the last, the delivery has failed", false,
			func(c *Config, v string) error {
				d, err := webhooks.ParseSchedule(v)
				c.WebhookSchedule = d
				return err
			},
			func(c *Config) string { return scheduleString(c.WebhookSchedule) }},
		boolOption("TUMA_WEBHOOK_ALLOW_PRIVATE", "false", "let webhook endpoints use http:// and loopback or private addresses (tests and local development only: it lifts the SSRF rules)", func(c *Config) *bool { return &c.WebhookAllowPrivate }),
		{"TUMA_WEBHOOK_SECRET_KEY", "", "key that encrypts webhook signing secrets in the database, at least 32 bytes; unset derives it from TUMA_JWT_SECRET (set this before ever rotating that), or a fixed development key when that is random", true,
			func(c *Config, v string) error {
				if v != "" && len(v) < 32 {
					return errors.New("must be at least 32 bytes")
				}
				c.WebhookSecretKey = v
				return nil
			},
			func(c *Config) string { return c.WebhookSecretKey }},
		durationOption("TUMA_WEBHOOK_DISABLE_AFTER", "72h", "a webhook endpoint whose every delivery has failed for this long is disabled and its account notified (0: never)", func(c *Config) *time.Duration { return &c.WebhookDisableAfter }, durationOrZero),
		intOption("TUMA_WEBHOOK_CONCURRENCY", "8", "webhook requests in flight per endpoint, across nodes (a slow endpoint holds only these)", func(c *Config) *int { return &c.WebhookLanes }, 1, 64),
		intOption("TUMA_WEBHOOK_CACHE_MESSAGES", "131072", "messages the node remembers from its status flushes so webhook deliveries render them without reading them back (about 300 bytes each; 0: every delivery reads its messages)", func(c *Config) *int { return &c.WebhookCache }, 0, 10_000_000),
		{"TUMA_TRUSTED_PROXIES", "", "comma-separated IPs or CIDRs of your reverse proxies: only requests from them have X-Forwarded-For read, right to left, for the client IP (unset: the peer address is the client)", false,
			func(c *Config, v string) error { return prefixes(&c.TrustedProxies, v) },
			func(c *Config) string { return prefixesString(c.TrustedProxies) }},
	}
}

// intOption is an integer variable from lo to hi.
func intOption(name, def, help string, field func(*Config) *int, lo, hi int) option {
	return option{name, def, help, false,
		func(c *Config, v string) error { return intIn(field(c), v, lo, hi) },
		func(c *Config) string { return strconv.Itoa(*field(c)) }}
}

// boolOption is a true-or-false variable.
func boolOption(name, def, help string, field func(*Config) *bool) option {
	return option{name, def, help, false,
		func(c *Config, v string) error { return boolean(field(c), v) },
		func(c *Config) string { return strconv.FormatBool(*field(c)) }}
}

// durationOption is a duration variable read by parse (duration, durationOrZero or
// nonNegDuration).
func durationOption(name, def, help string, field func(*Config) *time.Duration, parse func(*time.Duration, string) error) option {
	return option{name, def, help, false,
		func(c *Config, v string) error { return parse(field(c), v) },
		func(c *Config) string { return field(c).String() }}
}

// rateOption is a probability from 0 to 1.
func rateOption(name, def, help string, field func(*Config) *float64) option {
	return option{name, def, help, false,
		func(c *Config, v string) error { return rate(field(c), v) },
		func(c *Config) string { return strconv.FormatFloat(*field(c), 'f', -1, 64) }}
}

// smppOption is a network's SMPP binds: space-separated bind URLs (see smpp.ParseBinds).
func smppOption(n carriers.Network) option {
	name := "TUMA_SMPP_" + strings.ToUpper(n.String())
	return option{name, "", "with TUMA_CARRIERS=smpp: " + n.String() + "'s binds, space-separated smpp://system_id:password@host:port?options URLs (README, SMPP links)", true,
		func(c *Config, v string) error {
			if v == "" {
				delete(c.SMPPBinds, n)
				c.smppRaw[n] = ""
				return nil
			}
			bs, err := smpp.ParseBinds(n.String(), v)
			if err != nil {
				return err
			}
			if c.SMPPBinds == nil {
				c.SMPPBinds = map[carriers.Network][]smpp.BindConfig{}
			}
			c.SMPPBinds[n], c.smppRaw[n] = bs, v
			return nil
		},
		func(c *Config) string { return c.smppRaw[n] }}
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

// durationOrZero is duration where 0 turns the feature off.
func durationOrZero(dst *time.Duration, v string) error {
	if v == "0" {
		*dst = 0
		return nil
	}
	return duration(dst, v)
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

// prefixes reads a comma-separated list of IPs and CIDRs; a bare IP is a one-address prefix.
func prefixes(dst *[]netip.Prefix, v string) error {
	*dst = nil
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			*dst = append(*dst, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil || a.Zone() != "" {
			return fmt.Errorf("%q is not an IP address or CIDR", part)
		}
		a = a.Unmap()
		*dst = append(*dst, netip.PrefixFrom(a, a.BitLen()))
	}
	return nil
}

func prefixesString(ps []netip.Prefix) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
		if p.IsSingleIP() {
			out[i] = p.Addr().String()
		}
	}
	return strings.Join(out, ",")
}

func scheduleString(ds []time.Duration) string {
	out := make([]string, len(ds))
	for i, d := range ds {
		switch {
		case d%time.Hour == 0:
			out[i] = strconv.FormatInt(int64(d/time.Hour), 10) + "h"
		case d%time.Minute == 0:
			out[i] = strconv.FormatInt(int64(d/time.Minute), 10) + "m"
		default:
			out[i] = d.String()
		}
	}
	return strings.Join(out, ",")
}
