// Package accounts is the account endpoints: registration, sign-in and sessions, the profile,
// the password and the API key, the operators' suspension of an account, and the email flows
// (verification by link or code, a corrected address, password reset).
package accounts

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/redis"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/auth"
	"github.com/tuma-sms/tuma/transport/mail"
)

// Options configure both groups of the package. A zero Rate turns its limit off.
type Options struct {
	DashboardURL       string      // where the verification link's browser lands
	Proxies            api.Proxies // who a request is from, for the per-address budgets
	LoginRatePerEmail  redis.Rate  // login attempts per email
	LoginRatePerIP     redis.Rate  // login attempts per client IP
	AuthRatePerIP      redis.Rate  // unauthenticated auth endpoints per client IP, before any hashing
	SignupRatePerIP    redis.Rate  // registrations per client IP
	EmailRatePerAddr   redis.Rate  // verification and reset mail per address (and per account for codes)
	EmailRatePerIP     redis.Rate  // the public email endpoints per client IP
	CodeAttemptsPerDay int         // wrong verification codes per account in 24 h, across codes (0: no cap)
	CodeSecret         []byte      // keys the hashes of verification codes
	RefreshTokenTTL    time.Duration
}

// Store is what the account endpoints need from the store.
type Store interface {
	CreateAccount(ctx context.Context, na persistence.NewAccount) (persistence.Account, error)
	AccountByID(ctx context.Context, id uuid.UUID) (persistence.Account, error)
	AccountByEmail(ctx context.Context, email string) (persistence.Account, error)
	UpdateProfile(ctx context.Context, id uuid.UUID, u persistence.ProfileUpdate) (persistence.Account, error)
	SetPassword(ctx context.Context, id uuid.UUID, hash string) (persistence.Access, error)
	RotateAPIKey(ctx context.Context, id uuid.UUID, newHash []byte, prefix string) ([]byte, error)
	SetStatus(ctx context.Context, id uuid.UUID, status persistence.AccountStatus) (persistence.Account, error)
	CreateRefreshToken(ctx context.Context, accountID, familyID uuid.UUID, hash []byte, expiresAt time.Time, version int64) (uuid.UUID, error)
	RotateRefreshToken(ctx context.Context, oldHash, newHash []byte, now, expiresAt time.Time) (uuid.UUID, error)
}

// Passwords hashes and checks passwords (auth.Passwords).
type Passwords interface {
	Hash(password string) (string, error)
	Verify(hash, password string) bool
}

// Tokens issues access tokens (auth.Tokens).
type Tokens interface {
	Issue(accountID uuid.UUID, tokenVersion int64) (string, error)
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

// Engine is told of what changes an account's sending or spending.
type Engine interface {
	AccountChanged(ctx context.Context, accountID uuid.UUID) error
	WalletChanged(w persistence.WalletSnapshot)
}

// Mailer wakes the outbox after a request queued mail.
type Mailer interface{ Wake() }

// Deps are the collaborators of the account endpoints.
type Deps struct {
	Store      Store
	Passwords  Passwords
	Tokens     Tokens
	Principals Principals
	Limiter    Limiter
	Engine     Engine
	Mail       Mailer
	Messages   mail.Messages // the verification link's email
	Plan       *carriers.Plan
	Now        func() time.Time
}

// Handler serves registration, sessions, the profile and credentials.
type Handler struct {
	opts       Options
	store      Store
	passwords  Passwords
	tokens     Tokens
	principals Principals
	budget     budget
	engine     Engine
	mail       Mailer
	links      links
	plan       *carriers.Plan
	now        func() time.Time
}

// New returns the account endpoints.
func New(opts Options, d Deps) *Handler {
	now := orNow(d.Now)
	return &Handler{opts: opts, store: d.Store, passwords: d.Passwords, tokens: d.Tokens, principals: d.Principals,
		budget: budget{opts: opts, limiter: d.Limiter}, engine: d.Engine, mail: d.Mail,
		links: links{messages: d.Messages, now: now}, plan: d.Plan, now: now}
}

// Register adds the routes.
func (h *Handler) Register(r *api.Router) {
	r.Handle("POST", "/auth/register", api.Public, h.register)
	r.Handle("POST", "/auth/login", api.Public, h.login)
	r.Handle("POST", "/auth/refresh", api.Public, h.refresh)
	r.Handle("GET", "/auth/me", api.Account, h.me)
	r.Handle("PATCH", "/auth/profile", api.Account, h.updateProfile)
	r.Handle("PATCH", "/auth/change-password", api.Account, h.changePassword)
	r.Handle("POST", "/auth/rotate-api-key", api.Account, h.rotateAPIKey)
	r.Handle("POST", "/admin/accounts/{id}/suspend", api.Operator, h.setStatus(persistence.StatusSuspended))
	r.Handle("POST", "/admin/accounts/{id}/reactivate", api.Operator, h.setStatus(persistence.StatusActive))
}

func orNow(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}

// userJSON is the user object of the API.
type userJSON struct {
	ID           uuid.UUID     `json:"id"`
	Email        string        `json:"email"`
	FullName     string        `json:"full_name"`
	CompanyName  string        `json:"company_name"`
	Phone        string        `json:"phone"`
	BusinessType string        `json:"business_type"`
	Country      string        `json:"country"`
	IsActive     bool          `json:"is_active"`
	IsVerified   bool          `json:"is_verified"`
	Wallet       walletLite    `json:"wallet"`
	OptOutText   string        `json:"opt_out_text"` // appended to promotional messages
	QuietHours   *quietJSON    `json:"quiet_hours"`  // when promotional messages wait; null: never
	CreatedAt    api.Timestamp `json:"created_at"`
	APIKey       string        `json:"api_key,omitempty"`        // register only
	APIKeyPrefix string        `json:"api_key_prefix,omitempty"` // register only
}

type quietJSON struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

type walletLite struct {
	BalanceKES api.KES `json:"balance_kes"`
}

func newUserJSON(a persistence.Account) userJSON {
	return userJSON{
		ID: a.ID, Email: a.Email, FullName: a.FullName, CompanyName: a.CompanyName, Phone: a.Phone,
		BusinessType: a.BusinessType, Country: a.Country, IsActive: a.Active(), IsVerified: a.Verified,
		Wallet: walletLite{BalanceKES: api.KES(a.BalanceCents)}, CreatedAt: api.Timestamp(a.CreatedAt),
		OptOutText: a.OptOutText, QuietHours: newQuietJSON(a.Quiet),
	}
}

func newQuietJSON(q *persistence.QuietHours) *quietJSON {
	if q == nil {
		return nil
	}
	return &quietJSON{Start: persistence.FormatClock(q.Start), End: persistence.FormatClock(q.End)}
}

type tokenPair struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
}

func (h *Handler) register(ctx context.Context, rc *fasthttp.RequestCtx) error {
	ip := h.opts.Proxies.ClientIP(rc)
	if err := h.budget.authIP(ctx, ip); err != nil {
		return err
	}
	if err := api.CheckJSON(rc); err != nil {
		return err
	}
	var in Registration
	if err := api.ParseJSON(rc.PostBody(), &in); err != nil {
		return err
	}
	r, err := h.createAccount(ctx, ip, in)
	if err != nil {
		return err
	}
	u := newUserJSON(r.Account)
	u.APIKey, u.APIKeyPrefix = r.APIKey, r.APIKeyPrefix
	return api.WriteJSON(rc, http.StatusCreated, u)
}

// Registered is a new account, with its API key (shown this once: only its hash is kept).
type Registered struct {
	Account      persistence.Account
	APIKey       string
	APIKeyPrefix string
}

// SignUp registers an account for a client at ip, within the per-address budgets, and
// mails its verification link. Invalid fields are a 422 problem naming the API's fields.
func (h *Handler) SignUp(ctx context.Context, ip string, in Registration) (Registered, error) {
	if err := h.budget.authIP(ctx, ip); err != nil {
		return Registered{}, err
	}
	return h.createAccount(ctx, ip, in)
}

// createAccount is SignUp once the client's request budget is spent.
func (h *Handler) createAccount(ctx context.Context, ip string, in Registration) (Registered, error) {
	r, err := in.check(h.plan)
	if err != nil {
		return Registered{}, err
	}
	// After validation, so a typo does not spend the budget; before the password hash.
	if err := h.budget.signup(ctx, ip); err != nil {
		return Registered{}, err
	}
	na := r.account
	if na.PasswordHash, err = h.passwords.Hash(r.password); err != nil {
		return Registered{}, err
	}
	key, prefix, keyHash, err := auth.NewAPIKey()
	if err != nil {
		return Registered{}, err
	}
	na.APIKeyHash, na.APIKeyPrefix = keyHash, prefix
	link, err := h.links.newLink(na.Email, na.FullName)
	if err != nil {
		return Registered{}, err
	}
	na.Verification = &link
	a, err := h.store.CreateAccount(ctx, na)
	if err != nil {
		return Registered{}, err
	}
	h.mail.Wake()
	return Registered{Account: a, APIKey: key, APIKeyPrefix: prefix}, nil
}

func (h *Handler) login(ctx context.Context, rc *fasthttp.RequestCtx) error {
	ip := h.opts.Proxies.ClientIP(rc)
	if err := h.budget.authIP(ctx, ip); err != nil {
		return err
	}
	if err := api.CheckJSON(rc); err != nil {
		return err
	}
	var in Credentials
	if err := api.ParseJSON(rc.PostBody(), &in); err != nil {
		return err
	}
	a, err := h.authenticate(ctx, ip, in)
	if err != nil {
		return err
	}
	pair, err := h.issueTokens(ctx, a, uuid.Nil)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, pair)
}

// SignIn checks the credentials of a client at ip within the login budgets (per address and
// per account): the account when they are right and it is active, else a 401
// invalid_credentials or 403 account_suspended problem.
func (h *Handler) SignIn(ctx context.Context, ip string, in Credentials) (persistence.Account, error) {
	if err := h.budget.authIP(ctx, ip); err != nil {
		return persistence.Account{}, err
	}
	return h.authenticate(ctx, ip, in)
}

// authenticate is SignIn once the client's request budget is spent.
func (h *Handler) authenticate(ctx context.Context, ip string, in Credentials) (persistence.Account, error) {
	c, err := in.check()
	if err != nil {
		return persistence.Account{}, err
	}
	if err := h.budget.login(ctx, ip, c.email); err != nil {
		return persistence.Account{}, err
	}
	a, err := h.store.AccountByEmail(ctx, c.email)
	if err != nil && !errors.Is(err, persistence.ErrNotFound) {
		return persistence.Account{}, err
	}
	if !h.passwords.Verify(a.PasswordHash, c.password) {
		return persistence.Account{}, api.NewProblem("invalid_credentials", "the email or password is wrong")
	}
	if !a.Active() {
		return persistence.Account{}, auth.ErrSuspended
	}
	return a, nil
}

func (h *Handler) issueTokens(ctx context.Context, a persistence.Account, family uuid.UUID) (tokenPair, error) {
	access, err := h.tokens.Issue(a.ID, a.TokenVersion)
	if err != nil {
		return tokenPair{}, err
	}
	refresh, hash, err := auth.NewRefreshToken()
	if err != nil {
		return tokenPair{}, err
	}
	_, err = h.store.CreateRefreshToken(ctx, a.ID, family, hash, h.now().Add(h.opts.RefreshTokenTTL), a.TokenVersion)
	if errors.Is(err, persistence.ErrTokenInvalid) {
		// The password changed while this sign-in checked the old one.
		return tokenPair{}, api.NewProblem("invalid_credentials", "the email or password is wrong")
	}
	if err != nil {
		return tokenPair{}, err
	}
	return tokenPair{AccessToken: access, RefreshToken: refresh, TokenType: "bearer", ExpiresIn: int(auth.AccessTokenTTL.Seconds())}, nil
}

func (h *Handler) refresh(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := h.budget.authIP(ctx, h.opts.Proxies.ClientIP(rc)); err != nil {
		return err
	}
	if err := api.CheckJSON(rc); err != nil {
		return err
	}
	token, err := parseRefresh(rc.PostBody())
	if err != nil {
		return err
	}
	refresh, newHash, err := auth.NewRefreshToken()
	if err != nil {
		return err
	}
	now := h.now()
	accountID, err := h.store.RotateRefreshToken(ctx, auth.HashSecret(token), newHash, now, now.Add(h.opts.RefreshTokenTTL))
	if err != nil {
		return err
	}
	a, err := h.store.AccountByID(ctx, accountID)
	if err != nil {
		return err
	}
	if !a.Active() {
		return auth.ErrSuspended
	}
	access, err := h.tokens.Issue(accountID, a.TokenVersion)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, tokenPair{AccessToken: access, RefreshToken: refresh, TokenType: "bearer",
		ExpiresIn: int(auth.AccessTokenTTL.Seconds())})
}

func (h *Handler) me(ctx context.Context, rc *fasthttp.RequestCtx) error {
	a, err := h.store.AccountByID(ctx, api.Principal(rc).AccountID)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, newUserJSON(a))
}

func (h *Handler) updateProfile(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := api.CheckJSON(rc); err != nil {
		return err
	}
	u, err := parseProfile(rc.PostBody(), h.plan)
	if err != nil {
		return err
	}
	a, err := h.saveProfile(ctx, api.Principal(rc).AccountID, u)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, newUserJSON(a))
}

// UpdateProfile changes the account's profile as PATCH /auth/profile does (the Settings page),
// and returns the account as it is now. Invalid fields are a 422 problem naming the API's
// fields ("quiet_hours.start").
func (h *Handler) UpdateProfile(ctx context.Context, accountID uuid.UUID, in Profile) (persistence.Account, error) {
	var fe api.FieldErrors
	u, err := in.check(&fe, h.plan)
	if err != nil {
		return persistence.Account{}, err
	}
	return h.saveProfile(ctx, accountID, u)
}

func (h *Handler) saveProfile(ctx context.Context, accountID uuid.UUID, u persistence.ProfileUpdate) (persistence.Account, error) {
	a, err := h.store.UpdateProfile(ctx, accountID, u)
	if err != nil {
		return persistence.Account{}, err
	}
	// The company name prefixes shared-sender messages, and the opt-out text and quiet hours
	// shape promotional ones: the very next send must use the new values.
	if err := h.engine.AccountChanged(ctx, a.ID); err != nil {
		return persistence.Account{}, err
	}
	return a, nil
}

func (h *Handler) changePassword(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := api.CheckJSON(rc); err != nil {
		return err
	}
	in, err := parsePasswordChange(rc.PostBody())
	if err != nil {
		return err
	}
	if err := h.ChangePassword(ctx, api.Principal(rc).AccountID, in.current, in.next); err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, api.Message{Message: "password changed; every session has been signed out, so sign in again with the new password (API keys keep working)"})
}

// ChangePassword is PATCH /auth/change-password's operation for the dashboard's form: the
// same rules and errors (new_password's beside it, a wrong current password 400
// invalid_current_password), and every session and access token ends with it.
func (h *Handler) ChangePassword(ctx context.Context, accountID uuid.UUID, current, next string) error {
	if err := (passwordChange{current: current, next: next}).check(); err != nil {
		return err
	}
	a, err := h.store.AccountByID(ctx, accountID)
	if err != nil {
		return err
	}
	if !h.passwords.Verify(a.PasswordHash, current) {
		return api.NewProblem("invalid_current_password", "the current password is wrong")
	}
	hash, err := h.passwords.Hash(next)
	if err != nil {
		return err
	}
	acc, err := h.store.SetPassword(ctx, accountID, hash)
	if err != nil {
		return err
	}
	// Access tokens issued before (this caller's too) stop working on every node at once.
	h.principals.SetAccountAccess(ctx, accountID.String(), string(acc.Status), acc.TokenVersion)
	return nil
}

func (h *Handler) rotateAPIKey(ctx context.Context, rc *fasthttp.RequestCtx) error {
	k, err := h.RotateAPIKey(ctx, api.Principal(rc).AccountID)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, struct {
		APIKey       string `json:"api_key"`
		APIKeyPrefix string `json:"api_key_prefix"`
	}{k.Key, k.Prefix})
}

// NewKey is a key just made: Key is shown once and never stored.
type NewKey struct {
	Key, Prefix string
}

// RotateAPIKey replaces the account's API key (POST /auth/rotate-api-key and the Developers
// page): the old key is refused at once on every node.
func (h *Handler) RotateAPIKey(ctx context.Context, accountID uuid.UUID) (NewKey, error) {
	key, prefix, hash, err := auth.NewAPIKey()
	if err != nil {
		return NewKey{}, err
	}
	old, err := h.store.RotateAPIKey(ctx, accountID, hash, prefix)
	if err != nil {
		return NewKey{}, err
	}
	if old != nil {
		h.principals.RevokeKey(ctx, old)
	}
	return NewKey{Key: key, Prefix: prefix}, nil
}

// adminAccountJSON is the operator's view of an account.
type adminAccountJSON struct {
	userJSON
	Status persistence.AccountStatus `json:"status"`
}

// setStatus is the operators' suspension (or reactivation) of an account.
func (h *Handler) setStatus(status persistence.AccountStatus) api.Handler {
	return func(ctx context.Context, rc *fasthttp.RequestCtx) error {
		id, err := api.PathID(rc, "id")
		if err != nil {
			return err
		}
		a, err := h.store.SetStatus(ctx, id, status)
		if err != nil {
			return err
		}
		// Every node's cache learns at once, so the account's keys and tokens stop (or start)
		// working everywhere on the next request.
		h.principals.SetAccountAccess(ctx, id.String(), string(a.Status), a.TokenVersion)
		return api.WriteJSON(rc, http.StatusOK, adminAccountJSON{userJSON: newUserJSON(a), Status: a.Status})
	}
}
