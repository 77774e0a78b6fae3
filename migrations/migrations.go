// Package migrations holds Tuma's PostgreSQL schema as numbered, forward-only SQL files.
//
// Files are named NNN_description.sql and applied in order by tern (see persistence.Migrate),
// each in its own transaction, under an advisory lock so concurrent nodes cannot race.
// Never edit a file that has shipped: add a new one.
package migrations

import "embed"

// FS is the embedded set of migration files.
//
//go:embed *.sql
var FS embed.FS
