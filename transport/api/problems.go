// Problem codes: the one table of every code an error response may carry, with its HTTP
// status. Handlers build problems only from it (NewProblem), /openapi.json publishes it, and
// TestProblemCatalogue fails when the handlers, this table and the document disagree.

package api

import (
	"fmt"
	"net/http"
)

// ProblemType is one problem code.
type ProblemType struct {
	Code    string
	Status  int
	Meaning string // for client developers: when it is answered and what to do
}

// problemTypes are every problem code, by status.
var problemTypes = []ProblemType{
	{"malformed_json", http.StatusBadRequest, "The body is not one JSON object (syntax, or trailing data)."},
	{"duplicate_json_key", http.StatusBadRequest, "An object names a member twice; which one counts would be ambiguous."},
	{"malformed_query", http.StatusBadRequest, "A query parameter is not of its kind (page=abc), or a cursor is not one this list issued."},
	{"malformed_request", http.StatusBadRequest, "The HTTP request could not be parsed."},
	{"malformed_multipart", http.StatusBadRequest, "A multipart/form-data body could not be read (no closing boundary, broken part headers)."},
	{"malformed_webhook", http.StatusBadRequest, "A payment webhook's body is not the provider's JSON."},
	{"invalid_idempotency_key", http.StatusBadRequest, "The Idempotency-Key header is longer than 255 characters, or not UTF-8 text."},
	{"invalid_current_password", http.StatusBadRequest, "Changing the password: the current password is wrong."},
	{"invalid_token", http.StatusBadRequest, "A password-reset token is unknown, used or expired."},
	{"invalid_code", http.StatusBadRequest, "The verification code is wrong (attempts_remaining says how many tries are left), or none was requested."},
	{"code_expired", http.StatusBadRequest, "The verification code has expired: request a new one."},
	{"group_empty", http.StatusBadRequest, "A campaign's group has no active contacts on a Kenyan network: nothing to send, nothing charged."},
	{"unauthenticated", http.StatusUnauthorized, "No valid API key or bearer token (or admin token on the admin API)."},
	{"invalid_credentials", http.StatusUnauthorized, "Login: the email or the password is wrong."},
	{"invalid_refresh_token", http.StatusUnauthorized, "The refresh token is unknown or expired."},
	{"refresh_token_reused", http.StatusUnauthorized, "A used refresh token was presented again: every session of that login is ended."},
	{"invalid_signature", http.StatusUnauthorized, "A payment webhook's signature does not verify."},
	{"insufficient_balance", http.StatusPaymentRequired, "The wallet cannot cover the cost; nothing was charged."},
	{"account_suspended", http.StatusForbidden, "The account is suspended."},
	{"not_found", http.StatusNotFound, "No such resource, or another account's (existence is never revealed)."},
	{"method_not_allowed", http.StatusMethodNotAllowed, "The path exists, the method does not (see Allow)."},
	{"email_taken", http.StatusConflict, "An account with this email exists already."},
	{"invalid_state", http.StatusConflict, "The resource's state does not allow this (see its status): e.g. paying a fee that is paid, setting as default a sender ID that is not approved."},
	{"contact_exists", http.StatusConflict, "A contact with this phone is in the account's contacts already."},
	{"contact_opted_out", http.StatusConflict, "A contact with this phone opted out (was deleted): it is never messaged again nor added again."},
	{"sender_exists", http.StatusConflict, "This account already has a sender ID request with this name and network."},
	{"inbound_number_taken", http.StatusConflict, "Operators: the short code or long number is another account's inbound number already."},
	{"smpp_system_id_taken", http.StatusConflict, "An SMPP credential of some account has this system_id already (compared without regard to case): choose another, or leave it out to have one made."},
	{"already_verified", http.StatusConflict, "The account's email is verified already."},
	{"idempotency_key_in_use", http.StatusConflict, "A request with this Idempotency-Key is still running; retry to get its outcome."},
	{"body_too_large", http.StatusRequestEntityTooLarge, "The body is larger than the server takes."},
	{"unsupported_media_type", http.StatusUnsupportedMediaType, "The body is not in a content type this endpoint takes."},
	{"validation_failed", http.StatusUnprocessableEntity, "Fields are invalid; errors names each one."},
	{"all_recipients_suppressed", http.StatusUnprocessableEntity, "Every recipient of the send is on the account's suppression list (GET /suppressions): nothing was sent, nothing charged."},
	{"unsupported_network", http.StatusUnprocessableEntity, "Recipients are valid Kenyan numbers on a network Tuma does not reach."},
	{"sender_not_approved", http.StatusUnprocessableEntity, "The sender_id is not an approved, active sender ID of this account."},
	{"idempotency_key_reused", http.StatusUnprocessableEntity, "The Idempotency-Key was used with a different request."},
	{"url_not_allowed", http.StatusUnprocessableEntity, "A webhook endpoint's url is not https, or it is (or its name resolves to) a loopback, private, link-local or unspecified address; errors names the field."},
	{"limit_reached", http.StatusUnprocessableEntity, "The account has as many of these as it may (10 webhook endpoints; TUMA_SMPP_CREDENTIALS_PER_ACCOUNT SMPP credentials, 10 by default); delete one first."},
	{"rate_limited", http.StatusTooManyRequests, "Too many requests for this account; wait Retry-After seconds."},
	{"too_many_requests", http.StatusTooManyRequests, "Too many requests from this address, or emails to this address; wait Retry-After."},
	{"too_many_login_attempts", http.StatusTooManyRequests, "Too many login attempts for this email or address; wait Retry-After."},
	{"too_many_signups", http.StatusTooManyRequests, "Too many accounts registered from this address; wait Retry-After."},
	{"too_many_status_checks", http.StatusTooManyRequests, "Too many live delivery checks for this account; the stored status is at GET /sms/messages/{id}."},
	{"code_locked", http.StatusTooManyRequests, "Too many wrong verification codes: request a new code (and at most a daily number of tries)."},
	{"internal_error", http.StatusInternalServerError, "An unexpected error; it has been logged. Safe to retry with the same Idempotency-Key."},
	{"unavailable", http.StatusServiceUnavailable, "A dependency is down or the engine did not answer in time: the outcome is unknown. Retry (with the same Idempotency-Key) after Retry-After."},
	{"overloaded", http.StatusServiceUnavailable, "The node is serving as many requests as it can (TUMA_MAX_IN_FLIGHT); nothing was done. Retry after Retry-After."},
	{"starting", http.StatusServiceUnavailable, "The node is starting; retry after Retry-After."},
	{"carrier_unavailable", http.StatusServiceUnavailable, "The network did not answer a live status check; retry after Retry-After."},
	{"payment_provider_unavailable", http.StatusServiceUnavailable, "The payment provider cannot be reached; nothing was charged."},
}

// problemIndex finds a code's entry.
var problemIndex = func() map[string]ProblemType {
	m := make(map[string]ProblemType, len(problemTypes))
	for _, t := range problemTypes {
		m[t.Code] = t
	}
	return m
}()

// ProblemTypes lists every problem code (the API reference and its tests).
func ProblemTypes() []ProblemType { return append([]ProblemType(nil), problemTypes...) }

// NewProblem builds the problem of a catalogued code. An unknown code is a programming error,
// which TestProblemCatalogue finds before any request does.
func NewProblem(code, detail string) *Problem {
	t, ok := problemIndex[code]
	if !ok {
		panic(fmt.Sprintf("problem code %q is not in the catalogue (problems.go)", code))
	}
	return &Problem{Type: "about:blank", Title: http.StatusText(t.Status), Status: t.Status, Code: code, Detail: detail}
}
