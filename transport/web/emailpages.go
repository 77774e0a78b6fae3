package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/api/accounts"
)

// verifyData is what the verification page shows.
type verifyData struct {
	Email    string
	Verified bool
}

func (p *AuthPages) verifyPage(ctx context.Context, rc *fasthttp.RequestCtx) error {
	return p.renderVerify(ctx, rc, http.StatusOK, NewForm())
}

func (p *AuthPages) renderVerify(ctx context.Context, rc *fasthttp.RequestCtx, status int, f *Form) error {
	a, err := p.site.store.AccountByID(ctx, AccountID(rc))
	if err != nil {
		return err
	}
	return p.site.views.Render(ctx, rc, status, "verify", &Page{Title: "Confirm your email address", Nav: "/app/verify",
		Data: verifyData{Email: a.Email, Verified: a.Verified}, Form: f})
}

// verifyFailed shows why a code did not verify, on the verification page.
func (p *AuthPages) verifyFailed(ctx context.Context, rc *fasthttp.RequestCtx, f *Form, err error) error {
	var prob *api.Problem
	if !errors.As(err, &prob) {
		return err
	}
	switch prob.Code {
	case "invalid_code":
		f.Message = "That code is not right."
		if left, ok := prob.Extra["attempts_remaining"]; ok {
			f.Message += " Attempts left: " + strconv.Itoa(toInt(left)) + "."
		}
	case "code_expired":
		f.Message = "That code has expired. Ask for a new one below."
	case "code_locked":
		f.Message = "Too many wrong codes. Ask for a new code below, then enter it."
	case "too_many_requests":
		f.Message = "We sent a code a moment ago: check your inbox, or try again in a minute."
	case "already_verified":
		p.site.Flash(rc, "info", "Your email address is already confirmed.")
		return api.SeeOther(rc, "/app/")
	default:
		if !formShows(prob.Status) {
			return err
		}
		f.Fail(prob)
	}
	return p.renderVerify(ctx, rc, prob.Status, f)
}

func toInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	return 0
}

func (p *AuthPages) sendCode(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := p.verify.SendCode(ctx, AccountID(rc)); err != nil {
		return p.verifyFailed(ctx, rc, NewForm(), err)
	}
	p.site.Flash(rc, "success", accounts.CodeSentMessage+" It expires in 10 minutes.")
	return api.SeeOther(rc, "/app/verify")
}

func (p *AuthPages) verifyCode(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := ReadForm(rc)
	if err := p.verify.VerifyCode(ctx, AccountID(rc), f.Get("code")); err != nil {
		return p.verifyFailed(ctx, rc, f, err)
	}
	return api.SeeOther(rc, "/app/?verified=1")
}

func (p *AuthPages) resend(ctx context.Context, rc *fasthttp.RequestCtx) error {
	a, err := p.site.store.AccountByID(ctx, AccountID(rc))
	if err != nil {
		return err
	}
	if err := p.verify.ResendVerification(ctx, p.ip(rc), a.Email); err != nil {
		return p.verifyFailed(ctx, rc, NewForm(), err)
	}
	p.site.Flash(rc, "success", "We have sent a new confirmation link to "+a.Email+", unless we sent one very recently.")
	return api.SeeOther(rc, "/app/verify")
}

func (p *AuthPages) emailPage(ctx context.Context, rc *fasthttp.RequestCtx) error {
	return p.renderEmail(ctx, rc, http.StatusOK, NewForm())
}

func (p *AuthPages) renderEmail(ctx context.Context, rc *fasthttp.RequestCtx, status int, f *Form) error {
	a, err := p.site.store.AccountByID(ctx, AccountID(rc))
	if err != nil {
		return err
	}
	return p.site.views.Render(ctx, rc, status, "email", &Page{Title: "Your email address", Nav: "/app/verify",
		Data: verifyData{Email: a.Email, Verified: a.Verified}, Form: f})
}

func (p *AuthPages) changeEmail(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := ReadForm(rc)
	email, err := p.verify.ChangePendingEmail(ctx, AccountID(rc), f.Get("email"))
	if err != nil {
		var prob *api.Problem
		if !errors.As(err, &prob) || !formShows(prob.Status) {
			return err
		}
		f.Fail(prob)
		return p.renderEmail(ctx, rc, prob.Status, f)
	}
	p.site.Flash(rc, "success", "We have sent a new confirmation link and code to "+email+".")
	return api.SeeOther(rc, "/app/verify")
}

func (p *AuthPages) forgotPage(ctx context.Context, rc *fasthttp.RequestCtx) error {
	return p.site.views.Render(ctx, rc, http.StatusOK, "forgot", &Page{Title: "Forgotten password", Form: NewForm()})
}

func (p *AuthPages) forgot(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := ReadForm(rc)
	if err := p.verify.ForgotPassword(ctx, p.ip(rc), f.Get("email")); err != nil {
		return p.site.views.RenderForm(ctx, rc, "forgot", &Page{Title: "Forgotten password", Form: f}, err)
	}
	p.site.Flash(rc, "success", accounts.GenericEmailReply+" The link in it works for an hour.")
	return api.SeeOther(rc, "/app/forgot")
}

// resetPage is where the reset mail's link lands: its token goes into the form, and the
// page's address (which holds the token) is never sent on as a referrer.
func (p *AuthPages) resetPage(ctx context.Context, rc *fasthttp.RequestCtx) error {
	rc.Response.Header.Set("Referrer-Policy", "no-referrer")
	f := NewForm()
	f.Set("token", string(rc.QueryArgs().Peek("token")))
	return p.site.views.Render(ctx, rc, http.StatusOK, "reset", &Page{Title: "Choose a new password", Form: f})
}

func (p *AuthPages) reset(ctx context.Context, rc *fasthttp.RequestCtx) error {
	rc.Response.Header.Set("Referrer-Policy", "no-referrer")
	f := ReadForm(rc)
	err := p.verify.ResetPassword(ctx, p.ip(rc), accounts.PasswordReset{Token: f.Get("token"), NewPassword: f.Get("new_password")})
	var prob *api.Problem
	switch {
	case err == nil:
		p.site.Flash(rc, "success", "Your password has been changed, and every session signed out. Sign in with the new one.")
		return api.SeeOther(rc, "/app/login")
	case errors.As(err, &prob) && (prob.Code == "invalid_token" || len(f.ErrorsOf("token")) > 0):
		f.Message = "This reset link is not valid any more: it was used, it expired (after an hour), or it was copied only in part. Ask for a new one."
	case errors.As(err, &prob) && formShows(prob.Status):
		f.Fail(prob)
		if len(f.Errors["token"]) > 0 {
			f.Message = "This reset link is incomplete. Ask for a new one."
			delete(f.Errors, "token")
		}
	default:
		return err
	}
	return p.site.views.Render(ctx, rc, prob.Status, "reset", &Page{Title: "Choose a new password", Form: f})
}
