package web

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/api/accounts"
)

// Accounts are the account operations the JSON API runs too (accounts.Handler).
type Accounts interface {
	SignUp(ctx context.Context, ip string, in accounts.Registration) (accounts.Registered, error)
	SignIn(ctx context.Context, ip string, in accounts.Credentials) (persistence.Account, error)
}

// Verification is the email flows the JSON API runs too (accounts.Verification).
type Verification interface {
	SendCode(ctx context.Context, id uuid.UUID) error
	VerifyCode(ctx context.Context, id uuid.UUID, code string) error
	ResendVerification(ctx context.Context, ip, email string) error
	ChangePendingEmail(ctx context.Context, id uuid.UUID, email string) (string, error)
	ForgotPassword(ctx context.Context, ip, email string) error
	ResetPassword(ctx context.Context, ip string, in accounts.PasswordReset) error
}

// AuthPages are the pages of signing up and in, and of the email address and password:
// sign up, log in, log out, verification by link or code, a corrected address, forgotten and
// reset passwords.
type AuthPages struct {
	site     *Site
	accounts Accounts
	verify   Verification
}

// NewAuthPages returns the pages.
func NewAuthPages(site *Site, a Accounts, v Verification) *AuthPages {
	return &AuthPages{site: site, accounts: a, verify: v}
}

// RegisterPages adds the routes.
func (p *AuthPages) RegisterPages(r *Router) {
	r.Public("GET", "/app/login", p.loginPage)
	r.Public("POST", "/app/login", p.login)
	r.Public("GET", "/app/signup", p.signupPage)
	r.Public("POST", "/app/signup", p.signup)
	r.Page("POST", "/app/logout", p.logout)
	r.Page("GET", "/app/verify", p.verifyPage)
	r.Page("POST", "/app/verify", p.verifyCode)
	r.Page("POST", "/app/verify/code", p.sendCode)
	r.Page("POST", "/app/verify/resend", p.resend)
	r.Page("GET", "/app/email", p.emailPage)
	r.Page("POST", "/app/email", p.changeEmail)
	r.Public("GET", "/app/forgot", p.forgotPage)
	r.Public("POST", "/app/forgot", p.forgot)
	r.Public("GET", "/app/reset", p.resetPage)
	r.Public("POST", "/app/reset", p.reset)
}

// registerOwn adds the routes of the plumbing itself.
func (s *Site) registerOwn(r *Router) {
	home := func(_ context.Context, rc *fasthttp.RequestCtx) error { return api.SeeOther(rc, "/app/") }
	r.Public("GET", "/", home)
	r.Public("GET", "/app/static/{file}", s.serveAsset)
}

func (p *AuthPages) ip(rc *fasthttp.RequestCtx) string { return p.site.opts.Proxies.ClientIP(rc) }

func (p *AuthPages) loginPage(ctx context.Context, rc *fasthttp.RequestCtx) error {
	next := SafeNext(string(rc.QueryArgs().Peek("next")))
	if p.site.SignedIn(ctx, rc) {
		return api.SeeOther(rc, next)
	}
	f := NewForm()
	f.Set("next", next)
	return p.site.views.Render(ctx, rc, http.StatusOK, "login", &Page{Title: "Sign in", Form: f})
}

func (p *AuthPages) login(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := ReadForm(rc)
	page := &Page{Title: "Sign in", Form: f}
	a, err := p.accounts.SignIn(ctx, p.ip(rc), accounts.Credentials{Email: f.Get("email"), Password: f.Get("password")})
	if err != nil {
		return p.site.views.RenderForm(ctx, rc, "login", page, err)
	}
	if err := p.site.StartSession(ctx, rc, a); err != nil {
		return err
	}
	return api.SeeOther(rc, SafeNext(f.Get("next")))
}

func (p *AuthPages) signupPage(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if p.site.SignedIn(ctx, rc) {
		return api.SeeOther(rc, "/app/")
	}
	return p.site.views.Render(ctx, rc, http.StatusOK, "signup", &Page{Title: "Create your account", Form: NewForm()})
}

func (p *AuthPages) signup(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := ReadForm(rc)
	page := &Page{Title: "Create your account", Form: f}
	reg, err := p.accounts.SignUp(ctx, p.ip(rc), accounts.Registration{
		Email: f.Get("email"), Password: f.Get("password"), FullName: f.Get("full_name"), CompanyName: f.Get("company_name"),
		Phone: f.Get("phone"), BusinessType: f.Get("business_type"), Country: f.Get("country"),
	})
	if err != nil {
		return p.site.views.RenderForm(ctx, rc, "signup", page, err)
	}
	if err := p.site.StartSession(ctx, rc, reg.Account); err != nil {
		return err
	}
	p.site.Flash(rc, "success", "Your account is ready. We have sent a confirmation link to "+reg.Account.Email+".")
	return api.SeeOther(rc, "/app/verify")
}

func (p *AuthPages) logout(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := p.site.EndSession(ctx, rc); err != nil {
		return err
	}
	p.site.Flash(rc, "info", "You have signed out.")
	return api.SeeOther(rc, "/app/login")
}
