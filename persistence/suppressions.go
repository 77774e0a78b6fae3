// Suppressions: the numbers an account may never message (CONTRACT §15).

package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// SuppressionSource says how a number came to be suppressed.
type SuppressionSource string

const (
	SuppressedByAPI     SuppressionSource = "api"     // POST /suppressions, the dashboard, an import
	SuppressedByKeyword SuppressionSource = "keyword" // the number sent STOP
	SuppressedByContact SuppressionSource = "contact" // its contact was opted out
)

// Suppression is one suppressed number of an account.
type Suppression struct {
	NSN       uint32 // the 9 digits after +254
	Source    SuppressionSource
	Reason    string
	CreatedAt time.Time
}

// E164 is the number as the API shows it.
func (s Suppression) E164() string { return Recipient{NSN: s.NSN}.E164() }

// SuppressionCursor is the last suppression of a page (the list runs newest first).
type SuppressionCursor struct {
	CreatedAt time.Time
	NSN       uint32
}

// SuppressionFilter narrows a list: numbers from From to To (NSNs, inclusive; zero To: no
// bound), after a cursor.
type SuppressionFilter struct {
	From, To uint32
	After    *SuppressionCursor
}

// Suppress adds a number to an account's list; added is false when it was there already (and
// then nothing changes, its source and reason included).
func (s *Store) Suppress(ctx context.Context, accountID uuid.UUID, nsn uint32, source SuppressionSource, reason string) (Suppression, bool, error) {
	out := Suppression{NSN: nsn, Source: source, Reason: reason}
	err := s.pool.QueryRow(ctx, `INSERT INTO suppressions (account_id, nsn, source, reason) VALUES ($1, $2, $3, $4)
		ON CONFLICT DO NOTHING RETURNING created_at`, accountID, int32(nsn), string(source), reason).Scan(&out.CreatedAt)
	if err == nil {
		return out, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return out, false, fmt.Errorf("suppress: %w", err)
	}
	out, err = s.suppression(ctx, accountID, nsn)
	return out, false, err
}

func (s *Store) suppression(ctx context.Context, accountID uuid.UUID, nsn uint32) (Suppression, error) {
	out := Suppression{NSN: nsn}
	var source string
	err := s.pool.QueryRow(ctx, `SELECT source, reason, created_at FROM suppressions WHERE account_id = $1 AND nsn = $2`,
		accountID, int32(nsn)).Scan(&source, &out.Reason, &out.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, ErrNotFound
	}
	if err != nil {
		return out, fmt.Errorf("suppression: %w", err)
	}
	out.Source = SuppressionSource(source)
	return out, nil
}

// Unsuppress removes a number from an account's list (ErrNotFound: it was not there). With
// sources given, only a suppression of one of them is removed (START lifts a STOP, not a
// suppression the account made).
func (s *Store) Unsuppress(ctx context.Context, accountID uuid.UUID, nsn uint32, sources ...SuppressionSource) error {
	src := make([]string, len(sources))
	for i, x := range sources {
		src[i] = string(x)
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM suppressions WHERE account_id = $1 AND nsn = $2
		AND (cardinality($3::text[]) = 0 OR source = ANY($3))`, accountID, int32(nsn), src)
	if err != nil {
		return fmt.Errorf("unsuppress: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// Suppressions lists an account's suppressions newest first, limit at most.
func (s *Store) Suppressions(ctx context.Context, accountID uuid.UUID, f SuppressionFilter, limit int) ([]Suppression, error) {
	to := int64(f.To)
	if to == 0 {
		to = 999_999_999
	}
	after := SuppressionCursor{CreatedAt: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}
	if f.After != nil {
		after = *f.After
	}
	rows, err := s.pool.Query(ctx, `SELECT nsn, source, reason, created_at FROM suppressions
		WHERE account_id = $1 AND nsn BETWEEN $2 AND $3 AND (created_at, nsn) < ($4, $5)
		ORDER BY created_at DESC, nsn DESC LIMIT $6`, accountID, int64(f.From), to, after.CreatedAt, int64(after.NSN), limit)
	if err != nil {
		return nil, fmt.Errorf("suppressions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Suppression, error) {
		var x Suppression
		var nsn int32
		var source string
		err := r.Scan(&nsn, &source, &x.Reason, &x.CreatedAt)
		x.NSN, x.Source = uint32(nsn), SuppressionSource(source)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("suppressions: %w", err)
	}
	return out, nil
}

// SuppressedNumbers is an account's whole list as sorted NSNs: what its tenant actor holds to
// leave suppressed numbers out of a send. A million numbers are 4 MB, read in one column.
func (s *Store) SuppressedNumbers(ctx context.Context, accountID uuid.UUID) ([]uint32, error) {
	var nsns []int32
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(array_agg(nsn ORDER BY nsn), '{}') FROM suppressions WHERE account_id = $1`,
		accountID).Scan(&nsns); err != nil {
		return nil, fmt.Errorf("suppressed numbers: %w", err)
	}
	out := make([]uint32, len(nsns))
	for i, n := range nsns {
		out[i] = uint32(n)
	}
	return out, nil
}

// SuppressedSince returns which of a job's recipients (NSNs) its account suppressed since the
// job was accepted: its dispatch fails them (OPTED_OUT) and refunds them. Numbers suppressed
// before were left out at acceptance; the margin covers a suppression committed while the
// job was being accepted. Only the (few) suppressions since are read, by index.
//
// A keyword's confirmation (SourceKeyword) is written in the transaction that changed the
// list, so it has no margin: a STOP's goes to the number that number has just suppressed (it
// shares the job's created_at), while one suppressed after it is left out as any other.
func (s *Store) SuppressedSince(ctx context.Context, accountID, jobID uuid.UUID, nsns []uint32) (map[uint32]bool, error) {
	out := map[uint32]bool{}
	if len(nsns) == 0 {
		return out, nil
	}
	ints := make([]int32, len(nsns))
	for i, n := range nsns {
		ints[i] = int32(n)
	}
	rows, err := s.pool.Query(ctx, `SELECT nsn FROM suppressions
		WHERE account_id = $1 AND created_at >= (SELECT CASE WHEN source = 'keyword' THEN created_at + interval '1 microsecond'
				ELSE created_at - interval '5 minutes' END FROM jobs WHERE id = $2)
			AND nsn = ANY($3::int[])`, accountID, jobID, ints)
	if err != nil {
		return nil, fmt.Errorf("suppressed since: %w", err)
	}
	hit, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("suppressed since: %w", err)
	}
	for _, n := range hit {
		out[uint32(n)] = true
	}
	return out, nil
}

// SuppressMany adds numbers to an account's list in one statement (an import's batch), each
// with its reason; numbers there already, or repeated in the batch, are left as they are. It
// returns how many were added.
func (s *Store) SuppressMany(ctx context.Context, accountID uuid.UUID, nsns []uint32, reasons []string, source SuppressionSource) (int64, error) {
	if len(nsns) == 0 {
		return 0, nil
	}
	ints := make([]int32, len(nsns))
	for i, n := range nsns {
		ints[i] = int32(n)
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO suppressions (account_id, nsn, source, reason)
		SELECT $1, n, $3, r FROM unnest($2::integer[], $4::text[]) AS u(n, r) ON CONFLICT DO NOTHING`,
		accountID, ints, string(source), reasons)
	if err != nil {
		return 0, fmt.Errorf("suppress many: %w", err)
	}
	return tag.RowsAffected(), nil
}
