// Package pgtest gives each integration test its own freshly migrated PostgreSQL database.
//
// Databases are cloned from a template migrated once per schema version (CREATE DATABASE …
// TEMPLATE), which costs tens of milliseconds instead of running every migration per test.
// When PostgreSQL is unreachable a test is skipped, or fails when CI is set.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tuma-sms/tuma/migrations"
	"github.com/tuma-sms/tuma/persistence"
)

// AdminURL is the server the tests use: TUMA_TEST_DATABASE_URL, else the local default.
func AdminURL() string {
	if u := os.Getenv("TUMA_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// NewDatabase creates a migrated database for this test, drops it when the test ends, and
// returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL unreachable at %s (CI is set, so this fails): %v", AdminURL(), err)
		}
		t.Skipf("PostgreSQL unreachable (%v); set CI=1 to make this a failure", err)
	}
	defer admin.Close(context.Background())

	tpl, err := template(ctx, admin)
	if err != nil {
		t.Fatalf("prepare template database: %v", err)
	}
	name := "tuma_test_" + randomHex(6)
	for attempt := 0; ; attempt++ {
		_, err = admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s",
			pgx.Identifier{name}.Sanitize(), pgx.Identifier{tpl}.Sanitize()))
		var pgErr *pgconn.PgError
		// 55006: the template is briefly in use (another process finishing with it).
		if errors.As(err, &pgErr) && pgErr.Code == "55006" && attempt < 50 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		break
	}
	if err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, AdminURL())
		if err != nil {
			t.Logf("drop test database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
	return withDatabase(AdminURL(), name)
}

// NewStore opens a store on a new test database.
func NewStore(t testing.TB) (*persistence.Store, string) {
	t.Helper()
	u := NewDatabase(t)
	st, err := persistence.Open(context.Background(), persistence.Options{URL: u}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(st.Close)
	return st, u
}

// template returns the name of a database holding the current schema, creating it once.
// An advisory lock makes concurrent test binaries agree on who builds it.
func template(ctx context.Context, admin *pgx.Conn) (string, error) {
	sum, err := schemaHash()
	if err != nil {
		return "", err
	}
	name := "tuma_tpl_" + sum[:16]
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(hashtext($1))", name); err != nil {
		return "", err
	}
	defer admin.Exec(context.Background(), "SELECT pg_advisory_unlock(hashtext($1))", name) //nolint:errcheck // the lock dies with the connection anyway
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	// Build under a temporary name and rename, so a half-built template is never used.
	tmp := name + "_build"
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{tmp}.Sanitize()+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{tmp}.Sanitize()); err != nil {
		return "", err
	}
	st, err := persistence.Open(ctx, persistence.Options{URL: withDatabase(AdminURL(), tmp), MaxConns: 2}, slog.New(slog.DiscardHandler))
	if err != nil {
		return "", err
	}
	_, _, err = st.Migrate(ctx)
	st.Close()
	if err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s",
		pgx.Identifier{tmp}.Sanitize(), pgx.Identifier{name}.Sanitize())); err != nil {
		return "", err
	}
	return name, nil
}

func schemaHash() (string, error) {
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := fs.ReadFile(migrations.FS, n)
		if err != nil {
			return "", err
		}
		h.Write([]byte(n))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func withDatabase(base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
