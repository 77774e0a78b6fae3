package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
)

// Cookie names.
const (
	sessionCookie = "tuma_session"
	csrfCookie    = "tuma_csrf" // before a session exists (sign in, sign up, reset)
	flashCookie   = "tuma_flash"
)

// sessionKey is where Admit leaves the request's session.
const sessionKey = "tuma.web.session"

// errNoSession: the request carries no live session.
var errNoSession = errors.New("no live session")

// randomToken is 32 random bytes as base64url.
func randomToken() (string, []byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("random token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), b, nil
}

func sessionID(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// StartSession signs the browser in as the account: a new session row and its cookie. A
// session the browser had is ended first, so a sign-in never keeps an old identifier.
func (s *Site) StartSession(ctx context.Context, rc *fasthttp.RequestCtx, a persistence.Account) error {
	if old := rc.Request.Header.Cookie(sessionCookie); len(old) > 0 {
		if err := s.store.DeleteWebSession(ctx, sessionID(string(old))); err != nil {
			return err
		}
	}
	token, _, err := randomToken()
	if err != nil {
		return err
	}
	_, csrf, err := randomToken()
	if err != nil {
		return err
	}
	now := s.now()
	ua := userAgent(rc.Request.Header.UserAgent())
	ws := persistence.WebSession{ID: sessionID(token), AccountID: a.ID, CSRF: csrf, TokenVersion: a.TokenVersion,
		CreatedAt: now, LastSeenAt: now, UserAgent: ua, IP: s.opts.Proxies.ClientIP(rc)}
	if err := s.store.CreateWebSession(ctx, ws, now.Add(-s.opts.IdleTimeout), now.Add(-s.opts.MaxAge)); err != nil {
		return err
	}
	s.setCookie(rc, sessionCookie, token, "/", fasthttp.CookieSameSiteLaxMode, s.opts.MaxAge)
	return nil
}

// EndSession signs the browser out: its session row and cookie are gone.
func (s *Site) EndSession(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if token := rc.Request.Header.Cookie(sessionCookie); len(token) > 0 {
		if err := s.store.DeleteWebSession(ctx, sessionID(string(token))); err != nil {
			return err
		}
	}
	s.clearCookie(rc, sessionCookie, "/")
	return nil
}

// session reads the request's live session: errNoSession when there is none, it ended, or it
// expired (idle, or past its maximum age; an expired row is deleted).
func (s *Site) session(ctx context.Context, rc *fasthttp.RequestCtx) (persistence.WebSession, error) {
	token := rc.Request.Header.Cookie(sessionCookie)
	if len(token) == 0 || len(token) > 64 {
		return persistence.WebSession{}, errNoSession
	}
	ws, err := s.store.WebSessionByID(ctx, sessionID(string(token)))
	if errors.Is(err, persistence.ErrNotFound) {
		return persistence.WebSession{}, errNoSession
	}
	if err != nil {
		return persistence.WebSession{}, err
	}
	now := s.now()
	if now.Sub(ws.LastSeenAt) >= s.opts.IdleTimeout || now.Sub(ws.CreatedAt) >= s.opts.MaxAge {
		if err := s.store.DeleteWebSession(ctx, ws.ID); err != nil {
			return persistence.WebSession{}, err
		}
		return persistence.WebSession{}, errNoSession
	}
	return ws, nil
}

// touch records the session's use, at most once a minute.
func (s *Site) touch(ctx context.Context, ws persistence.WebSession) error {
	now := s.now()
	if now.Sub(ws.LastSeenAt) < touchEvery {
		return nil
	}
	return s.store.TouchWebSession(ctx, ws.ID, now)
}

// SignedIn reports whether the request carries a live session of an account in good
// standing (the public pages send such a person on).
func (s *Site) SignedIn(ctx context.Context, rc *fasthttp.RequestCtx) bool {
	ws, err := s.session(ctx, rc)
	if err != nil {
		return false
	}
	_, err = s.auth.Session(ctx, ws.AccountID, ws.TokenVersion)
	return err == nil
}

// currentSession is the session Admit found for a Page route.
func currentSession(rc *fasthttp.RequestCtx) (persistence.WebSession, bool) {
	ws, ok := rc.UserValue(sessionKey).(persistence.WebSession)
	return ws, ok
}

// AccountID is the signed-in account of a Page route (uuid.Nil on a public page).
func AccountID(rc *fasthttp.RequestCtx) uuid.UUID {
	ws, _ := currentSession(rc)
	return ws.AccountID
}

func (s *Site) setCookie(rc *fasthttp.RequestCtx, name, value, path string, same fasthttp.CookieSameSite, maxAge time.Duration) {
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKey(name)
	c.SetValue(value)
	c.SetPath(path)
	c.SetHTTPOnly(true)
	c.SetSecure(s.opts.Secure)
	c.SetSameSite(same)
	if maxAge > 0 {
		c.SetMaxAge(int(maxAge.Seconds()))
	}
	rc.Response.Header.SetCookie(c)
}

func (s *Site) clearCookie(rc *fasthttp.RequestCtx, name, path string) {
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKey(name)
	c.SetPath(path)
	c.SetHTTPOnly(true)
	c.SetSecure(s.opts.Secure)
	c.SetExpire(fasthttp.CookieExpireDelete)
	rc.Response.Header.SetCookie(c)
}

// maxUserAgent bounds the browser's name a session keeps, in bytes.
const maxUserAgent = 256

// userAgent is a request's User-Agent as a session stores it: valid UTF-8 (a byte that is not
// becomes U+FFFD), NULs dropped, cut at a character's boundary within maxUserAgent bytes. Stored
// raw, a long name cut inside a character, or a Latin-1 one, failed the sign-in with a 500.
func userAgent(raw []byte) string {
	s := strings.ToValidUTF8(strings.ReplaceAll(string(raw), "\x00", ""), "\uFFFD")
	if len(s) <= maxUserAgent {
		return s
	}
	cut := maxUserAgent
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
