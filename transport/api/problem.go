package api

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

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

// NotFound is a 404 saying what was not found.
func NotFound(detail string) error { return NewProblem("not_found", detail) }

// AllRecipientsSuppressed is the 422 of a send or campaign whose every recipient is on the
// account's suppression list (CONTRACT §15): nothing is left to send or to charge.
func AllRecipientsSuppressed() *Problem {
	return NewProblem("all_recipients_suppressed", "every recipient is suppressed")
}

// Invalid is a 422 naming the invalid fields.
func Invalid(errs ...FieldError) *Problem { return InvalidAs("validation_failed", errs...) }

// InvalidAs is a 422 of a more specific code, naming the invalid fields.
func InvalidAs(code string, errs ...FieldError) *Problem {
	p := NewProblem(code, "the request has invalid fields")
	if len(errs) == 1 {
		p.Detail = errs[0].Field + ": " + errs[0].Message
	}
	p.Errors = errs
	return p
}

// TooManyRequests is a 429 of the given code, with Retry-After the wait in whole seconds (at
// least one).
func TooManyRequests(code, detail string, retryAfter time.Duration) error {
	p := NewProblem(code, detail)
	p.RetryAfter = max(int(math.Ceil(retryAfter.Seconds())), 1)
	return p
}

// ProblemOf is the problem an error answers as: a page that shows an operation's refusal on
// its form (a 402 or a 409 as much as a 422) reads it here, as the API does.
func ProblemOf(err error) *Problem { return problemFor(err) }

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
		return NewProblem("insufficient_balance", ib.Error())
	case errors.Is(err, actors.ErrAllSuppressed):
		return AllRecipientsSuppressed()
	case errors.Is(err, persistence.ErrInsufficientBalance):
		return NewProblem("insufficient_balance", "the balance cannot cover this send")
	case errors.Is(err, payments.ErrUnavailable):
		p := NewProblem("payment_provider_unavailable", "the payment provider cannot be reached; nothing was charged, try again shortly")
		p.RetryAfter = 30
		return p
	case errors.Is(err, persistence.ErrFenced):
		// The account's tenant moved to another incarnation before anything was written: a
		// retry reaches the new one.
		p := NewProblem("unavailable", "the account is moving between nodes; nothing was written, retry shortly")
		p.RetryAfter = 1
		return p
	case errors.Is(err, actors.ErrStopping), errors.Is(err, actors.ErrBusy), errors.Is(err, context.DeadlineExceeded):
		// The engine or the store did not answer within the request's deadline: the outcome is
		// unknown, so the client retries (with its Idempotency-Key), never takes it as refused.
		p := NewProblem("unavailable", "the service is busy or restarting; retry shortly")
		p.RetryAfter = 2
		return p
	case persistence.Unreachable(err):
		// PostgreSQL is down or restarting: the request may succeed once it is back.
		p := NewProblem("unavailable", "the database cannot be reached; retry shortly (with the same Idempotency-Key)")
		p.RetryAfter = 5 // as /readyz says while PostgreSQL is down
		return p
	case errors.Is(err, auth.ErrUnauthenticated):
		return NewProblem("unauthenticated", "missing or invalid credentials")
	case errors.Is(err, auth.ErrSuspended):
		return NewProblem("account_suspended", "this account is suspended")
	case errors.Is(err, persistence.ErrNotFound):
		return NewProblem("not_found", "no such resource")
	case errors.Is(err, persistence.ErrEmailTaken):
		return NewProblem("email_taken", "an account with this email already exists")
	case errors.Is(err, persistence.ErrTokenInvalid):
		return NewProblem("invalid_refresh_token", "the refresh token is invalid or expired")
	case errors.Is(err, persistence.ErrTokenReused):
		return NewProblem("refresh_token_reused", "this refresh token was already used; every session started from the same login has been ended")
	case errors.Is(err, persistence.ErrIdempotencyBusy), errors.Is(err, persistence.ErrIdempotencyLost):
		return NewProblem("idempotency_key_in_use", "a request with this Idempotency-Key is still being processed")
	case errors.Is(err, persistence.ErrIdempotencyUsed):
		return NewProblem("idempotency_key_reused", "this Idempotency-Key was already used with a different request")
	case errors.Is(err, persistence.ErrContactExists):
		return NewProblem("contact_exists", "a contact with this phone exists already")
	case errors.Is(err, persistence.ErrContactOptedOut):
		return NewProblem("contact_opted_out", "a contact with this phone opted out: it cannot be added again")
	case errors.Is(err, persistence.ErrSenderExists):
		return NewProblem("sender_exists", err.Error())
	case errors.Is(err, persistence.ErrInvalidState):
		return NewProblem("invalid_state", err.Error())
	}
	return NewProblem("internal_error", "an unexpected error occurred; it has been logged")
}

// writeProblem sends p as application/problem+json with the headers its status calls for.
func writeProblem(rc *fasthttp.RequestCtx, p *Problem) {
	body, err := json.Marshal(p)
	if err != nil {
		body = []byte(`{"type":"about:blank","title":"Internal Server Error","status":500,"code":"internal_error"}`)
		p = NewProblem("internal_error", "")
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
