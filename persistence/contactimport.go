// Contact imports: a CSV's rows merged into the account's contacts as they are read, a batch
// at a time, by a few connections at once, each in a transaction of its own that commits with
// the others once the whole file is in. A file that turns out bad part way (binary, too large)
// or a failed merge rolls every one of them back: nothing of it is ever visible.
//
// Why several transactions: a PostgreSQL backend writes each contact's row and its five index
// entries one after another; on a 2-core box a million-row import over HTTP took 12-13 s in one
// transaction and 8.7-9.2 s in two. The price is that the transactions commit one after another
// within a millisecond: a node or database that dies in that instant can leave part of a file
// imported, which importing the file again completes (what is there is skipped).

package persistence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

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

// ImportOptions shape an import.
type ImportOptions struct {
	Workers int  // transactions merging batches at once (at least one)
	Report  bool // keep the rows not imported, with why, for Rejected
}

// importBatch is how many rows one statement merges: large enough that a statement's
// round trips and planning are noise, small enough that a batch in memory is under 1 MB.
const importBatch = 10_000

// vacuumAfter is how many imported contacts make an import vacuum the table (and refresh its
// statistics) once it has committed. Until vacuum marks the new pages all-visible, a search's
// count reads them from the heap instead of from the name keys alone; without statistics the
// planner, still believing the account has a handful of contacts, plans its searches for that.
// Vacuuming a million new rows takes about 0.3 s; autovacuum would get there too, but later,
// and not at all where it is turned off.
const vacuumAfter = 10_000

// repeatReason is why a row whose phone an earlier row of the file had is not imported.
const repeatReason = "repeats an earlier row of the file"

// ContactImport is an import under way: rows merged in transactions that have not committed.
// Close it whatever happens.
type ContactImport struct {
	account uuid.UUID
	group   *uuid.UUID
	report  bool
	workers []*importWorker

	empty                   bool                // the account had no contacts: no phone to look up
	seen                    map[uint64]struct{} // the file's phones so far
	errors, repeats, unique int64               // rows refused, repeated, and the others
	committed               bool
}

// importWorker is one of an import's transactions, with its staging tables.
type importWorker struct {
	conn     *pgxpool.Conn
	tx       pgx.Tx
	rows     copyRows // the batch being sent
	imported int64
}

// contactsLockClass is the first key of the advisory lock that orders writers of an account's
// contacts (the second is the account's hash): an import holds it exclusively, a new contact
// shared. Imports of one account so never wait on each other's rows, and a contact added during
// an import waits for it instead of racing its merge.
const contactsLockClass = 0x7475 // "tu"

// BeginImport starts an import into the account's contacts, waiting for any import of the
// account already under way.
func (s *Store) BeginImport(ctx context.Context, accountID uuid.UUID, opts ImportOptions) (*ContactImport, error) {
	imp := &ContactImport{account: accountID, report: opts.Report, seen: map[uint64]struct{}{}}
	if err := imp.begin(ctx, s.pool, max(opts.Workers, 1)); err != nil {
		imp.Close(ctx)
		return nil, fmt.Errorf("begin import: %w", err)
	}
	return imp, nil
}

func (imp *ContactImport) begin(ctx context.Context, pool *pgxpool.Pool, workers int) error {
	for range workers {
		w := &importWorker{}
		imp.workers = append(imp.workers, w)
		var err error
		if w.conn, err = pool.Acquire(ctx); err != nil {
			return err
		}
		if w.tx, err = w.conn.Begin(ctx); err != nil {
			return err
		}
	}
	// Under the lock no one else adds the account's contacts: when it has none, no row of the
	// file can meet one (a first import, the largest kind, looks up nothing: 10% of its work).
	// The look is a statement of its own, so it sees what an import it waited for committed.
	lead := imp.workers[0].tx
	if _, err := lead.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2::uuid::text))`, contactsLockClass, imp.account); err != nil {
		return err
	}
	var has bool
	if err := lead.QueryRow(ctx, `SELECT EXISTS (SELECT FROM contacts WHERE account_id = $1)`, imp.account).Scan(&has); err != nil {
		return err
	}
	imp.empty = !has
	// A batch's statements are too cheap to be worth compiling (JIT costs 0.1 s a statement).
	setup := `SET LOCAL jit = off`
	if !imp.empty {
		setup += `; CREATE TEMPORARY TABLE import_batch (line integer NOT NULL, id uuid NOT NULL, phone text COLLATE "C" NOT NULL,
			first_name text NOT NULL, last_name text NOT NULL, reason text) ON COMMIT DROP`
	}
	if imp.report {
		setup += `; CREATE TEMPORARY TABLE import_rejected (line integer NOT NULL, phone text NOT NULL, first_name text NOT NULL,
			last_name text NOT NULL, reason text NOT NULL) ON COMMIT DROP`
	}
	for _, w := range imp.workers {
		if _, err := w.tx.Exec(ctx, setup); err != nil {
			return err
		}
	}
	return nil
}

// SetGroup puts every contact the import adds in the group, which must be the account's
// (else ErrUnknownGroup). Each transaction holds the group until it commits, so it cannot be
// deleted under the import. Call it before Run.
func (imp *ContactImport) SetGroup(ctx context.Context, groupID uuid.UUID) error {
	for _, w := range imp.workers {
		var one int
		err := w.tx.QueryRow(ctx, `SELECT 1 FROM contact_groups WHERE id = $1 AND account_id = $2 FOR KEY SHARE`, groupID, imp.account).Scan(&one)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return ErrUnknownGroup
		case err != nil:
			return fmt.Errorf("import group: %w", err)
		}
	}
	imp.group = &groupID
	return nil
}

// Run merges the rows next yields (until it reports no more) as they come, a batch at a time
// on whichever transaction is free: the file is never held whole. The first of a phone's rows
// is the one merged; later ones are repeats.
func (imp *ContactImport) Run(ctx context.Context, next func() (ImportRow, bool, error)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	batches := make(chan []ImportRow, len(imp.workers))
	// Merged batches come back to be filled again: memory stays a few batches, not garbage
	// the size of the file.
	spare := make(chan []ImportRow, 2*len(imp.workers)+1)
	var wg sync.WaitGroup
	for _, w := range imp.workers {
		wg.Go(func() {
			for b := range batches {
				if ctx.Err() != nil {
					continue // another failed: drain
				}
				n, err := w.merge(ctx, imp, b)
				if err != nil {
					cancel(fmt.Errorf("merge contacts: %w", err))
					continue
				}
				w.imported += n
				clear(b)
				select {
				case spare <- b[:0]:
				default:
				}
			}
		})
	}
	err := imp.feed(ctx, next, batches, spare)
	close(batches)
	wg.Wait()
	if cause := context.Cause(ctx); err == nil || errors.Is(err, context.Canceled) && cause != nil {
		err = cause
	}
	return err
}

// feed reads the rows into batches, telling repeats from first sightings as it goes.
func (imp *ContactImport) feed(ctx context.Context, next func() (ImportRow, bool, error), batches chan<- []ImportRow, spare <-chan []ImportRow) error {
	batch := make([]ImportRow, 0, importBatch)
	send := func() error {
		select {
		case batches <- batch:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case batch = <-spare:
		default:
			batch = make([]ImportRow, 0, importBatch)
		}
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, ok, err := next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch key, valid := phoneKey(r.Phone); {
		case r.Reason != "" || !valid:
			if r.Reason == "" {
				r.Reason = "not a valid Kenyan mobile number"
			}
			imp.errors++
		default:
			if _, dup := imp.seen[key]; dup {
				r.Reason = repeatReason
				imp.repeats++
				break
			}
			imp.seen[key] = struct{}{}
			imp.unique++
		}
		if r.Reason != "" && !imp.report {
			continue // only the report needs it
		}
		if batch = append(batch, r); len(batch) == importBatch {
			if err := send(); err != nil {
				return err
			}
		}
	}
	if len(batch) == 0 {
		return nil
	}
	return send()
}

// phoneKey is an E.164 Kenyan number as an integer (+254712345678 is 254712345678).
func phoneKey(e164 string) (uint64, bool) {
	if len(e164) != 13 || e164[0] != '+' {
		return 0, false
	}
	n, err := strconv.ParseUint(e164[1:], 10, 64)
	return n, err == nil
}

// merge adds a batch's rows whose phone the account does not have; in a report, it keeps the
// others with why.
func (w *importWorker) merge(ctx context.Context, imp *ContactImport, rows []ImportRow) (int64, error) {
	if imp.empty {
		return w.copyBatch(ctx, imp, rows)
	}
	return w.mergeBatch(ctx, imp, rows)
}

// copyBatch copies a batch straight into the account's contacts, which had none when the
// import began: every row the file has not repeated is new. Refused rows go to the report.
func (w *importWorker) copyBatch(ctx context.Context, imp *ContactImport, rows []ImportRow) (int64, error) {
	c, refused := &w.rows, 0
	c.reset()
	for i := range rows {
		r := &rows[i]
		if r.Reason != "" {
			refused++
			continue
		}
		c.row(6)
		c.uuid(imp.account)
		c.uuid(NewID())
		c.text(r.Phone)
		c.text(r.FirstName)
		c.text(r.LastName)
		c.optUUID(imp.group)
	}
	n, err := c.copyTo(ctx, w.tx, "contacts", "account_id, id, phone, first_name, last_name, group_id")
	if err != nil || refused == 0 {
		return n, err
	}
	c.reset()
	for i := range rows {
		if r := &rows[i]; r.Reason != "" {
			c.row(5)
			c.int4(int32(r.Line))
			c.text(r.Phone)
			c.text(r.FirstName)
			c.text(r.LastName)
			c.text(r.Reason)
		}
	}
	_, err = c.copyTo(ctx, w.tx, "import_rejected", "line, phone, first_name, last_name, reason")
	return n, err
}

// mergeBatch stages a batch and adds the rows whose phone the account does not have.
func (w *importWorker) mergeBatch(ctx context.Context, imp *ContactImport, rows []ImportRow) (int64, error) {
	c := &w.rows
	c.reset()
	for i := range rows {
		r := &rows[i]
		c.row(6)
		c.int4(int32(r.Line))
		c.uuid(NewID())
		c.text(r.Phone)
		c.text(r.FirstName)
		c.text(r.LastName)
		if r.Reason == "" {
			c.null()
		} else {
			c.text(r.Reason)
		}
	}
	if _, err := c.copyTo(ctx, w.tx, "import_batch", "line, id, phone, first_name, last_name, reason"); err != nil {
		return 0, err
	}
	// Each staged phone is looked up in the account's unique key. The planner's statistics know
	// nothing of the rows this import added, so it believes the account has about one contact,
	// and any index on account_id finds it as cheaply: it chose to read all of them for every
	// phone (minutes a batch by the millionth row). Two things leave it no such choice: the
	// lookup is a subquery it may not turn into a join (OFFSET 0), and the account is a value
	// it cannot see when planning ((SELECT $1)), so it counts on an account's average share of
	// the table, for which the unique key is the one cheap path.
	tag, err := w.tx.Exec(ctx, `INSERT INTO contacts (account_id, id, phone, first_name, last_name, group_id)
		SELECT $1, b.id, b.phone, b.first_name, b.last_name, $2 FROM import_batch b
		WHERE b.reason IS NULL
			AND NOT EXISTS (SELECT FROM contacts c WHERE c.account_id = (SELECT $1::uuid) AND c.phone = b.phone OFFSET 0)`,
		imp.account, imp.group)
	if err != nil {
		return 0, err
	}
	if imp.report {
		if _, err := w.tx.Exec(ctx, `INSERT INTO import_rejected
			SELECT b.line, b.phone, b.first_name, b.last_name, coalesce(b.reason,
				CASE WHEN c.opted_out_at IS NOT NULL THEN 'a contact with this phone opted out' ELSE 'a contact with this phone exists already' END)
			FROM import_batch b LEFT JOIN LATERAL (
				SELECT c.id, c.opted_out_at FROM contacts c WHERE c.account_id = (SELECT $1::uuid) AND c.phone = b.phone OFFSET 0) c ON true
			WHERE b.reason IS NOT NULL OR c.id <> b.id`, imp.account); err != nil {
			return 0, err
		}
	}
	_, err = w.tx.Exec(ctx, `TRUNCATE import_batch`)
	return tag.RowsAffected(), err
}

// Result says what the import did (so far).
func (imp *ContactImport) Result() ImportResult {
	var imported int64
	for _, w := range imp.workers {
		imported += w.imported
	}
	return ImportResult{Imported: imported, Skipped: imp.repeats + imp.unique - imported, Errors: imp.errors}
}

// Rejected streams the rows that were not imported, in file order, with why: rows refused
// before the merge, repeats within the file, and phones the account had already. The import
// must have been begun with Report; call it after Run, before Commit.
func (imp *ContactImport) Rejected(ctx context.Context, each func(ImportRow) error) error {
	if !imp.report {
		return errors.New("rejected contacts: the import keeps no report")
	}
	// Each transaction kept its own batches' rows: merge them by line.
	heads := make([]*rejectedRows, 0, len(imp.workers))
	defer func() {
		for _, h := range heads {
			h.rows.Close()
		}
	}()
	for _, w := range imp.workers {
		rows, err := w.tx.Query(ctx, `SELECT line, phone, first_name, last_name, reason FROM import_rejected ORDER BY line`)
		if err != nil {
			return fmt.Errorf("rejected contacts: %w", err)
		}
		h := &rejectedRows{rows: rows}
		heads = append(heads, h)
		if err := h.advance(); err != nil {
			return err
		}
	}
	for {
		var low *rejectedRows
		for _, h := range heads {
			if h.ok && (low == nil || h.row.Line < low.row.Line) {
				low = h
			}
		}
		if low == nil {
			return nil
		}
		if err := each(low.row); err != nil {
			return err
		}
		if err := low.advance(); err != nil {
			return err
		}
	}
}

// rejectedRows is one transaction's rejected rows, read in line order.
type rejectedRows struct {
	rows pgx.Rows
	row  ImportRow
	ok   bool
}

func (h *rejectedRows) advance() error {
	if h.ok = h.rows.Next(); !h.ok {
		if err := h.rows.Err(); err != nil {
			return fmt.Errorf("rejected contacts: %w", err)
		}
		return nil
	}
	if err := h.rows.Scan(&h.row.Line, &h.row.Phone, &h.row.FirstName, &h.row.LastName, &h.row.Reason); err != nil {
		return fmt.Errorf("rejected contacts: %w", err)
	}
	return nil
}

// Commit makes the import durable: the workers' transactions commit together, then the lead's,
// which holds the account's lock. Released first (all at once), the lock let the next import
// or add of the account look for phones before the other workers' rows were visible, and meet
// them in the unique key: a 500 for two imports of one file at once.
func (imp *ContactImport) Commit(ctx context.Context) error {
	errs := make([]error, len(imp.workers))
	var wg sync.WaitGroup
	for i, w := range imp.workers[1:] {
		wg.Go(func() { errs[i+1] = w.tx.Commit(ctx) })
	}
	wg.Wait()
	errs[0] = imp.workers[0].tx.Commit(ctx)
	imp.committed = true
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("commit import: %w", err)
	}
	if imp.Result().Imported >= vacuumAfter {
		// The import is durable and answered as such whatever this does: a failure only
		// leaves the table to autovacuum.
		_, _ = imp.workers[0].conn.Exec(ctx, `VACUUM (ANALYZE) contacts`)
	}
	return nil
}

// Close ends the import, rolling back whatever was not committed, and gives the connections
// back.
func (imp *ContactImport) Close(ctx context.Context) {
	for _, w := range imp.workers {
		if w.tx != nil && !imp.committed {
			_ = w.tx.Rollback(context.WithoutCancel(ctx))
		}
		if w.conn != nil {
			w.conn.Release()
		}
	}
}
