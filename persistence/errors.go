// Errors callers tell apart.

package persistence

import (
	"errors"
	"io"
	"net"

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

func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}

// Unreachable reports an error that says PostgreSQL could not be reached or went away in the
// middle (refused or lost connection, a server shutting down or still starting): the request
// was not at fault and may succeed once the database is back, so callers answer "retry later"
// rather than an internal error. A statement cut off this way may or may not have committed.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case len(pgErr.Code) == 5 && pgErr.Code[:2] == "08": // connection exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", pgErr.Code == "53300":
			// admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr *net.OpError
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.ErrUnexpectedEOF)
}
