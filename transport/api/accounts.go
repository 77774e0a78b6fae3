package api

import (
	"context"
	"errors"
	"math"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/auth"
)

// userJSON is the user object of the API.
type userJSON struct {
	ID           uuid.UUID  `json:"id"`
	Email        string     `json:"email"`
	FullName     string     `json:"full_name"`
	CompanyName  string     `json:"company_name"`
	Phone        string     `json:"phone"`
	BusinessType string     `json:"business_type"`
	Country      string     `json:"country"`
	IsActive     bool       `json:"is_active"`
	IsVerified   bool       `json:"is_verified"`
	Wallet       walletLite `json:"wallet"`
	CreatedAt    timestamp  `json:"created_at"`
	APIKey       string     `json:"api_key,omitempty"`        // register only
	APIKeyPrefix string     `json:"api_key_prefix,omitempty"` // register only
}

type walletLite struct {
	BalanceKES kes `json:"balance_kes"`
}

func newUserJSON(a persistence.Account) userJSON {
	return userJSON{
		ID: a.ID, Email: a.Email, FullName: a.FullName, CompanyName: a.CompanyName, Phone: a.Phone,
		BusinessType: a.BusinessType, Country: a.Country, IsActive: a.Active(), IsVerified: a.Verified,
		Wallet: walletLite{BalanceKES: kes(a.BalanceCents)}, CreatedAt: timestamp(a.CreatedAt),
	}
}

type tokenPair struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
}

func (s *Server) register(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := s.authIPAllowed(ctx, rc); err != nil {
		return err
	}
	if err := checkJSONContentType(rc); err != nil {
		return err
	}
	r, err := parseRegistration(rc.PostBody(), s.Plan)
	if err != nil {
		return err
	}
	// After validation, so a typo does not spend the budget; before the password hash.
	if err := s.signupAllowed(ctx, rc); err != nil {
		return err
	}
	na := r.account
	if na.PasswordHash, err = s.Passwords.Hash(r.password); err != nil {
		return err
	}
	key, prefix, keyHash, err := auth.NewAPIKey()
	if err != nil {
		return err
	}
	na.APIKeyHash, na.APIKeyPrefix = keyHash, prefix
	link, err := s.newLink(na.Email, na.FullName)
	if err != nil {
		return err
	}
	na.Verification = &link
	a, err := s.Accounts.CreateAccount(ctx, na)
	if err != nil {
		return err
	}
	s.Mail.Wake()
	u := newUserJSON(a)
	u.APIKey, u.APIKeyPrefix = key, prefix
	return writeJSON(rc, http.StatusCreated, u)
}

func (s *Server) login(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := s.authIPAllowed(ctx, rc); err != nil {
		return err
	}
	if err := checkJSONContentType(rc); err != nil {
		return err
	}
	in, err := parseLogin(rc.PostBody())
	if err != nil {
		return err
	}
	// Throttle before touching the password, per client and per target account, so neither
	// one address nor one account can be guessed at speed.
	if d := s.Limiter.Allow(ctx, "login:ip:"+s.clientIP(rc), s.opts.LoginRatePerIP); !d.Allowed {
		return tooManyRequests("too_many_login_attempts", "too many login attempts from this address; try again later",
			int(math.Ceil(d.RetryAfter.Seconds())))
	}
	if d := s.Limiter.Allow(ctx, "login:email:"+in.email, s.opts.LoginRatePerEmail); !d.Allowed {
		return tooManyRequests("too_many_login_attempts", "too many login attempts for this account; try again later",
			int(math.Ceil(d.RetryAfter.Seconds())))
	}
	a, err := s.Accounts.AccountByEmail(ctx, in.email)
	if err != nil && !errors.Is(err, persistence.ErrNotFound) {
		return err
	}
	if !s.Passwords.Verify(a.PasswordHash, in.password) {
		return problem("invalid_credentials", "the email or password is wrong")
	}
	if !a.Active() {
		return auth.ErrSuspended
	}
	pair, err := s.issueTokens(ctx, a, uuid.Nil)
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, pair)
}

func (s *Server) issueTokens(ctx context.Context, a persistence.Account, family uuid.UUID) (tokenPair, error) {
	access, err := s.Tokens.Issue(a.ID, a.TokenVersion)
	if err != nil {
		return tokenPair{}, err
	}
	refresh, hash, err := auth.NewRefreshToken()
	if err != nil {
		return tokenPair{}, err
	}
	if _, err := s.Accounts.CreateRefreshToken(ctx, a.ID, family, hash, s.Now().Add(s.opts.RefreshTokenTTL)); err != nil {
		return tokenPair{}, err
	}
	return tokenPair{AccessToken: access, RefreshToken: refresh, TokenType: "bearer", ExpiresIn: int(auth.AccessTokenTTL.Seconds())}, nil
}

func (s *Server) refresh(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := s.authIPAllowed(ctx, rc); err != nil {
		return err
	}
	if err := checkJSONContentType(rc); err != nil {
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
	now := s.Now()
	accountID, err := s.Accounts.RotateRefreshToken(ctx, auth.HashSecret(token), newHash, now, now.Add(s.opts.RefreshTokenTTL))
	if err != nil {
		return err
	}
	a, err := s.Accounts.AccountByID(ctx, accountID)
	if err != nil {
		return err
	}
	if !a.Active() {
		return auth.ErrSuspended
	}
	access, err := s.Tokens.Issue(accountID, a.TokenVersion)
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, tokenPair{AccessToken: access, RefreshToken: refresh, TokenType: "bearer",
		ExpiresIn: int(auth.AccessTokenTTL.Seconds())})
}

func (s *Server) me(ctx context.Context, rc *fasthttp.RequestCtx) error {
	a, err := s.Accounts.AccountByID(ctx, principal(rc).AccountID)
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, newUserJSON(a))
}

func (s *Server) updateProfile(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := checkJSONContentType(rc); err != nil {
		return err
	}
	u, err := parseProfile(rc.PostBody(), s.Plan)
	if err != nil {
		return err
	}
	a, err := s.Accounts.UpdateProfile(ctx, principal(rc).AccountID, u)
	if err != nil {
		return err
	}
	// The company name prefixes shared-sender messages: the very next send must use the new one.
	if err := s.Engine.AccountChanged(ctx, a.ID); err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, newUserJSON(a))
}

func (s *Server) changePassword(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := checkJSONContentType(rc); err != nil {
		return err
	}
	in, err := parsePasswordChange(rc.PostBody())
	if err != nil {
		return err
	}
	id := principal(rc).AccountID
	a, err := s.Accounts.AccountByID(ctx, id)
	if err != nil {
		return err
	}
	if !s.Passwords.Verify(a.PasswordHash, in.current) {
		return problem("invalid_current_password", "the current password is wrong")
	}
	hash, err := s.Passwords.Hash(in.next)
	if err != nil {
		return err
	}
	acc, err := s.Accounts.SetPassword(ctx, id, hash)
	if err != nil {
		return err
	}
	// Access tokens issued before (this caller's too) stop working on every node at once.
	s.Principals.SetAccountAccess(ctx, id.String(), string(acc.Status), acc.TokenVersion)
	return writeJSON(rc, http.StatusOK, message{Message: "password changed; every session has been signed out, so sign in again with the new password (API keys keep working)"})
}

func (s *Server) rotateAPIKey(ctx context.Context, rc *fasthttp.RequestCtx) error {
	key, prefix, hash, err := auth.NewAPIKey()
	if err != nil {
		return err
	}
	old, err := s.Accounts.RotateAPIKey(ctx, principal(rc).AccountID, hash, prefix)
	if err != nil {
		return err
	}
	if old != nil {
		s.Principals.RevokeKey(ctx, old)
	}
	return writeJSON(rc, http.StatusOK, struct {
		APIKey       string `json:"api_key"`
		APIKeyPrefix string `json:"api_key_prefix"`
	}{key, prefix})
}
