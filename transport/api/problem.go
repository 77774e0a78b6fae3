package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/auth"
	"github.com/tuma-sms/tuma/transport/payments"
)

// FieldError names one invalid input field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Problem is an RFC 9457 problem detail, the body of every error response.
type Problem struct {
	Type   string       `json:"type"`
	Title  string       `json:"title"`
	Status int          `json:"status"`
	Detail string       `json:"detail,omitempty"`
	Code   string       `json:"code"`
	Errors []FieldError `json:"errors,omitempty"`

	// Extra members (e.g. attempts_remaining) appear at the top level of the body.
	Extra map[string]any `json:"-"`
	// RetryAfter, in seconds, is sent as the Retry-After header on 429 and 503.
	RetryAfter int `json:"-"`
}

// Error makes a Problem usable as an error inside transport.
func (p *Problem) Error() string { return p.Code + ": " + p.Detail }

// MarshalJSON flattens Extra into the body.
func (p *Problem) MarshalJSON() ([]byte, error) {
	type plain Problem
	b, err := json.Marshal((*plain)(p))
	if err != nil || len(p.Extra) == 0 {
		return b, err
	}
	extra, err := json.Marshal(p.Extra)
	if err != nil {
		return nil, err
	}
	// Splice {"a":1} + {"b":2} → {"a":1,"b":2}.
	out := append(b[:len(b)-1:len(b)-1], ',')
	return append(out, extra[1:]...), nil
}

// Helpers for the problems handlers raise most.
func notFound(detail string) error { return problem("not_found", detail) }

// invalid is a 422 naming the invalid fields.
func invalid(errs ...FieldError) *Problem { return invalidAs("validation_failed", errs...) }

// invalidAs is a 422 of a more specific code, naming the invalid fields.
func invalidAs(code string, errs ...FieldError) *Problem {
	p := problem(code, "the request has invalid fields")
	if len(errs) == 1 {
		p.Detail = errs[0].Field + ": " + errs[0].Message
	}
	p.Errors = errs
	return p
}

// tooManyRequests is a 429 of the given code with its Retry-After.
func tooManyRequests(code, detail string, retryAfterSeconds int) error {
	p := problem(code, detail)
	p.RetryAfter = max(retryAfterSeconds, 1)
	return p
}

// problemFor is the one place where errors become HTTP statuses. Domain packages return typed
// errors; anything unrecognised is a 500 that reveals nothing about its cause.
func problemFor(err error) *Problem {
	var p *Problem
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, new(*actors.InsufficientBalanceError)):
		var ib *actors.InsufficientBalanceError
		errors.As(err, &ib)
		return problem("insufficient_balance", ib.Error())
	case errors.Is(err, persistence.ErrInsufficientBalance):
		return problem("insufficient_balance", "the balance cannot cover this send")
	case errors.Is(err, payments.ErrUnavailable):
		p := problem("payment_provider_unavailable", "the payment provider cannot be reached; nothing was charged, try again shortly")
		p.RetryAfter = 30
		return p
	case errors.Is(err, actors.ErrStopping), errors.Is(err, actors.ErrBusy), errors.Is(err, context.DeadlineExceeded):
		// The engine or the store did not answer within the request's deadline: the outcome is
		// unknown, so the client retries (with its Idempotency-Key), never takes it as refused.
		p := problem("unavailable", "the service is busy or restarting; retry shortly")
		p.RetryAfter = 2
		return p
	case persistence.Unreachable(err):
		// PostgreSQL is down or restarting: the request may succeed once it is back.
		p := problem("unavailable", "the database cannot be reached; retry shortly (with the same Idempotency-Key)")
		p.RetryAfter = 5 // as /readyz says while PostgreSQL is down
		return p
	case errors.Is(err, auth.ErrUnauthenticated):
		return problem("unauthenticated", "missing or invalid credentials")
	case errors.Is(err, auth.ErrSuspended):
		return problem("account_suspended", "this account is suspended")
	case errors.Is(err, persistence.ErrNotFound):
		return problem("not_found", "no such resource")
	case errors.Is(err, persistence.ErrEmailTaken):
		return problem("email_taken", "an account with this email already exists")
	case errors.Is(err, persistence.ErrTokenInvalid):
		return problem("invalid_refresh_token", "the refresh token is invalid or expired")
	case errors.Is(err, persistence.ErrTokenReused):
		return problem("refresh_token_reused", "this refresh token was already used; every session started from the same login has been ended")
	case errors.Is(err, persistence.ErrIdempotencyBusy), errors.Is(err, persistence.ErrIdempotencyLost):
		return problem("idempotency_key_in_use", "a request with this Idempotency-Key is still being processed")
	case errors.Is(err, persistence.ErrIdempotencyUsed):
		return problem("idempotency_key_reused", "this Idempotency-Key was already used with a different request")
	case errors.Is(err, persistence.ErrContactExists):
		return problem("contact_exists", "a contact with this phone exists already")
	case errors.Is(err, persistence.ErrContactOptedOut):
		return problem("contact_opted_out", "a contact with this phone opted out: it cannot be added again")
	case errors.Is(err, persistence.ErrSenderExists):
		return problem("sender_exists", err.Error())
	case errors.Is(err, persistence.ErrInvalidState):
		return problem("invalid_state", err.Error())
	}
	return problem("internal_error", "an unexpected error occurred; it has been logged")
}

// writeProblem sends p as application/problem+json with the headers its status calls for.
func writeProblem(rc *fasthttp.RequestCtx, p *Problem) {
	body, err := json.Marshal(p)
	if err != nil {
		body = []byte(`{"type":"about:blank","title":"Internal Server Error","status":500,"code":"internal_error"}`)
		p = problem("internal_error", "")
	}
	rc.Response.Header.SetContentType("application/problem+json")
	switch p.Status {
	case http.StatusUnauthorized:
		rc.Response.Header.Set("WWW-Authenticate", `Bearer realm="tuma"`)
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if p.RetryAfter > 0 {
			rc.Response.Header.Set("Retry-After", strconv.Itoa(p.RetryAfter))
		}
	}
	rc.SetStatusCode(p.Status)
	rc.SetBody(body)
}
