package accounts

import (
	"context"

	"github.com/tuma-sms/tuma/transport/api"
)

// budget holds the limits that bound what a client can make the account endpoints do. Each is
// taken before the work it protects; a zero Rate in Options turns it off.
type budget struct {
	opts    Options
	limiter Limiter
}

// authIP is the per-client budget of the endpoints that need no credentials yet cost a
// password hash or a database lookup (register, login, refresh, resend-verification,
// forgot-password, reset-password). It runs first, so refused requests cost nothing more.
func (b budget) authIP(ctx context.Context, ip string) error {
	if d := b.limiter.Allow(ctx, "auth:ip:"+ip, b.opts.AuthRatePerIP); !d.Allowed {
		return api.TooManyRequests("too_many_requests", "too many requests from this address; try again later", d.RetryAfter)
	}
	return nil
}

// signup bounds registrations per client, so welcome bonuses cannot be farmed at speed.
func (b budget) signup(ctx context.Context, ip string) error {
	if d := b.limiter.Allow(ctx, "signup:ip:"+ip, b.opts.SignupRatePerIP); !d.Allowed {
		return api.TooManyRequests("too_many_signups", "too many accounts registered from this address; try again later", d.RetryAfter)
	}
	return nil
}

// login throttles sign-in before the password is touched, per client and per target
// account, so neither one address nor one account can be guessed at speed.
func (b budget) login(ctx context.Context, ip, email string) error {
	if d := b.limiter.Allow(ctx, "login:ip:"+ip, b.opts.LoginRatePerIP); !d.Allowed {
		return api.TooManyRequests("too_many_login_attempts", "too many login attempts from this address; try again later", d.RetryAfter)
	}
	if d := b.limiter.Allow(ctx, "login:email:"+email, b.opts.LoginRatePerEmail); !d.Allowed {
		return api.TooManyRequests("too_many_login_attempts", "too many login attempts for this account; try again later", d.RetryAfter)
	}
	return nil
}

// mailIP is the per-client budget of the public email endpoints.
func (b budget) mailIP(ctx context.Context, ip string) error {
	if d := b.limiter.Allow(ctx, "mail:ip:"+ip, b.opts.EmailRatePerIP); !d.Allowed {
		return api.TooManyRequests("too_many_requests", "too many requests from this address; try again later", d.RetryAfter)
	}
	return nil
}

// mail applies the per-address budget of verification and reset mail.
func (b budget) mail(ctx context.Context, kind, address string) bool {
	return b.limiter.Allow(ctx, "mail:"+kind+":"+address, b.opts.EmailRatePerAddr).Allowed
}

// pendingEmail bounds address corrections: each one mails a fresh link and code (and a fresh
// code restarts its tries), so it shares the account's budget of code mails and the new
// address's budget of verification mails.
func (b budget) pendingEmail(ctx context.Context, accountID, email string) error {
	for _, key := range []string{"mail:code:" + accountID, "mail:verify:" + email} {
		if d := b.limiter.Allow(ctx, key, b.opts.EmailRatePerAddr); !d.Allowed {
			return api.TooManyRequests("too_many_requests", "too many verification emails; check your inbox or try again later", d.RetryAfter)
		}
	}
	return nil
}
