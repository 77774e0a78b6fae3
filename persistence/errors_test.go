package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tuma-sms/tuma/persistence"
)

// A database that is down or restarting is "retry later", not an internal error; errors of
// the request itself are not.
func TestUnreachable(t *testing.T) {
	// A port nothing listens on: the refused connection pgx reports while PostgreSQL is down.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, refused := pgx.Connect(ctx, "postgres://postgres@"+addr+"/tuma?sslmode=disable&connect_timeout=2")
	if refused == nil {
		t.Fatal("connected to a closed port")
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", fmt.Errorf("claim idempotency key: %w", refused), true},
		{"starting up", &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, true},
		{"shutting down", fmt.Errorf("accept: %w", &pgconn.PgError{Code: "57P01"}), true},
		{"connection exception", &pgconn.PgError{Code: "08006"}, true},
		{"connection lost mid-statement", fmt.Errorf("claim idempotency key: %w", io.ErrUnexpectedEOF), true},
		{"closed connection", fmt.Errorf("flush: %w", pgconn.ErrConnClosed), true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"not found", persistence.ErrNotFound, false},
		{"request deadline", context.DeadlineExceeded, false},
		{"anything else", errors.New("boom"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := persistence.Unreachable(tt.err); got != tt.want {
			t.Errorf("%s: Unreachable(%v) = %v; want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
