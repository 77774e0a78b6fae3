package persistence

import (
	"errors"

	"github.com/google/uuid"
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

// NewID returns a new UUIDv7: time-ordered, so inserts append to the primary-key index.
func NewID() uuid.UUID {
	// NewV7 fails only when the system's random source does, which nothing can recover from.
	return uuid.Must(uuid.NewV7())
}
