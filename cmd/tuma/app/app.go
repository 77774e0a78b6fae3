package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/actors/simlink"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/carriers/sim"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/redis"
	"github.com/tuma-sms/tuma/transport"
	"github.com/tuma-sms/tuma/transport/auth"
	"github.com/tuma-sms/tuma/transport/mail"
	"github.com/tuma-sms/tuma/transport/payments"
)

// NewLogger builds the process logger the configuration asks for.
func NewLogger(cfg Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// App is a running node. Build it with New, then Run it.
type App struct {
	cfg      Config
	log      *slog.Logger
	store    *persistence.Store
	redis    *redis.Client
	registry *prometheus.Registry
	sims     *simlink.Set
	engine   *actors.Engine
	outbox   *mail.Outbox
	confirm  *payments.Confirmer
	hooks    *payments.SandboxHooks // nil unless the sandbox provider is on
	http     *transport.Server
	ln       net.Listener
	internal *fasthttp.Server // /metrics and pprof on TUMA_METRICS_ADDR; nil when unset
	iln      net.Listener
	now      func() time.Time
}

// Option adjusts how a node is built (tests).
type Option func(*App)

// WithClock makes the node read time from now (expiry of codes and tokens).
func WithClock(now func() time.Time) Option { return func(a *App) { a.now = now } }

// New connects the stores (creating and migrating the database as configured), builds every
// component and opens the listener. Nothing serves until Run.
func New(ctx context.Context, cfg Config, log *slog.Logger, opts ...Option) (*App, error) {
	a := &App{cfg: cfg, log: log, registry: prometheus.NewRegistry(), now: time.Now}
	for _, o := range opts {
		o(a)
	}
	if err := a.build(ctx); err != nil {
		if a.engine != nil {
			a.engine.Kill() // failed to finish starting: nothing was acknowledged yet
		}
		if a.ln != nil {
			a.ln.Close()
		}
		if a.iln != nil {
			a.iln.Close()
		}
		a.closeStores()
		return nil, err
	}
	return a, nil
}

func (a *App) build(ctx context.Context) (err error) {
	cfg, log := a.cfg, a.log
	if cfg.JWTSecretGenerated {
		log.Warn("TUMA_JWT_SECRET is unset: using a random secret, so tokens die with this process")
	}
	a.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{Namespace: "tuma"}),
	)

	a.store, err = persistence.Open(ctx, persistence.Options{URL: cfg.DatabaseURL, MaxConns: int32(cfg.DatabaseMaxConns)}, log)
	if err != nil {
		return fmt.Errorf("postgresql: %w", err)
	}
	if cfg.MigrateOnStart {
		from, to, err := a.store.Migrate(ctx)
		if err != nil {
			return err
		}
		if from != to {
			log.Info("migrated database", slog.Int("from", int(from)), slog.Int("to", int(to)))
		}
	}
	a.redis, err = redis.New(ctx, redis.Options{URL: cfg.RedisURL, Prefix: cfg.RedisPrefix}, log)
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	if !a.redis.Available() {
		log.Warn("redis is not reachable; serving with in-process fallbacks until it is", slog.String("url", redact("TUMA_REDIS_URL", cfg.RedisURL)))
	}

	a.ln, err = net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s (TUMA_HTTP_ADDR): %w", cfg.HTTPAddr, err)
	}
	a.cfg.resolveListener(a.ln.Addr().String())
	cfg = a.cfg
	if cfg.MetricsAddr != "" {
		if a.iln, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			return fmt.Errorf("listen on %s (TUMA_METRICS_ADDR): %w", cfg.MetricsAddr, err)
		}
	}

	if err := a.startEngine(ctx); err != nil {
		return err
	}

	sender, err := mail.NewSender(cfg.SMTPURL, cfg.MailFrom, log)
	if err != nil {
		return err
	}
	a.outbox, err = mail.NewOutbox(a.store, sender, mail.OutboxOptions{
		Poll: min(max(cfg.MailRetryMin, 100*time.Millisecond), 5*time.Second), RetryMin: cfg.MailRetryMin, RetryMax: cfg.MailRetryMax,
		GiveUp: cfg.MailGiveUp,
	}, log, a.registry)
	if err != nil {
		return err
	}

	provider, sandbox := a.buildPayments()

	passwords, err := auth.NewPasswords(cfg.BcryptCost)
	if err != nil {
		return err
	}
	tokens := auth.NewTokens([]byte(cfg.JWTSecret), a.now)
	principals := redis.NewPrincipals(a.redis, 5*time.Minute)
	loginPerSecond := float64(cfg.LoginPerMinute) / 60
	a.http, err = transport.New(transport.Options{
		PublicURL:          cfg.PublicURL,
		DashboardURL:       cfg.DashboardURL,
		MaxBodyBytes:       cfg.MaxBodyBytes,
		RequestTimeout:     cfg.RequestTimeout,
		AccessLog:          cfg.AccessLog,
		TrustedProxies:     cfg.TrustedProxies,
		AccountRate:        redis.Rate{PerSecond: cfg.RateLimitRPS, Burst: cfg.RateLimitBurst},
		LoginRatePerEmail:  redis.Rate{PerSecond: loginPerSecond, Burst: cfg.LoginPerMinute},
		LoginRatePerIP:     redis.Rate{PerSecond: loginPerSecond * 10, Burst: cfg.LoginPerMinute * 10},
		AuthRatePerIP:      perPeriod(cfg.AuthLimitPerIP, time.Minute),
		SignupRatePerIP:    perPeriod(cfg.SignupLimitPerIP, time.Hour),
		CodeAttemptsPerDay: cfg.CodeAttemptsPerDay,
		DeliveryRate:       perPeriod(cfg.DeliveryChecksPerMinute, time.Minute),
		RefreshTokenTTL:    cfg.RefreshTokenTTL,
		AdminToken:         cfg.AdminToken,
		CodeSecret:         derive(cfg.JWTSecret, "verification codes"),
		EmailRatePerAddr:   perPeriod(cfg.EmailsPerHour, time.Hour),
		EmailRatePerIP:     perPeriod(20*cfg.EmailsPerHour, time.Hour),
		MetricsElsewhere:   cfg.MetricsAddr != "",
		Pprof:              cfg.Pprof,
	}, transport.Deps{
		Log:         log,
		Registerer:  a.registry,
		Gatherer:    a.registry,
		Accounts:    a.store,
		Idempotency: a.store,
		Auth:        auth.NewAuthenticator(a.store, principals, tokens),
		Passwords:   passwords,
		Tokens:      tokens,
		Principals:  principals,
		Limiter:     redis.NewLimiter(a.redis, cfg.LocalLimitKeys),
		Plan:        carriers.DefaultPlan(),
		Engine:      a.engine,
		Queries:     a.store,
		Verify:      a.store,
		Mail:        a.outbox,
		Messages:    mail.Messages{Product: "Tuma", PublicURL: cfg.PublicURL, DashboardURL: cfg.DashboardURL},
		Now:         a.now,

		Provider:       provider,
		Confirmer:      a.confirm,
		PaymentStore:   a.store,
		WebhookSchemes: payments.Schemes{payments.PaystackHMAC{Secret: []byte(cfg.PaymentSecretKey)}},
		Sandbox:        sandbox,
		Checks: []transport.Check{
			{Name: "postgres", Critical: true, Probe: a.store.Ping},
			{Name: "redis", Critical: false, Probe: a.redis.Ping},
		},
	})
	if err != nil || a.iln == nil {
		return err
	}
	a.internal = &fasthttp.Server{
		Handler: a.http.InternalHandler(), Name: "tuma-internal", NoDefaultServerHeader: true,
		ReadTimeout: 30 * time.Second, WriteTimeout: 2 * time.Minute, // a CPU profile takes its seconds
		IdleTimeout: 90 * time.Second, CloseOnShutdown: true,
	}
	return nil
}

// perPeriod is a budget of n per period as a token bucket (n 0: no limit).
func perPeriod(n int, period time.Duration) redis.Rate {
	if n <= 0 {
		return redis.Rate{}
	}
	return redis.Rate{PerSecond: float64(n) / period.Seconds(), Burst: n}
}

// buildPayments makes the payment provider: Paystack, or the sandbox, which this node serves
// itself in Paystack's wire format and reaches through the same client over loopback.
func (a *App) buildPayments() (transport.PaymentProvider, *transport.Sandbox) {
	cfg := a.cfg
	secret := cfg.PaymentSecretKey
	var sandbox *transport.Sandbox
	p := payments.NewPaystack("paystack", cfg.PaystackBaseURL, secret, nil)
	if cfg.PaymentProvider == "sandbox" {
		self := "http://" + listenURLHost(a.ln.Addr().String())
		p = payments.NewPaystack("sandbox", self+"/sandbox/paystack", secret, nil)
		a.hooks = payments.NewSandboxHooks(a.store, self+"/payments/webhook", []byte(secret), cfg.MailRetryMin, a.log)
		sandbox = &transport.Sandbox{Store: a.store, Hooks: a.hooks, Secret: secret}
	}
	a.confirm = payments.NewConfirmer(p, a.store, a.engine, a.log, a.now)
	return p, sandbox
}

// startEngine starts the simulated networks and the dispatch engine, which resumes any
// unfinished work before it takes new sends.
func (a *App) startEngine(ctx context.Context) error {
	cfg := a.cfg
	simOpts := map[carriers.Network]sim.Options{}
	links := map[carriers.Network]actors.LinkOptions{}
	for _, n := range carriers.Networks() {
		simOpts[n] = sim.Options{
			Latency: cfg.SimLatency, TPS: cfg.SimTPS[n], FailureRate: cfg.SimFailureRate, ThrottleRate: cfg.SimThrottleRate,
			ReceiptDelay: cfg.SimReceiptDelay, ReceiptJitter: cfg.SimReceiptDelay / 2,
			Delivered: cfg.SimOutcomes.Delivered, Undeliverable: cfg.SimOutcomes.Undeliverable,
			Expired: cfg.SimOutcomes.Expired, Rejected: cfg.SimOutcomes.Rejected,
		}
		links[n] = actors.LinkOptions{TPS: cfg.LinkTPS[n], Window: cfg.LinkWindow}
	}
	var err error
	if a.sims, err = simlink.New(simOpts); err != nil {
		return err
	}
	a.engine, err = actors.Start(ctx, actors.Options{
		SharedSender:    cfg.SharedSenderID,
		ReceiptTimeout:  cfg.ReceiptTimeout,
		LowBalanceCents: cfg.LowBalanceCents,
		Links:           links,
	}, actors.Deps{Log: a.log, Registerer: a.registry, Store: a.store, Carriers: a.sims.Carriers()})
	if err != nil {
		return fmt.Errorf("start engine: %w", err)
	}
	a.sims.Deliver(a.engine.Receipt)
	return nil
}

// Addr is the address the API listens on (useful when configured with port 0).
func (a *App) Addr() string { return a.ln.Addr().String() }

// InternalAddr is the address of the internal listener (TUMA_METRICS_ADDR), "" when off.
func (a *App) InternalAddr() string {
	if a.iln == nil {
		return ""
	}
	return a.iln.Addr().String()
}

func (a *App) metricsURL() string {
	if a.iln != nil {
		return "http://" + listenURLHost(a.InternalAddr()) + "/metrics"
	}
	return a.cfg.PublicURL + "/metrics"
}

// Run serves until ctx is cancelled, then shuts down in order: stop taking requests and let
// in-flight ones finish, then close the stores, all within the shutdown timeout.
func (a *App) Run(ctx context.Context) error {
	serveErr := make(chan error, 2)
	go func() { serveErr <- a.http.Serve(a.ln) }()
	if a.internal != nil {
		go func() {
			if err := a.internal.Serve(a.iln); err != nil {
				serveErr <- fmt.Errorf("internal listener: %w", err)
			}
		}()
	}
	// Background workers: mail, payment reconciliation and the sandbox's webhooks. They stop
	// after the engine, so nothing they hand it is refused.
	workCtx, stopWork := context.WithCancel(context.Background())
	var work sync.WaitGroup
	work.Go(func() { a.outbox.Run(workCtx) })
	work.Go(func() { a.confirm.Reconcile(workCtx, payments.ReconcileOptions{}) })
	work.Go(func() { a.http.WatchDependencies(workCtx, 5*time.Second) })
	if a.hooks != nil {
		work.Go(func() { a.hooks.Run(workCtx) })
	}
	a.log.Info("tuma is serving",
		slog.String("api", a.cfg.PublicURL),
		slog.String("docs", a.cfg.PublicURL+"/docs"),
		slog.String("metrics", a.metricsURL()),
		slog.String("listen", a.Addr()))

	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
		err = fmt.Errorf("http server: %w", err)
	}
	a.log.Info("shutting down", slog.Duration("timeout", a.cfg.ShutdownTimeout))
	sctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	if serr := a.http.Shutdown(sctx); serr != nil {
		err = errors.Join(err, serr)
	}
	if a.internal != nil {
		if serr := a.internal.ShutdownWithContext(sctx); serr != nil {
			err = errors.Join(err, fmt.Errorf("internal listener shutdown: %w", serr))
		}
	}
	if serr := a.engine.Stop(sctx); serr != nil {
		err = errors.Join(err, fmt.Errorf("engine: %w", serr))
	}
	stopWork() // queued mail and owed webhooks wait in the database for the next start
	work.Wait()
	a.closeStores()
	a.log.Info("stopped")
	return err
}

func (a *App) closeStores() {
	if a.sims != nil {
		a.sims.Close()
	}
	if a.redis != nil {
		a.redis.Close()
	}
	if a.store != nil {
		a.store.Close()
	}
}

// derive makes a purpose-specific key from a secret, so one secret can key several uses
// without one revealing another.
func derive(secret, purpose string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// Migrate applies pending migrations and reports the versions (for `tuma migrate`).
func Migrate(ctx context.Context, cfg Config, log *slog.Logger) (from, to int32, err error) {
	st, err := persistence.Open(ctx, persistence.Options{URL: cfg.DatabaseURL, MaxConns: 2}, log)
	if err != nil {
		return 0, 0, fmt.Errorf("postgresql: %w", err)
	}
	defer st.Close()
	return st.Migrate(ctx)
}
