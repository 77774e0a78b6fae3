// Package transport is Tuma's HTTP front door (fasthttp + fasthttp/router): routing,
// authentication, rate limits, request decoding and validation, problem+json errors, the
// OpenAPI document and the API explorer.
//
// Handlers return errors; problemFor maps them to statuses in one place. Handlers that change
// money or messages send commands to the actor engine; handlers that only read query the store.
package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/fasthttp/router"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/redis"
	"github.com/tuma-sms/tuma/transport/admission"
	"github.com/tuma-sms/tuma/transport/auth"
	"github.com/tuma-sms/tuma/transport/mail"
	"github.com/tuma-sms/tuma/transport/payments"
)

// Options configures the front door. A zero Rate turns its limit off.
type Options struct {
	PublicURL          string         // base URL clients reach us at
	DashboardURL       string         // where browser flows (verification, payments) land
	MaxBodyBytes       int            // larger bodies get 413
	RequestTimeout     time.Duration  // bounds each request's work (database, Redis, actors)
	MaxInFlight        int            // API requests served at once; more get 503 overloaded at once (0: no cap)
	ShedLatency        time.Duration  // the in-flight bound shrinks while mean latency exceeds this (0: fixed bound)
	AccessLog          bool           // log every request
	TrustedProxies     []netip.Prefix // peers whose X-Forwarded-For is believed (see clientAddr)
	AccountRate        redis.Rate     // per-account API rate limit
	LoginRatePerEmail  redis.Rate     // login attempts per email
	LoginRatePerIP     redis.Rate     // login attempts per client IP
	AuthRatePerIP      redis.Rate     // unauthenticated auth endpoints per client IP, before any hashing
	SignupRatePerIP    redis.Rate     // registrations per client IP
	CodeAttemptsPerDay int            // wrong verification codes per account in 24 h, across codes (0: no cap)
	DeliveryRate       redis.Rate     // live carrier status checks per account
	RefreshTokenTTL    time.Duration
	AdminToken         string // empty: the admin API answers 404
	CodeSecret         []byte // keys the hashes of verification codes
	CursorSecret       []byte // keys the MACs of list cursors
	Faults             Faults // deliberate defects, for the drills' own tests only
	EmailRatePerAddr   redis.Rate
	EmailRatePerIP     redis.Rate
	MetricsElsewhere   bool             // /metrics is served by the internal listener (InternalHandler), not here
	Pprof              bool             // serve /debug/pprof/* here, behind the admin token
	SharedSender       string           // the shared sender ID's name (GET /senders says it)
	SenderFees         map[string]int64 // sender ID registration fee in cents, by network (safaricom, airtel, telkom, all)
	ImportWorkers      int              // transactions a contact import merges its batches in at once (at least one)
}

// Faults are deliberate defects a drill turns on to prove it notices them. Only binaries
// built with -tags faults let the configuration set them.
type Faults struct {
	ReleaseKeys bool // an Idempotency-Key is given back after any failure, timeouts included
	LogSecrets  bool // the front door logs each request's credentials (the security drill's log scan)
	NoShed      bool // admission is off: every request is queued however many there are (the overload drill)
}

// Accounts is what the account endpoints need from the store.
type Accounts interface {
	CreateAccount(ctx context.Context, na persistence.NewAccount) (persistence.Account, error)
	AccountByID(ctx context.Context, id uuid.UUID) (persistence.Account, error)
	AccountByEmail(ctx context.Context, email string) (persistence.Account, error)
	UpdateProfile(ctx context.Context, id uuid.UUID, u persistence.ProfileUpdate) (persistence.Account, error)
	SetPassword(ctx context.Context, id uuid.UUID, hash string) (persistence.Access, error)
	RotateAPIKey(ctx context.Context, id uuid.UUID, newHash []byte, prefix string) ([]byte, error)
	SetStatus(ctx context.Context, id uuid.UUID, status persistence.AccountStatus) (persistence.Account, error)
	CreateRefreshToken(ctx context.Context, accountID, familyID uuid.UUID, hash []byte, expiresAt time.Time) (uuid.UUID, error)
	RotateRefreshToken(ctx context.Context, oldHash, newHash []byte, now, expiresAt time.Time) (uuid.UUID, error)
}

// Idempotency stores Idempotency-Key claims and responses.
type Idempotency interface {
	ClaimIdempotencyKey(ctx context.Context, k persistence.IdempotencyKey, requestHash []byte, lease time.Duration) (persistence.IdempotencyKey, *persistence.StoredResponse, error)
	SaveIdempotentBody(ctx context.Context, k persistence.IdempotencyKey, body []byte) error
	ReleaseIdempotencyKey(ctx context.Context, k persistence.IdempotencyKey) error
}

// Principals publishes credential changes to every node's cache.
type Principals interface {
	RevokeKey(ctx context.Context, hash []byte)
	SetAccountAccess(ctx context.Context, accountID, status string, tokenVersion int64)
}

// Limiter takes tokens from named buckets.
type Limiter interface {
	Allow(ctx context.Context, key string, r redis.Rate) redis.Decision
}

// Dispatcher is the actor engine, for commands that change money or messages.
type Dispatcher interface {
	Send(ctx context.Context, req actors.SendRequest) (actors.SendResult, error)
	Credit(ctx context.Context, c persistence.NewCredit) (persistence.WalletSnapshot, error)
	SetPricing(ctx context.Context, accountID uuid.UUID, tier *string, internal bool) error
	AccountChanged(ctx context.Context, accountID uuid.UUID) error
	WalletChanged(w persistence.WalletSnapshot)
	LiveStatus(ctx context.Context, network carriers.Network, providerID string) (actors.CarrierStatus, error)
	Sync(ctx context.Context, network carriers.Network, providerID string, st actors.CarrierStatus) error
	CreateCampaign(ctx context.Context, req actors.CampaignRequest) (actors.SendResult, error)
	CancelCampaign(ctx context.Context, accountID, campaignID uuid.UUID) error
}

// Queries reads the store directly (reads do not go through actors).
type Queries interface {
	ApprovedSender(ctx context.Context, accountID uuid.UUID, idOrName string) (persistence.Sender, error)
	ListMessages(ctx context.Context, accountID uuid.UUID, f persistence.MessageFilter, p persistence.Page) ([]persistence.Message, int64, error)
	MessageByID(ctx context.Context, accountID, id uuid.UUID) (persistence.Message, error)
	MessageByProviderID(ctx context.Context, accountID uuid.UUID, providerID string) (persistence.Message, error)
	MessageCounts(ctx context.Context, accountID uuid.UUID) (persistence.MessageCounts, error)
	JobByID(ctx context.Context, accountID, id uuid.UUID) (persistence.Job, error)
	Wallet(ctx context.Context, accountID uuid.UUID) (persistence.Wallet, error)
	ListTransactions(ctx context.Context, accountID uuid.UUID, txType persistence.TransactionType, p persistence.Page) ([]persistence.Transaction, int64, error)
	TransactionByID(ctx context.Context, accountID, id uuid.UUID) (persistence.Transaction, error)
	Notifications(ctx context.Context, accountID uuid.UUID, limit int) ([]persistence.Notification, error)
	UnreadCount(ctx context.Context, accountID uuid.UUID) (int64, error)
	MarkRead(ctx context.Context, accountID, id uuid.UUID) (persistence.Notification, error)
	MarkAllRead(ctx context.Context, accountID uuid.UUID) (int64, error)
	Broadcast(ctx context.Context, ids []uuid.UUID, n persistence.NewNotification) (int64, error)
}

// Check is one dependency /readyz reports on. A failing critical check makes the node unready;
// a failing non-critical one makes it degraded.
type Check struct {
	Name     string
	Critical bool
	Probe    func(ctx context.Context) error
}

// Deps are the collaborators the front door is built from.
type Deps struct {
	Log         *slog.Logger
	Registerer  prometheus.Registerer
	Gatherer    prometheus.Gatherer
	Accounts    Accounts
	Idempotency Idempotency
	Auth        *auth.Authenticator
	Passwords   *auth.Passwords
	Tokens      *auth.Tokens
	Principals  Principals
	Limiter     Limiter
	Checks      []Check
	Recovery    func() any     // the engine's progress recovering earlier work, shown by /readyz
	Sims        Simulators     // the simulated networks; nil unless TUMA_CARRIERS=sim
	Plan        *carriers.Plan // Kenyan numbering plan, for phone fields
	Engine      Dispatcher
	Queries     Queries
	Verify      Verification
	Mail        Mailer
	Messages    mail.Messages
	Now         func() time.Time

	Provider       PaymentProvider  // starts checkouts (Paystack, or the sandbox through the same client)
	Confirmer      PaymentConfirmer // settles payments on the provider's word
	PaymentStore   Payments
	WebhookSchemes payments.Schemes // signature schemes a payment webhook may use
	Sandbox        *Sandbox         // the built-in sandbox provider; nil when another is used

	Senders   Senders   // sender ID applications
	Documents Documents // where their files are kept
	Contacts  Contacts  // address books
	Campaigns Campaigns // campaigns to groups
	Reports   Reports   // spend and campaign results
}

// Server is the HTTP front door. Its collaborators are named here one by one (set from Deps
// by New), so a reader sees what the handlers use.
type Server struct {
	opts    Options
	router  *router.Router
	metrics *httpMetrics
	routes  []Route
	reqIDs  *requestIDs
	admit   *admission.Controller
	uploads []uploadRoute // routes whose bodies are streamed (handleUpload)
	// staticMethods are the methods of each path without parameters, "GET, POST"; set once
	// every route is registered.
	staticMethods map[string]string

	// Logging, metrics, operations.
	Log        *slog.Logger
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	Checks     []Check
	Recovery   func() any
	Sims       Simulators

	// Accounts and authentication.
	Accounts    Accounts
	Auth        *auth.Authenticator
	Passwords   *auth.Passwords
	Tokens      *auth.Tokens
	Principals  Principals
	Verify      Verification
	Mail        Mailer
	Messages    mail.Messages
	Now         func() time.Time
	Limiter     Limiter
	Idempotency Idempotency

	// Sending and reading.
	Plan    *carriers.Plan
	Engine  Dispatcher
	Queries Queries

	// Sender IDs.
	Senders   Senders
	Documents Documents

	// Contacts and campaigns.
	Contacts  Contacts
	Campaigns Campaigns
	Reports   Reports

	// Payments.
	Provider       PaymentProvider
	Confirmer      PaymentConfirmer
	PaymentStore   Payments
	WebhookSchemes payments.Schemes
	Sandbox        *Sandbox
}

// Route is one registered method and path template.
type Route struct {
	Method string
	Path   string
}

// New builds the server and registers every route.
func New(opts Options, deps Deps) (*Server, error) {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 30 * time.Second
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 4 << 20
	}
	admit := admission.New(opts.MaxInFlight, opts.ShedLatency)
	if opts.Faults.NoShed {
		admit = admission.New(0, 0)
	}
	m, err := newHTTPMetrics(deps.Registerer, admit.Bound)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, router: router.New(), metrics: m, reqIDs: newRequestIDs(), admit: admit,
		Log:            deps.Log,
		Registerer:     deps.Registerer,
		Gatherer:       deps.Gatherer,
		Accounts:       deps.Accounts,
		Idempotency:    deps.Idempotency,
		Auth:           deps.Auth,
		Passwords:      deps.Passwords,
		Tokens:         deps.Tokens,
		Principals:     deps.Principals,
		Limiter:        deps.Limiter,
		Checks:         deps.Checks,
		Recovery:       deps.Recovery,
		Sims:           deps.Sims,
		Plan:           deps.Plan,
		Engine:         deps.Engine,
		Queries:        deps.Queries,
		Verify:         deps.Verify,
		Mail:           deps.Mail,
		Messages:       deps.Messages,
		Now:            deps.Now,
		Provider:       deps.Provider,
		Confirmer:      deps.Confirmer,
		PaymentStore:   deps.PaymentStore,
		WebhookSchemes: deps.WebhookSchemes,
		Sandbox:        deps.Sandbox,
		Senders:        deps.Senders, Documents: deps.Documents, Contacts: deps.Contacts, Campaigns: deps.Campaigns, Reports: deps.Reports}
	s.router.RedirectTrailingSlash = false
	s.router.RedirectFixedPath = false
	s.router.NotFound = s.wrap("", "unmatched", public, func(context.Context, *fasthttp.RequestCtx) error {
		return notFound("no route matches this path")
	})
	s.router.MethodNotAllowed = s.wrap("", "unmatched", public, func(_ context.Context, rc *fasthttp.RequestCtx) error {
		return problem("method_not_allowed", fmt.Sprintf("%s is not allowed here; allowed: %s", rc.Method(), rc.Response.Header.Peek("Allow")))
	})
	s.registerRoutes()
	s.staticMethods = map[string]string{}
	for _, r := range s.routes {
		if !strings.Contains(r.Path, "{") {
			if m := s.staticMethods[r.Path]; m != "" {
				s.staticMethods[r.Path] = m + ", " + r.Method
			} else {
				s.staticMethods[r.Path] = r.Method
			}
		}
	}
	return s, nil
}

// Handler is the complete request handler, for in-process tests and benchmarks.
func (s *Server) Handler() fasthttp.RequestHandler { return s.router.Handler }

// Routes lists every registered route.
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

type fasthttpLogger struct{ log *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.log.Debug("fasthttp: " + fmt.Sprintf(format, args...))
}
