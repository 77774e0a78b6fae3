// Errors callers tell apart.

package persistence

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// Errors callers tell apart. The transport layer maps them to HTTP statuses.
var (
	ErrNotFound        = errors.New("not found")
	ErrEmailTaken      = errors.New("email already registered")
	ErrTokenInvalid    = errors.New("token invalid or expired")
	ErrTokenReused     = errors.New("refresh token reused; token family revoked")
	ErrIdempotencyBusy = errors.New("a request with this idempotency key is still running")
	ErrIdempotencyUsed = errors.New("idempotency key already used with a different request")
)

func isUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && (constraint == "" || pgErr.ConstraintName == constraint)
}
