package accounts

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/auth"
	"github.com/tuma-sms/tuma/transport/mail"
)

// Lifetimes fixed by the API.
const (
	verificationLinkTTL = 48 * time.Hour
	verificationCodeTTL = 10 * time.Minute
	passwordResetTTL    = time.Hour
)

// GenericEmailReply answers resend-verification and forgot-password whatever happened, so
// neither reveals whether an address has an account.
const GenericEmailReply = "If an account exists for that address, we have sent it an email."

// VerificationStore is what the email flows need from the store.
type VerificationStore interface {
	AccountByID(ctx context.Context, id uuid.UUID) (persistence.Account, error)
	AccountByEmail(ctx context.Context, email string) (persistence.Account, error)
	AddVerificationLink(ctx context.Context, accountID uuid.UUID, l persistence.NewLink) error
	VerifyLink(ctx context.Context, tokenHash []byte, now time.Time) (persistence.Verified, error)
	SetVerificationCode(ctx context.Context, accountID uuid.UUID, c func(email string) persistence.NewCode) error
	VerifyCode(ctx context.Context, accountID uuid.UUID, hash []byte, now time.Time, dailyCap int) (persistence.Verified, error)
	ChangePendingEmail(ctx context.Context, accountID uuid.UUID, email string, link persistence.NewLink, code persistence.NewCode) error
	AddPasswordReset(ctx context.Context, email string, tokenHash []byte, expires time.Time, mail func(name string) persistence.Email) (bool, error)
	ResetPassword(ctx context.Context, tokenHash []byte, passwordHash string, now time.Time) (uuid.UUID, persistence.Access, error)
}

// VerificationDeps are the collaborators of the email flows.
type VerificationDeps struct {
	Store      VerificationStore
	Passwords  Passwords
	Principals Principals
	Limiter    Limiter
	Engine     Engine
	Mail       Mailer
	Messages   mail.Messages // the emails' texts
	Now        func() time.Time
}

// Verification serves the email flows: verification by link or code, a corrected address,
// password reset.
type Verification struct {
	opts       Options
	store      VerificationStore
	passwords  Passwords
	principals Principals
	budget     budget
	engine     Engine
	mail       Mailer
	links      links
	now        func() time.Time
}

// NewVerification returns the email flows.
func NewVerification(opts Options, d VerificationDeps) *Verification {
	now := orNow(d.Now)
	return &Verification{opts: opts, store: d.Store, passwords: d.Passwords, principals: d.Principals,
		budget: budget{opts: opts, limiter: d.Limiter}, engine: d.Engine, mail: d.Mail,
		links: links{messages: d.Messages, now: now}, now: now}
}

// Register adds the routes.
func (v *Verification) Register(r *api.Router) {
	r.Handle("GET", "/auth/verify-email", api.Public, v.verifyEmail)
	r.Handle("POST", "/auth/send-verification-code", api.Account, v.sendVerificationCode)
	r.Handle("POST", "/auth/verify-code", api.Account, v.verifyCode)
	r.Handle("POST", "/auth/resend-verification", api.Public, v.mailsReply(v.resend))
	r.Handle("GET", "/auth/pending-email", api.Account, v.pendingEmail)
	r.Handle("PATCH", "/auth/pending-email", api.Account, v.changePendingEmail)
	r.Handle("POST", "/auth/forgot-password", api.Public, v.mailsReply(v.forgot))
	r.Handle("POST", "/auth/reset-password", api.Public, v.resetPassword)
}

// links makes verification links and codes, with their emails.
type links struct {
	messages mail.Messages
	now      func() time.Time
}

// newLink makes a verification link for an address, with its email.
func (l links) newLink(email, name string) (persistence.NewLink, error) {
	token, hash, err := auth.NewToken("ev_")
	if err != nil {
		return persistence.NewLink{}, err
	}
	return persistence.NewLink{TokenHash: hash, Email: email, ExpiresAt: l.now().Add(verificationLinkTTL),
		Mail: l.messages.VerificationLink(email, name, token, verificationLinkTTL)}, nil
}

// newCode makes a 6-digit code for an account and address.
func (v *Verification) newCode(accountID uuid.UUID, email string) (persistence.NewCode, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return persistence.NewCode{}, err
	}
	code := fmt.Sprintf("%06d", n.Int64())
	return persistence.NewCode{Hash: v.codeHash(accountID, code), Email: email, ExpiresAt: v.now().Add(verificationCodeTTL),
		Mail: v.links.messages.VerificationCode(email, code, verificationCodeTTL)}, nil
}

// codeHash keys the hash of a code with a server secret: a million possible codes would
// otherwise fall to anyone who saw the table.
func (v *Verification) codeHash(accountID uuid.UUID, code string) []byte {
	m := hmac.New(sha256.New, v.opts.CodeSecret)
	m.Write(accountID[:])
	m.Write([]byte(code))
	return m.Sum(nil)
}

func (v *Verification) verifyEmail(ctx context.Context, rc *fasthttp.RequestCtx) error {
	token := string(rc.QueryArgs().Peek("token"))
	target := func(q string) error { return api.SeeOther(rc, api.WithQuery(v.opts.DashboardURL, q)) }
	if token == "" {
		return target("verified=0&reason=invalid")
	}
	ver, err := v.store.VerifyLink(ctx, auth.HashSecret(token), v.now())
	switch {
	case errors.Is(err, persistence.ErrTokenExpired):
		return target("verified=0&reason=expired")
	case errors.Is(err, persistence.ErrTokenInvalid):
		return target("verified=0&reason=invalid")
	case err != nil:
		return err
	}
	v.bonusPaid(ver)
	return target("verified=1")
}

// bonusPaid tells the account's tenant actor about a welcome bonus, so it can spend it.
func (v *Verification) bonusPaid(ver persistence.Verified) {
	if ver.Bonus != nil {
		v.engine.WalletChanged(*ver.Bonus)
	}
}

func (v *Verification) sendVerificationCode(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := v.SendCode(ctx, api.Principal(rc).AccountID); err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, struct {
		Message   string `json:"message"`
		ExpiresIn int    `json:"expires_in"`
	}{CodeSentMessage, int(verificationCodeTTL.Seconds())})
}

// CodeSentMessage is what a person is told once a code is on its way.
const CodeSentMessage = "We have emailed you a 6-digit code."

// SendCode mails the account a fresh 6-digit verification code, within its budget of code
// mails (429 too_many_requests); a verified account gets 409 already_verified.
func (v *Verification) SendCode(ctx context.Context, id uuid.UUID) error {
	// A verified account is told so before the budget is spent: it is sent nothing (after a
	// few asks it was told "a code was sent recently" instead).
	if a, err := v.store.AccountByID(ctx, id); err != nil {
		return err
	} else if a.Verified {
		return alreadyVerified()
	}
	if !v.budget.mail(ctx, "code", id.String()) {
		return api.TooManyRequests("too_many_requests", "a code was sent recently; check your inbox or try again later", time.Minute)
	}
	var cerr error
	err := v.store.SetVerificationCode(ctx, id, func(email string) persistence.NewCode {
		var c persistence.NewCode
		c, cerr = v.newCode(id, email)
		return c
	})
	if err == nil {
		err = cerr
	}
	if errors.Is(err, persistence.ErrAlreadyVerified) {
		return alreadyVerified()
	}
	if err != nil {
		return err
	}
	v.mail.Wake()
	return nil
}

func alreadyVerified() error {
	return api.NewProblem("already_verified", "this account's email is already verified")
}

func (v *Verification) verifyCode(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := api.CheckJSON(rc); err != nil {
		return err
	}
	var in codeBody
	if err := api.ParseJSON(rc.PostBody(), &in); err != nil {
		return err
	}
	if err := v.VerifyCode(ctx, api.Principal(rc).AccountID, in.Code); err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, struct {
		Message    string `json:"message"`
		IsVerified bool   `json:"is_verified"`
	}{"Your email is verified.", true})
}

// VerifyCode verifies the account's email by the code it was mailed: 422 when it is not six
// digits; 400 invalid_code (with attempts_remaining) or code_expired; 429 code_locked after
// too many wrong ones; 409 already_verified.
func (v *Verification) VerifyCode(ctx context.Context, id uuid.UUID, code string) error {
	code, err := checkCode(code)
	if err != nil {
		return err
	}
	ver, err := v.store.VerifyCode(ctx, id, v.codeHash(id, code), v.now(), v.opts.CodeAttemptsPerDay)
	var (
		wrong  *persistence.WrongCodeError
		capped *persistence.CodeCapError
	)
	switch {
	case errors.As(err, &capped):
		return api.TooManyRequests("code_locked", "too many wrong codes for this account today; try again later", capped.RetryAfter)
	case errors.As(err, &wrong):
		p := api.NewProblem("invalid_code", "the code is wrong")
		p.Extra = map[string]any{"attempts_remaining": wrong.Remaining}
		return p
	case errors.Is(err, persistence.ErrCodeLocked):
		return api.TooManyRequests("code_locked", "too many wrong codes: request a new code", time.Second)
	case errors.Is(err, persistence.ErrCodeExpired):
		return api.NewProblem("code_expired", "the code has expired: request a new one")
	case errors.Is(err, persistence.ErrNoCode):
		return api.NewProblem("invalid_code", "no code has been requested for this account")
	case errors.Is(err, persistence.ErrAlreadyVerified):
		return api.NewProblem("already_verified", "this account's email is already verified")
	case err != nil:
		return err
	}
	v.bonusPaid(ver)
	return nil
}

// publicEmail reads the {"email"} body of the public email endpoints, within the client's
// budget of them.
func (v *Verification) publicEmail(ctx context.Context, rc *fasthttp.RequestCtx) (ip, email string, err error) {
	ip = v.opts.Proxies.ClientIP(rc)
	if err := v.publicBudget(ctx, ip); err != nil {
		return "", "", err
	}
	if err := api.CheckJSON(rc); err != nil {
		return "", "", err
	}
	var in emailBody
	if err := api.ParseJSON(rc.PostBody(), &in); err != nil {
		return "", "", err
	}
	return ip, in.Email, nil
}

// publicBudget is the per-client budget of the public email endpoints.
func (v *Verification) publicBudget(ctx context.Context, ip string) error {
	if err := v.budget.authIP(ctx, ip); err != nil {
		return err
	}
	return v.budget.mailIP(ctx, ip)
}

// mailsReply is a public route that mails the address in the body (send) and answers the
// same whether or not it is an account's (GenericEmailReply).
func (v *Verification) mailsReply(send func(ctx context.Context, email string) error) api.Handler {
	return func(ctx context.Context, rc *fasthttp.RequestCtx) error {
		_, email, err := v.publicEmail(ctx, rc)
		if err == nil {
			err = send(ctx, email)
		}
		if err != nil {
			return err
		}
		return api.WriteJSON(rc, http.StatusOK, api.Message{Message: GenericEmailReply})
	}
}

// ResendVerification mails a fresh verification link to the address, if it is an unverified
// account's, within the client's and the address's budgets. Success says nothing of whether
// the address has an account (GenericEmailReply).
func (v *Verification) ResendVerification(ctx context.Context, ip, email string) error {
	if err := v.publicBudget(ctx, ip); err != nil {
		return err
	}
	return v.resend(ctx, email)
}

func (v *Verification) resend(ctx context.Context, raw string) error {
	email, err := checkEmail(raw)
	if err != nil {
		return err
	}
	if !v.budget.mail(ctx, "verify", email) {
		return nil
	}
	a, err := v.store.AccountByEmail(ctx, email)
	switch {
	case errors.Is(err, persistence.ErrNotFound):
	case err != nil:
		return err
	case !a.Verified:
		l, err := v.links.newLink(a.Email, a.FullName)
		if err != nil {
			return err
		}
		if err := v.store.AddVerificationLink(ctx, a.ID, l); err != nil && !errors.Is(err, persistence.ErrAlreadyVerified) {
			return err
		}
		v.mail.Wake()
	}
	return nil
}

func (v *Verification) pendingEmail(ctx context.Context, rc *fasthttp.RequestCtx) error {
	a, err := v.store.AccountByID(ctx, api.Principal(rc).AccountID)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, struct {
		Email      string `json:"email"`
		IsVerified bool   `json:"is_verified"`
	}{a.Email, a.Verified})
}

func (v *Verification) changePendingEmail(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := api.CheckJSON(rc); err != nil {
		return err
	}
	var in emailBody
	if err := api.ParseJSON(rc.PostBody(), &in); err != nil {
		return err
	}
	email, err := v.ChangePendingEmail(ctx, api.Principal(rc).AccountID, in.Email)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, struct {
		Email      string `json:"email"`
		IsVerified bool   `json:"is_verified"`
		Message    string `json:"message"`
	}{email, false, "We have sent a new verification link and code to " + email + "."})
}

// ChangePendingEmail corrects an unverified account's address (409 already_verified once
// verified, 409 email_taken when another account has it) and mails a fresh link and code to
// it, within the account's budget of such mails. It returns the address as stored.
func (v *Verification) ChangePendingEmail(ctx context.Context, id uuid.UUID, raw string) (string, error) {
	email, err := checkEmail(raw)
	if err != nil {
		return "", err
	}
	a, err := v.store.AccountByID(ctx, id)
	if err != nil {
		return "", err
	}
	if a.Verified {
		return "", api.NewProblem("already_verified", "this account's email is already verified; it cannot be changed here")
	}
	if err := v.budget.pendingEmail(ctx, id.String(), email); err != nil {
		return "", err
	}
	link, err := v.links.newLink(email, a.FullName)
	if err != nil {
		return "", err
	}
	code, err := v.newCode(id, email)
	if err != nil {
		return "", err
	}
	err = v.store.ChangePendingEmail(ctx, id, email, link, code)
	switch {
	case errors.Is(err, persistence.ErrAlreadyVerified):
		return "", api.NewProblem("already_verified", "this account's email is already verified; it cannot be changed here")
	case err != nil:
		return "", err
	}
	v.mail.Wake()
	return email, nil
}

// ForgotPassword mails a reset link to the address, if it is an account's, within the
// client's and the address's budgets. Success says nothing of whether the address has an
// account (GenericEmailReply).
func (v *Verification) ForgotPassword(ctx context.Context, ip, email string) error {
	if err := v.publicBudget(ctx, ip); err != nil {
		return err
	}
	return v.forgot(ctx, email)
}

func (v *Verification) forgot(ctx context.Context, raw string) error {
	email, err := checkEmail(raw)
	if err != nil {
		return err
	}
	if !v.budget.mail(ctx, "reset", email) {
		return nil
	}
	token, hash, err := auth.NewToken("pr_")
	if err != nil {
		return err
	}
	found, err := v.store.AddPasswordReset(ctx, email, hash, v.now().Add(passwordResetTTL), func(name string) persistence.Email {
		return v.links.messages.PasswordReset(email, name, token, passwordResetTTL)
	})
	if err != nil {
		return err
	}
	if found {
		v.mail.Wake()
	}
	return nil
}

func (v *Verification) resetPassword(ctx context.Context, rc *fasthttp.RequestCtx) error {
	ip := v.opts.Proxies.ClientIP(rc)
	if err := v.budget.authIP(ctx, ip); err != nil {
		return err
	}
	if err := api.CheckJSON(rc); err != nil {
		return err
	}
	var in PasswordReset
	if err := api.ParseJSON(rc.PostBody(), &in); err != nil {
		return err
	}
	if err := v.reset(ctx, in); err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, api.Message{Message: "Your password has been changed; sign in with the new one."})
}

// ResetPassword sets a new password with a reset token from the mail (400 invalid_token when
// it is unknown, used or expired), for a client at ip within its budget, and ends every
// session of the account.
func (v *Verification) ResetPassword(ctx context.Context, ip string, in PasswordReset) error {
	if err := v.budget.authIP(ctx, ip); err != nil {
		return err
	}
	return v.reset(ctx, in)
}

func (v *Verification) reset(ctx context.Context, in PasswordReset) error {
	r, err := in.check()
	if err != nil {
		return err
	}
	hash, err := v.passwords.Hash(r.password)
	if err != nil {
		return err
	}
	id, acc, err := v.store.ResetPassword(ctx, auth.HashSecret(r.token), hash, v.now())
	if errors.Is(err, persistence.ErrTokenInvalid) {
		return api.NewProblem("invalid_token", "the reset token is invalid, used or expired: ask for a new one")
	}
	if err != nil {
		return err
	}
	// Access tokens issued before the reset stop working on every node at once.
	v.principals.SetAccountAccess(ctx, id.String(), string(acc.Status), acc.TokenVersion)
	return nil
}
