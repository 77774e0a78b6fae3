package api

import (
	"context"
	"math"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence/redis"
)

// Budgets that bound what a client can make the service do. Each is taken before the work it
// protects; a zero Rate in Options turns it off.

// retrySeconds is a refusal's wait as whole seconds for Retry-After.
func retrySeconds(d redis.Decision) int { return int(math.Ceil(d.RetryAfter.Seconds())) }

// authIPAllowed is the per-client budget of the endpoints that need no credentials yet cost
// a password hash or a database lookup (register, login, refresh, resend-verification,
// forgot-password, reset-password). It runs first, so refused requests cost nothing more.
func (s *Server) authIPAllowed(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if d := s.Limiter.Allow(ctx, "auth:ip:"+s.clientIP(rc), s.opts.AuthRatePerIP); !d.Allowed {
		return tooManyRequests("too_many_requests", "too many requests from this address; try again later", retrySeconds(d))
	}
	return nil
}

// signupAllowed bounds registrations per client, so welcome bonuses cannot be farmed at speed.
func (s *Server) signupAllowed(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if d := s.Limiter.Allow(ctx, "signup:ip:"+s.clientIP(rc), s.opts.SignupRatePerIP); !d.Allowed {
		return tooManyRequests("too_many_signups", "too many accounts registered from this address; try again later", retrySeconds(d))
	}
	return nil
}

// deliveryBudget bounds live status checks per account: each one asks a carrier.
func (s *Server) deliveryBudget(h handler) handler {
	return func(ctx context.Context, rc *fasthttp.RequestCtx) error {
		if d := s.Limiter.Allow(ctx, "delivery:"+principal(rc).AccountID.String(), s.opts.DeliveryRate); !d.Allowed {
			return tooManyRequests("too_many_status_checks",
				"too many live status checks for this account; GET /sms/messages/{id} has the stored status", retrySeconds(d))
		}
		return h(ctx, rc)
	}
}

// pendingEmailAllowed bounds address corrections: each one mails a fresh link and code (and a
// fresh code restarts its tries), so it shares the account's budget of code mails and the new
// address's budget of verification mails.
func (s *Server) pendingEmailAllowed(ctx context.Context, accountID, email string) error {
	for _, key := range []string{"mail:code:" + accountID, "mail:verify:" + email} {
		if d := s.Limiter.Allow(ctx, key, s.opts.EmailRatePerAddr); !d.Allowed {
			return tooManyRequests("too_many_requests", "too many verification emails; check your inbox or try again later", retrySeconds(d))
		}
	}
	return nil
}
