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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/actors/simlink"
	"github.com/tuma-sms/tuma/actors/smpplink"
	"github.com/tuma-sms/tuma/carriers/smpp"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/redis"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/api/sandbox"
	"github.com/tuma-sms/tuma/transport/mail"
	"github.com/tuma-sms/tuma/transport/payments"
	"github.com/tuma-sms/tuma/transport/smppserver"
	"github.com/tuma-sms/tuma/transport/webhooks"
)

// NewLogger builds the process logger the configuration asks for. Written to a LogBuffer,
// a warning or an error is written at once with everything held before it.
func NewLogger(cfg Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	if b, ok := w.(*LogBuffer); ok {
		h = flushing{h, b}
	}
	return slog.New(h)
}

// App is a node. Build it with New, then Run it.
type App struct {
	cfg      Config
	log      *slog.Logger
	registry *prometheus.Registry
	front    *api.Front // serves from the start; the full front door is attached once booted
	ln       net.Listener
	internal *fasthttp.Server // /metrics and pprof on TUMA_METRICS_ADDR; nil when unset
	iln      net.Listener
	now      func() time.Time
	ready    chan struct{} // closed once booted

	shareDatabase bool                  // WithoutNodeLock
	lock          *persistence.NodeLock // this node's hold on its database
	stopLock      func()                // stops keeping the lock and releases it
	lockLost      chan error            // the lock went to another node: stop

	// Built by boot.
	store       *persistence.Store
	redis       *redis.Client
	sims        *simlink.Set
	smpp        *smpplink.Set
	smppMetrics *smpp.Metrics
	engine      *actors.Engine
	outbox      *mail.Outbox
	confirm     *payments.Confirmer
	hooks       *sandbox.Hooks // nil unless the sandbox provider is on
	http        *api.Server
	smppServer  *smppserver.Server // nil unless TUMA_SMPP_SERVER_ADDR is set

	webhookMetrics *webhooks.Metrics
	stopWebhooks   func() // ends the webhook attempts under way (their leases lapse)
}

// Option adjusts how a node is built (tests).
type Option func(*App)

// WithClock makes the node read time from now (expiry of codes and tokens).
func WithClock(now func() time.Time) Option { return func(a *App) { a.now = now } }

// errUnreachable marks a boot failure worth retrying: a store not reachable yet.
var errUnreachable = errors.New("not reachable yet")

// ErrRestart ends Run when the node must be started again to be whole (a cluster node paused
// past TUMA_CLUSTER_PAUSE_LIMIT): main exits with ExitRestart so a supervisor restarts it.
var ErrRestart = errors.New("restart this node")

// ExitRestart is the exit status for ErrRestart (EX_TEMPFAIL).
const ExitRestart = 75

// New opens the listeners. Nothing is served until Run, and nothing else is connected yet:
// Run serves at once and boots the node behind its front.
func New(_ context.Context, cfg Config, log *slog.Logger, opts ...Option) (*App, error) {
	a := &App{cfg: cfg, log: log, registry: prometheus.NewRegistry(), now: time.Now, ready: make(chan struct{}),
		lockLost: make(chan error, 1)}
	for _, o := range opts {
		o(a)
	}
	if cfg.JWTSecretGenerated {
		log.Warn("TUMA_JWT_SECRET is unset: using a random secret, so tokens die with this process")
	}
	a.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{Namespace: "tuma"}),
	)
	var err error
	if a.ln, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		return nil, fmt.Errorf("listen on %s (TUMA_HTTP_ADDR): %w", cfg.HTTPAddr, err)
	}
	a.cfg.resolveListener(a.ln.Addr().String())
	if cfg.MetricsAddr != "" {
		if a.iln, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			a.ln.Close()
			return nil, fmt.Errorf("listen on %s (TUMA_METRICS_ADDR): %w", cfg.MetricsAddr, err)
		}
		a.internal = &fasthttp.Server{
			Handler: api.InternalHandler(a.registry, log), Name: "tuma-internal", NoDefaultServerHeader: true,
			ReadTimeout: 30 * time.Second, WriteTimeout: 2 * time.Minute, // a CPU profile takes its seconds
			IdleTimeout: 90 * time.Second, CloseOnShutdown: true,
		}
	}
	a.front = api.NewFront(cfg.MaxBodyBytes, a.registry, log)
	return a, nil
}

// Addr is the address the API listens on (useful when configured with port 0).
func (a *App) Addr() string { return a.ln.Addr().String() }

// SMPPServerAddr is the address the tenants' SMPP server listens on, "" when off.
func (a *App) SMPPServerAddr() string {
	if a.smppServer == nil {
		return ""
	}
	return a.smppServer.Addr()
}

// Ready is closed once the node has booted and takes every request.
func (a *App) Ready() <-chan struct{} { return a.ready }

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

// bootRetry bounds the pause between attempts to reach the stores while booting.
const bootRetry = 2 * time.Second

// Run serves at once (liveness, readiness with the boot stage, metrics; every other request
// 503 with Retry-After), boots the node in the background, retrying while PostgreSQL cannot be
// reached, and then serves everything until ctx is cancelled. It then shuts down in order:
// stop taking requests and let in-flight ones finish, drain the engine, close the stores, all
// within the shutdown timeout.
func (a *App) Run(ctx context.Context) error {
	serveErr := make(chan error, 2)
	go func() { serveErr <- a.front.Serve(a.ln) }()
	if a.internal != nil {
		go func() {
			if err := a.internal.Serve(a.iln); err != nil {
				serveErr <- fmt.Errorf("internal listener: %w", err)
			}
		}()
	}
	a.log.Info("tuma is listening; booting", slog.String("listen", a.Addr()))
	err := a.bootRetrying(ctx)
	if err == nil {
		err = a.startWorkers()
	}
	if err == nil {
		a.front.Attach(a.http)
		if a.smppServer != nil {
			a.smppServer.Start()
		}
		close(a.ready)
		a.log.Info("tuma is serving",
			slog.String("api", a.cfg.PublicURL),
			slog.String("docs", a.cfg.PublicURL+"/docs"),
			slog.String("metrics", a.metricsURL()),
			slog.String("listen", a.Addr()),
			slog.String("smpp", a.SMPPServerAddr()))
		select {
		case <-ctx.Done():
		case err = <-serveErr:
			err = fmt.Errorf("http server: %w", err)
		case err = <-a.lockLost:
		case <-a.engine.Lapsed():
			err = fmt.Errorf("%w: %w", ErrRestart, a.engine.ClusterHealth())
		}
	}
	if a.cfg.Faults.abruptShutdown() { // a deliberate defect: exit at once, nothing drained
		return err
	}
	a.log.Info("shutting down", slog.Duration("timeout", a.cfg.ShutdownTimeout))
	sctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	if serr := a.front.Shutdown(sctx); serr != nil {
		err = errors.Join(err, serr)
	}
	if a.smppServer != nil { // before the engine: the submits in flight are answered
		if serr := a.smppServer.Shutdown(sctx); serr != nil {
			err = errors.Join(err, serr)
		}
	}
	if a.internal != nil {
		if serr := a.internal.ShutdownWithContext(sctx); serr != nil {
			err = errors.Join(err, fmt.Errorf("internal listener shutdown: %w", serr))
		}
	}
	if a.engine != nil {
		// Its workers stop first: queued mail and owed webhooks wait in the database for the
		// next start.
		if serr := a.engine.Stop(sctx); serr != nil {
			err = errors.Join(err, fmt.Errorf("engine: %w", serr))
		}
	}
	if a.stopWebhooks != nil {
		a.stopWebhooks()
		a.stopWebhooks = nil
	}
	a.closeStores()
	a.log.Info("stopped")
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil // stopped while booting
	}
	return err
}

// bootRetrying boots, trying again while the database cannot be reached yet.
func (a *App) bootRetrying(ctx context.Context) error {
	for {
		err := a.boot(ctx)
		if err == nil || !errors.Is(err, errUnreachable) {
			return err
		}
		a.log.Warn("cannot boot yet; will retry", slog.Any("error", err), slog.Duration("retry_in", bootRetry))
		a.closeStores()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(bootRetry):
		}
	}
}

func (a *App) closeStores() {
	a.unlockNode()
	if a.sims != nil {
		a.sims.Close()
		a.sims = nil
	}
	if a.smpp != nil {
		a.smpp.Close()
		a.smpp = nil
	}
	if a.redis != nil {
		a.redis.Close()
		a.redis = nil
	}
	if a.store != nil {
		a.store.Close()
		a.store = nil
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
