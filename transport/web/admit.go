package web

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/auth"
)

// csp allows only what the binary serves: no inline script or style anywhere.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// Admit lets a page request through (api.Pages): the security headers on every answer; for
// a Page route, the person its session names, sent to sign in without one; for every
// state-changing request, its CSRF token.
func (s *Site) Admit(ctx context.Context, rc *fasthttp.RequestCtx, acc api.Access) (auth.Principal, error) {
	return s.admit(ctx, rc, acc, false)
}

// admit is Admit; with streamed (an upload page) a form's token is left in its body, unread,
// for the upload's first part (Parts), unless the X-CSRF-Token header carries it.
func (s *Site) admit(ctx context.Context, rc *fasthttp.RequestCtx, acc api.Access, streamed bool) (auth.Principal, error) {
	secureHeaders(rc)
	if acc == api.PagePublic {
		if changesState(rc) && !s.preSessionTokenOK(rc) {
			return auth.Principal{}, csrfRefused()
		}
		if changesState(rc) && !storableForm(rc) {
			return auth.Principal{}, unstorableForm()
		}
		return auth.Principal{}, nil
	}
	ws, err := s.session(ctx, rc)
	if errors.Is(err, errNoSession) {
		return auth.Principal{}, s.toSignIn(rc)
	}
	if err != nil {
		return auth.Principal{}, err
	}
	p, err := s.auth.Session(ctx, ws.AccountID, ws.TokenVersion)
	if errors.Is(err, auth.ErrUnauthenticated) { // the password changed since: this session is over
		if err := s.store.DeleteWebSession(ctx, ws.ID); err != nil {
			return auth.Principal{}, err
		}
		return auth.Principal{}, s.toSignIn(rc)
	}
	if err != nil {
		return auth.Principal{}, err // a suspended account: 403
	}
	if changesState(rc) {
		if streamed && len(rc.Request.Header.Peek("X-CSRF-Token")) == 0 {
			rc.SetUserValue(tokenInBodyKey, true)
		} else if !tokenMatches(submittedToken(rc), ws.CSRF) {
			return auth.Principal{}, csrfRefused()
		}
		if !streamed && !storableForm(rc) {
			return auth.Principal{}, unstorableForm()
		}
	}
	if err := s.touch(ctx, ws); err != nil {
		return auth.Principal{}, err
	}
	rc.SetUserValue(sessionKey, ws)
	return p, nil
}

// secureHeaders are on every page the dashboard answers; assets replace Cache-Control.
func secureHeaders(rc *fasthttp.RequestCtx) {
	h := &rc.Response.Header
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// toSignIn sends a request without a session to sign in, and back to the page it asked for
// (a GET's whole address; a form's page).
func (s *Site) toSignIn(rc *fasthttp.RequestCtx) error {
	back := string(rc.Path())
	if m := string(rc.Method()); m == http.MethodGet || m == http.MethodHead {
		back = string(rc.RequestURI())
	}
	target := "/app/login"
	if next := SafeNext(back); next != "/app/" {
		target += "?next=" + url.QueryEscape(next)
	}
	if len(rc.Request.Header.Peek("HX-Request")) > 0 {
		// htmx would follow a 303 inside the page and swap the sign-in form into a fragment:
		// it navigates the whole page on HX-Redirect instead.
		rc.Response.Header.Set("HX-Redirect", target)
		return pageProblem(http.StatusUnauthorized, "signed_out", "Your session has ended: sign in again.")
	}
	return &api.SeeOtherError{Location: target}
}

// SafeNext is where to go after signing in: a path of the dashboard, never another site
// (//evil.example, /\evil.example) nor a scheme; anything else is the overview.
func SafeNext(next string) string {
	if !strings.HasPrefix(next, "/app/") || strings.ContainsAny(next, "\\\r\n\t") || strings.HasPrefix(next, "//") {
		return "/app/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/app/"
	}
	return next
}

func changesState(rc *fasthttp.RequestCtx) bool {
	switch string(rc.Method()) {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// submittedToken is the CSRF token a request carries: the X-CSRF-Token header (htmx), or the
// form's _csrf field.
func submittedToken(rc *fasthttp.RequestCtx) string {
	if h := rc.Request.Header.Peek("X-CSRF-Token"); len(h) > 0 {
		return string(h)
	}
	if v := rc.PostArgs().Peek(csrfField); len(v) > 0 {
		return string(v)
	}
	if f, err := rc.MultipartForm(); err == nil && len(f.Value[csrfField]) > 0 {
		return f.Value[csrfField][0]
	}
	return ""
}

// csrfField is the hidden field every form carries.
const csrfField = "_csrf"

// tokenMatches compares a submitted token with the secret, in constant time.
func tokenMatches(submitted string, secret []byte) bool {
	got, err := base64.RawURLEncoding.DecodeString(submitted)
	return err == nil && len(secret) > 0 && subtle.ConstantTimeCompare(got, secret) == 1
}

// preSessionTokenOK checks a public form's double-submitted token against its cookie.
func (s *Site) preSessionTokenOK(rc *fasthttp.RequestCtx) bool {
	cookie := rc.Request.Header.Cookie(csrfCookie)
	secret, err := base64.RawURLEncoding.DecodeString(string(cookie))
	return err == nil && len(secret) == 32 && tokenMatches(submittedToken(rc), secret)
}

// preSessionToken is the token a public page's form carries: its cookie's, set now if the
// browser has none.
func (s *Site) preSessionToken(rc *fasthttp.RequestCtx) (string, error) {
	if c := rc.Request.Header.Cookie(csrfCookie); len(c) == 43 {
		if b, err := base64.RawURLEncoding.DecodeString(string(c)); err == nil && len(b) == 32 {
			return string(c), nil
		}
	}
	token, _, err := randomToken()
	if err != nil {
		return "", err
	}
	s.setCookie(rc, csrfCookie, token, "/app/", fasthttp.CookieSameSiteStrictMode, 0)
	return token, nil
}

// csrfRefused is the 403 of a state change without its token: nothing was done.
func csrfRefused() *api.Problem {
	return pageProblem(http.StatusForbidden, "csrf_failed",
		"This form has expired or did not come from this site, so nothing was changed. Go back, reload the page and try again.")
}

// storableForm reports whether every field of a posted form, url-encoded or multipart (as
// ReadForm reads both), is text PostgreSQL can store: UTF-8 without NUL. The API's JSON
// decoder refuses the rest before any handler; a form's fields reach the handlers raw, and a
// NUL in one was a 500 from the database. Uploads, whose bodies are streamed, check theirs
// as they read them.
func storableForm(rc *fasthttp.RequestCtx) bool {
	ok := true
	rc.PostArgs().VisitAll(func(k, v []byte) {
		ok = ok && storable(k) && storable(v)
	})
	if !ok || !bytes.HasPrefix(rc.Request.Header.ContentType(), []byte("multipart/form-data")) {
		return ok
	}
	mf, err := rc.MultipartForm()
	if err != nil {
		return true // not a form the handlers can read either: they say so
	}
	for k, vs := range mf.Value {
		ok = ok && storable([]byte(k))
		for _, v := range vs {
			ok = ok && storable([]byte(v))
		}
	}
	return ok
}

func storable(b []byte) bool { return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 }

func unstorableForm() *api.Problem {
	return pageProblem(http.StatusUnprocessableEntity, "validation_failed",
		"The form holds characters that cannot be saved (a NUL character, or bytes that are not UTF-8 text), so nothing "+
			"was changed. Go back, retype the text and try again.")
}

// pageProblem is a problem only pages show (the API's catalogue is for the API).
func pageProblem(status int, code, detail string) *api.Problem {
	return &api.Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Code: code, Detail: detail}
}
