package persistence

import (
	"context"
	"fmt"

	"github.com/jackc/tern/v2/migrate"

	"github.com/tuma-sms/tuma/migrations"
)

// versionTable records which migrations have been applied.
const versionTable = "public.schema_version"

// Migrate applies every pending migration. tern holds a PostgreSQL advisory lock for the
// duration, so nodes starting together apply each migration once.
func (s *Store) Migrate(ctx context.Context) (from, to int32, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("acquire connection for migrations: %w", err)
	}
	defer conn.Release()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), versionTable)
	if err != nil {
		return 0, 0, fmt.Errorf("create migrator: %w", err)
	}
	if err := m.LoadMigrations(migrations.FS); err != nil {
		return 0, 0, fmt.Errorf("load migrations: %w", err)
	}
	from, err = m.GetCurrentVersion(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("read schema version: %w", err)
	}
	if err := m.Migrate(ctx); err != nil {
		return from, 0, fmt.Errorf("migrate: %w", err)
	}
	to, err = m.GetCurrentVersion(ctx)
	if err != nil {
		return from, 0, fmt.Errorf("read schema version: %w", err)
	}
	if to != from {
		// Cached statement plans may describe the old schema.
		s.pool.Reset()
	}
	return from, to, nil
}
