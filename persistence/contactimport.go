// Contact imports: a CSV's rows copied into a staging table as they are read, then merged into
// the account's contacts in one statement, in one transaction.

package persistence

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ImportRow is one row of an import: a valid phone (E.164) and names, or a row refused before
// the merge with its reason (Phone is then the raw text).
type ImportRow struct {
	Line      int
	Phone     string
	FirstName string
	LastName  string
	Reason    string // "" for a row to merge
}

// ImportResult says what an import did.
type ImportResult struct {
	Imported int64 // new contacts
	Skipped  int64 // phones the account had already, and repeats within the file
	Errors   int64 // rows refused before the merge (invalid phones, malformed rows)
}

// ContactImport is an import under way: rows staged, not yet merged. Close it whatever
// happens; until Merge nothing is visible.
type ContactImport struct {
	conn     *pgxpool.Conn
	tx       pgx.Tx
	account  uuid.UUID
	errors   int64
	staged   int64
	imported int64
}

// vacuumAfter is how many imported contacts make an import vacuum the table (and refresh its
// statistics) once it has committed. Without statistics the planner, still believing an account
// has a handful of contacts, scans all of its million instead of using the search index (1 s a
// search instead of a few ms); until vacuum marks the new pages all-visible, counting a common
// name's matches reads each of them from the heap (20-30 ms instead of a few on 1,000,000
// contacts). Vacuuming a million new rows takes about 0.2 s; autovacuum would get there too, but
// later, and not at all where it is turned off.
const vacuumAfter = 10_000

// mergeWorkMem lets the merge's two sorts (one to find the first of each phone, one to insert
// in id order) of a million staged rows run in memory instead of spilling to disk.
const mergeWorkMem = "256MB"

// BeginImport starts an import into the account's contacts.
func (s *Store) BeginImport(ctx context.Context, accountID uuid.UUID) (*ContactImport, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin import: %w", err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		conn.Release()
		return nil, fmt.Errorf("begin import: %w", err)
	}
	imp := &ContactImport{conn: conn, tx: tx, account: accountID}
	if _, err := tx.Exec(ctx, `CREATE TEMPORARY TABLE contact_import (
			line integer NOT NULL, id uuid NOT NULL, phone text NOT NULL, first_name text NOT NULL, last_name text NOT NULL,
			reason text) ON COMMIT DROP`); err != nil {
		imp.Close(ctx)
		return nil, fmt.Errorf("begin import: %w", err)
	}
	return imp, nil
}

// Stage copies the rows next yields (until it reports no more) into the staging table, as
// they come: the file is never held whole.
func (imp *ContactImport) Stage(ctx context.Context, next func() (ImportRow, bool, error)) error {
	row := make([]any, 6)
	n, err := imp.tx.CopyFrom(ctx, pgx.Identifier{"contact_import"}, []string{"line", "id", "phone", "first_name", "last_name", "reason"},
		pgx.CopyFromFunc(func() ([]any, error) {
			r, ok, err := next()
			if err != nil || !ok {
				return nil, err
			}
			var reason *string
			if r.Reason != "" {
				reason = &r.Reason
				imp.errors++
			}
			row[0], row[1], row[2], row[3], row[4], row[5] = int32(r.Line), NewID(), r.Phone, r.FirstName, r.LastName, reason
			return row, nil
		}))
	imp.staged += n
	if err != nil {
		return fmt.Errorf("stage contacts: %w", err)
	}
	return nil
}

// Merge adds the staged rows the account does not have yet (the first of repeats within the
// file), in the group when given, and commits. A group not the account's is ErrUnknownGroup.
func (imp *ContactImport) Merge(ctx context.Context, groupID *uuid.UUID) (ImportResult, error) {
	if groupID != nil {
		var one int
		if err := imp.tx.QueryRow(ctx, `SELECT 1 FROM contact_groups WHERE id = $1 AND account_id = $2`, *groupID, imp.account).
			Scan(&one); err != nil {
			if err == pgx.ErrNoRows {
				return ImportResult{}, ErrUnknownGroup
			}
			return ImportResult{}, fmt.Errorf("import group: %w", err)
		}
	}
	if _, err := imp.tx.Exec(ctx, `SET LOCAL work_mem = '`+mergeWorkMem+`'`); err != nil {
		return ImportResult{}, fmt.Errorf("merge contacts: %w", err)
	}
	var imported int64
	err := imp.tx.QueryRow(ctx, `WITH firsts AS (
			SELECT DISTINCT ON (phone) line, id, phone, first_name, last_name FROM contact_import
			WHERE reason IS NULL ORDER BY phone, line),
		added AS (
			INSERT INTO contacts (account_id, id, phone, first_name, last_name, group_id)
			SELECT $1, id, phone, first_name, last_name, $2 FROM firsts ORDER BY id
			ON CONFLICT (account_id, phone) DO NOTHING RETURNING 1)
		SELECT count(*) FROM added`, imp.account, groupID).Scan(&imported)
	if err != nil {
		return ImportResult{}, fmt.Errorf("merge contacts: %w", err)
	}
	imp.imported = imported
	return ImportResult{Imported: imported, Skipped: imp.staged - imp.errors - imported, Errors: imp.errors}, nil
}

// Rejected streams the rows that were not imported, in file order, with why: each row refused
// before the merge, repeats within the file, and phones the account had already. Call it after
// Merge, before Commit.
func (imp *ContactImport) Rejected(ctx context.Context, each func(ImportRow) error) error {
	rows, err := imp.tx.Query(ctx, `SELECT s.line, s.phone, s.first_name, s.last_name,
			CASE WHEN s.reason IS NOT NULL THEN s.reason
				WHEN EXISTS (SELECT 1 FROM contact_import d WHERE d.phone = s.phone AND d.reason IS NULL AND d.line < s.line)
					THEN 'repeats an earlier row of the file'
				WHEN c.opted_out_at IS NOT NULL THEN 'a contact with this phone opted out'
				ELSE 'a contact with this phone exists already' END
		FROM contact_import s LEFT JOIN contacts c ON c.account_id = $1 AND c.phone = s.phone
		WHERE s.reason IS NOT NULL OR c.id IS DISTINCT FROM s.id
		ORDER BY s.line`, imp.account)
	if err != nil {
		return fmt.Errorf("rejected contacts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r ImportRow
		if err := rows.Scan(&r.Line, &r.Phone, &r.FirstName, &r.LastName, &r.Reason); err != nil {
			return fmt.Errorf("rejected contacts: %w", err)
		}
		if err := each(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Commit makes the merge durable.
func (imp *ContactImport) Commit(ctx context.Context) error {
	if err := imp.tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit import: %w", err)
	}
	if imp.imported >= vacuumAfter {
		// The import is durable and answered as such whatever this does: a failure only
		// leaves the table to autovacuum.
		_, _ = imp.conn.Exec(ctx, `VACUUM (ANALYZE) contacts`)
	}
	return nil
}

// Close ends the import, rolling back whatever was not committed, and gives the connection back.
func (imp *ContactImport) Close(ctx context.Context) {
	_ = imp.tx.Rollback(context.WithoutCancel(ctx))
	imp.conn.Release()
}
