package api

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/auth"
)

// Lifetimes fixed by the API.
const (
	verificationLinkTTL = 48 * time.Hour
	verificationCodeTTL = 10 * time.Minute
	passwordResetTTL    = time.Hour
)

// genericEmailReply answers resend-verification and forgot-password whatever happened, so
// neither reveals whether an address has an account.
const genericEmailReply = "If an account exists for that address, we have sent it an email."

// Verification is what the email flows need from the store.
type Verification interface {
	AddVerificationLink(ctx context.Context, accountID uuid.UUID, l persistence.NewLink) error
	VerifyLink(ctx context.Context, tokenHash []byte, now time.Time) (persistence.Verified, error)
	SetVerificationCode(ctx context.Context, accountID uuid.UUID, c func(email string) persistence.NewCode) error
	VerifyCode(ctx context.Context, accountID uuid.UUID, hash []byte, now time.Time, dailyCap int) (persistence.Verified, error)
	ChangePendingEmail(ctx context.Context, accountID uuid.UUID, email string, link persistence.NewLink, code persistence.NewCode) error
	AddPasswordReset(ctx context.Context, email string, tokenHash []byte, expires time.Time, mail func(name string) persistence.Email) (bool, error)
	ResetPassword(ctx context.Context, tokenHash []byte, passwordHash string, now time.Time) (uuid.UUID, persistence.Access, error)
}

// Mailer wakes the outbox after a request queued mail.
type Mailer interface{ Wake() }

// newLink makes a verification link for an address, with its email.
func (s *Server) newLink(email, name string) (persistence.NewLink, error) {
	token, hash, err := auth.NewToken("ev_")
	if err != nil {
		return persistence.NewLink{}, err
	}
	return persistence.NewLink{TokenHash: hash, Email: email, ExpiresAt: s.Now().Add(verificationLinkTTL),
		Mail: s.Messages.VerificationLink(email, name, token, verificationLinkTTL)}, nil
}

// newCode makes a 6-digit code for an account and address.
func (s *Server) newCode(accountID uuid.UUID, email string) (persistence.NewCode, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return persistence.NewCode{}, err
	}
	code := fmt.Sprintf("%06d", n.Int64())
	return persistence.NewCode{Hash: s.codeHash(accountID, code), Email: email, ExpiresAt: s.Now().Add(verificationCodeTTL),
		Mail: s.Messages.VerificationCode(email, code, verificationCodeTTL)}, nil
}

// codeHash keys the hash of a code with a server secret: a million possible codes would
// otherwise fall to anyone who saw the table.
func (s *Server) codeHash(accountID uuid.UUID, code string) []byte {
	m := hmac.New(sha256.New, s.opts.CodeSecret)
	m.Write(accountID[:])
	m.Write([]byte(code))
	return m.Sum(nil)
}

// emailAllowed applies the per-address budget of verification and reset mail.
func (s *Server) emailAllowed(ctx context.Context, kind, address string) bool {
	return s.Limiter.Allow(ctx, "mail:"+kind+":"+address, s.opts.EmailRatePerAddr).Allowed
}

// ipAllowed applies the per-client budget of the public email endpoints.
func (s *Server) ipAllowed(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if d := s.Limiter.Allow(ctx, "mail:ip:"+s.clientIP(rc), s.opts.EmailRatePerIP); !d.Allowed {
		return tooManyRequests("too_many_requests", "too many requests from this address; try again later",
			int(math.Ceil(d.RetryAfter.Seconds())))
	}
	return nil
}

func (s *Server) verifyEmail(ctx context.Context, rc *fasthttp.RequestCtx) error {
	token := string(rc.QueryArgs().Peek("token"))
	target := func(q string) error { return seeOther(rc, withQuery(s.opts.DashboardURL, q)) }
	if token == "" {
		return target("verified=0&reason=invalid")
	}
	v, err := s.Verify.VerifyLink(ctx, auth.HashSecret(token), s.Now())
	switch {
	case errors.Is(err, persistence.ErrTokenExpired):
		return target("verified=0&reason=expired")
	case errors.Is(err, persistence.ErrTokenInvalid):
		return target("verified=0&reason=invalid")
	case err != nil:
		return err
	}
	s.bonusPaid(v)
	return target("verified=1")
}

// bonusPaid tells the account's tenant actor about a welcome bonus, so it can spend it.
func (s *Server) bonusPaid(v persistence.Verified) {
	if v.Bonus != nil {
		s.Engine.WalletChanged(*v.Bonus)
	}
}

func (s *Server) sendVerificationCode(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id := principal(rc).AccountID
	if !s.emailAllowed(ctx, "code", id.String()) {
		return tooManyRequests("too_many_requests", "a code was sent recently; check your inbox or try again later", 60)
	}
	var cerr error
	err := s.Verify.SetVerificationCode(ctx, id, func(email string) persistence.NewCode {
		var c persistence.NewCode
		c, cerr = s.newCode(id, email)
		return c
	})
	if err == nil {
		err = cerr
	}
	if errors.Is(err, persistence.ErrAlreadyVerified) {
		return problem("already_verified", "this account's email is already verified")
	}
	if err != nil {
		return err
	}
	s.Mail.Wake()
	return writeJSON(rc, http.StatusOK, struct {
		Message   string `json:"message"`
		ExpiresIn int    `json:"expires_in"`
	}{"We have emailed you a 6-digit code.", int(verificationCodeTTL.Seconds())})
}

func (s *Server) verifyCode(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := checkJSONContentType(rc); err != nil {
		return err
	}
	code, err := parseCode(rc.PostBody())
	if err != nil {
		return err
	}
	id := principal(rc).AccountID
	v, err := s.Verify.VerifyCode(ctx, id, s.codeHash(id, code), s.Now(), s.opts.CodeAttemptsPerDay)
	var (
		wrong  *persistence.WrongCodeError
		capped *persistence.CodeCapError
	)
	switch {
	case errors.As(err, &capped):
		return tooManyRequests("code_locked", "too many wrong codes for this account today; try again later",
			int(math.Ceil(capped.RetryAfter.Seconds())))
	case errors.As(err, &wrong):
		p := problem("invalid_code", "the code is wrong")
		p.Extra = map[string]any{"attempts_remaining": wrong.Remaining}
		return p
	case errors.Is(err, persistence.ErrCodeLocked):
		return tooManyRequests("code_locked", "too many wrong codes: request a new code", 1)
	case errors.Is(err, persistence.ErrCodeExpired):
		return problem("code_expired", "the code has expired: request a new one")
	case errors.Is(err, persistence.ErrNoCode):
		return problem("invalid_code", "no code has been requested for this account")
	case errors.Is(err, persistence.ErrAlreadyVerified):
		return problem("already_verified", "this account's email is already verified")
	case err != nil:
		return err
	}
	s.bonusPaid(v)
	return writeJSON(rc, http.StatusOK, struct {
		Message    string `json:"message"`
		IsVerified bool   `json:"is_verified"`
	}{"Your email is verified.", true})
}

// publicEmail reads the {"email"} body of the public email endpoints, within the client's
// budget of them.
func (s *Server) publicEmail(ctx context.Context, rc *fasthttp.RequestCtx) (string, error) {
	if err := s.authIPAllowed(ctx, rc); err != nil {
		return "", err
	}
	if err := s.ipAllowed(ctx, rc); err != nil {
		return "", err
	}
	if err := checkJSONContentType(rc); err != nil {
		return "", err
	}
	return parseEmailBody(rc.PostBody())
}

func (s *Server) resendVerification(ctx context.Context, rc *fasthttp.RequestCtx) error {
	email, err := s.publicEmail(ctx, rc)
	if err != nil {
		return err
	}
	if s.emailAllowed(ctx, "verify", email) {
		a, err := s.Accounts.AccountByEmail(ctx, email)
		switch {
		case errors.Is(err, persistence.ErrNotFound):
		case err != nil:
			return err
		case !a.Verified:
			l, err := s.newLink(a.Email, a.FullName)
			if err != nil {
				return err
			}
			if err := s.Verify.AddVerificationLink(ctx, a.ID, l); err != nil && !errors.Is(err, persistence.ErrAlreadyVerified) {
				return err
			}
			s.Mail.Wake()
		}
	}
	return writeJSON(rc, http.StatusOK, message{Message: genericEmailReply})
}

func (s *Server) pendingEmail(ctx context.Context, rc *fasthttp.RequestCtx) error {
	a, err := s.Accounts.AccountByID(ctx, principal(rc).AccountID)
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, struct {
		Email      string `json:"email"`
		IsVerified bool   `json:"is_verified"`
	}{a.Email, a.Verified})
}

func (s *Server) changePendingEmail(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := checkJSONContentType(rc); err != nil {
		return err
	}
	email, err := parseEmailBody(rc.PostBody())
	if err != nil {
		return err
	}
	id := principal(rc).AccountID
	a, err := s.Accounts.AccountByID(ctx, id)
	if err != nil {
		return err
	}
	if a.Verified {
		return problem("already_verified", "this account's email is already verified; it cannot be changed here")
	}
	if err := s.pendingEmailAllowed(ctx, id.String(), email); err != nil {
		return err
	}
	link, err := s.newLink(email, a.FullName)
	if err != nil {
		return err
	}
	code, err := s.newCode(id, email)
	if err != nil {
		return err
	}
	err = s.Verify.ChangePendingEmail(ctx, id, email, link, code)
	switch {
	case errors.Is(err, persistence.ErrAlreadyVerified):
		return problem("already_verified", "this account's email is already verified; it cannot be changed here")
	case err != nil:
		return err
	}
	s.Mail.Wake()
	return writeJSON(rc, http.StatusOK, struct {
		Email      string `json:"email"`
		IsVerified bool   `json:"is_verified"`
		Message    string `json:"message"`
	}{email, false, "We have sent a new verification link and code to " + email + "."})
}

func (s *Server) forgotPassword(ctx context.Context, rc *fasthttp.RequestCtx) error {
	email, err := s.publicEmail(ctx, rc)
	if err != nil {
		return err
	}
	if s.emailAllowed(ctx, "reset", email) {
		token, hash, err := auth.NewToken("pr_")
		if err != nil {
			return err
		}
		found, err := s.Verify.AddPasswordReset(ctx, email, hash, s.Now().Add(passwordResetTTL), func(name string) persistence.Email {
			return s.Messages.PasswordReset(email, name, token, passwordResetTTL)
		})
		if err != nil {
			return err
		}
		if found {
			s.Mail.Wake()
		}
	}
	return writeJSON(rc, http.StatusOK, message{Message: genericEmailReply})
}

func (s *Server) resetPassword(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := s.authIPAllowed(ctx, rc); err != nil {
		return err
	}
	if err := checkJSONContentType(rc); err != nil {
		return err
	}
	in, err := parseReset(rc.PostBody())
	if err != nil {
		return err
	}
	hash, err := s.Passwords.Hash(in.password)
	if err != nil {
		return err
	}
	id, acc, err := s.Verify.ResetPassword(ctx, auth.HashSecret(in.token), hash, s.Now())
	if errors.Is(err, persistence.ErrTokenInvalid) {
		return problem("invalid_token", "the reset token is invalid, used or expired: ask for a new one")
	}
	if err != nil {
		return err
	}
	// Access tokens issued before the reset stop working on every node at once.
	s.Principals.SetAccountAccess(ctx, id.String(), string(acc.Status), acc.TokenVersion)
	return writeJSON(rc, http.StatusOK, message{Message: "Your password has been changed; sign in with the new one."})
}
