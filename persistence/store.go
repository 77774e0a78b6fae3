// Package persistence is Tuma's system of record in PostgreSQL (pgx): accounts, credentials,
// wallets and their ledger, jobs and messages, notifications and idempotency keys.
//
// Methods take a context first and return typed errors (ErrNotFound, ErrEmailTaken, …) that the
// transport layer maps to HTTP; nothing here knows about HTTP.
package persistence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options configures the connection pools.
type Options struct {
	URL         string // postgres:// URL; the database it names is created when missing
	MaxConns    int32  // size of the general pool; 0 keeps pgx's default
	AcceptConns int32  // size of the pool kept for accepting sends (default 4)
	WebhookKey  []byte // seals webhook secrets at rest; empty: a fixed development key
	// WebhookCache is how many messages the node remembers from its status flushes for the
	// webhook deliveries that describe them (webhookcache.go); 0 remembers none.
	WebhookCache int
	Faults       Faults // deliberate defects, for the drills' own tests only (faults_on.go)
}

// Store is the PostgreSQL store. It is safe for concurrent use.
//
// Accepting a send is the one write a caller waits on, so it has its own small pool: it
// never queues for a connection behind the engine's bulk work (expansions, status flushes).
type Store struct {
	pool   *pgxpool.Pool
	accept *pgxpool.Pool
	log    *slog.Logger
	faults Faults
	hooks  hookView // which accounts want which webhook events (webhookview.go)
	// hookCache is the messages recent flushes gave webhook events (webhookcache.go).
	hookCache *hookCache
}

// Open connects to PostgreSQL, creating the database named in the URL if it does not exist.
func Open(ctx context.Context, opts Options, log *slog.Logger) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		registerUUID(c.TypeMap())
		return nil
	}
	if err := ensureDatabase(ctx, cfg.ConnConfig, log); err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping database %q: %w", cfg.ConnConfig.Database, err)
	}
	acfg := cfg.Copy()
	acfg.MaxConns = opts.AcceptConns
	if acfg.MaxConns <= 0 {
		acfg.MaxConns = 4
	}
	accept, err := pgxpool.NewWithConfig(ctx, acfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open accept pool: %w", err)
	}
	st := &Store{pool: pool, accept: accept, log: log, faults: opts.Faults, hookCache: newHookCache(opts.WebhookCache)}
	if st.hooks.aead, err = webhookAEAD(opts.WebhookKey); err != nil {
		st.Close()
		return nil, fmt.Errorf("webhook key: %w", err)
	}
	return st, nil
}

// Close closes every pooled connection.
func (s *Store) Close() {
	s.pool.Close()
	s.accept.Close()
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Stats reports the pool's state, for metrics.
func (s *Store) Stats() *pgxpool.Stat { return s.pool.Stat() }

// ensureDatabase creates cfg.Database through the maintenance database when it is missing,
// so a fresh machine needs no manual createdb.
func ensureDatabase(ctx context.Context, cfg *pgx.ConnConfig, log *slog.Logger) error {
	name := cfg.Database
	if name == "" || name == "postgres" {
		return nil
	}
	admin := cfg.Copy()
	admin.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, admin)
	if err != nil {
		// Without access to the maintenance database, fall through: connecting to the target
		// will give the clearer error (or succeed if it already exists).
		log.Debug("cannot reach maintenance database to check target exists", slog.Any("error", err))
		return nil
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("check database %q exists: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database: another node won the race
		return nil
	}
	if err != nil {
		return fmt.Errorf("create database %q: %w", name, err)
	}
	log.Info("created database", slog.String("database", name))
	return nil
}
