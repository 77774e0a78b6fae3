// Contacts: an account's address book, its groups, search, and opting out.

package persistence

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Contact is one entry of an account's address book.
type Contact struct {
	ID        uuid.UUID
	AccountID uuid.UUID
	Phone     string // E.164
	FirstName string
	LastName  string
	GroupID   *uuid.UUID
	OptedOut  bool
	CreatedAt time.Time
}

// NewContact is a contact about to be added.
type NewContact struct {
	AccountID uuid.UUID
	Phone     string // E.164
	FirstName string
	LastName  string
	GroupID   *uuid.UUID
}

// Group is a named set of an account's contacts.
type Group struct {
	ID           uuid.UUID
	AccountID    uuid.UUID
	Name         string
	Description  string
	ContactCount int64 // active contacts
	CreatedAt    time.Time
}

// Errors of contact operations.
var (
	ErrContactExists   = errors.New("a contact with this phone exists already")
	ErrContactOptedOut = errors.New("a contact with this phone opted out")
	ErrUnknownGroup    = errors.New("no such group in this account")
)

const contactColumns = `id, account_id, phone, first_name, last_name, group_id, opted_out_at IS NOT NULL, created_at`

func scanContact(row pgx.Row) (Contact, error) {
	var c Contact
	err := row.Scan(&c.ID, &c.AccountID, &c.Phone, &c.FirstName, &c.LastName, &c.GroupID, &c.OptedOut, &c.CreatedAt)
	return c, err
}

// ContactFilter narrows a contact list.
type ContactFilter struct {
	GroupID *uuid.UUID
	Search  string // already normalised (see SearchTerm)
}

// fewMatches is how many matches of a search are read whole and sorted for a page, rather than
// found by walking the account's contacts newest first: the planner cannot tell a search that
// matches 1,000 of a million contacts (the walk reads the million, 1-2 s) from one that matches
// 50,000 (the walk stops after a few hundred), but the count just made can.
const fewMatches = 10_000

// ListContacts returns a page of the account's active contacts, newest first, and how many
// match.
func (s *Store) ListContacts(ctx context.Context, accountID uuid.UUID, f ContactFilter, p Page) ([]Contact, int64, error) {
	where := []string{"account_id = $1", "opted_out_at IS NULL"}
	args := []any{accountID}
	if f.GroupID != nil {
		args = append(args, *f.GroupID)
		where = append(where, fmt.Sprintf("group_id = $%d", len(args)))
	}
	base := strings.Join(where, " AND ") // the contacts searched
	var sr search
	if f.Search != "" {
		sr = newSearch(f.Search, len(args)+1)
		args = append(args, sr.args...)
		where = append(where, sr.cond)
	}
	cond := strings.Join(where, " AND ")
	var total int64
	var err error
	switch {
	case sr.word != "" && f.GroupID == nil:
		total, err = s.countWord(ctx, accountID, sr.word)
	case f.Search == "":
		total, err = s.activeContacts(ctx, accountID, f.GroupID)
	default:
		if err = s.pool.QueryRow(ctx, `SELECT count(*) FROM contacts WHERE `+cond, args...).Scan(&total); err != nil {
			err = fmt.Errorf("count contacts: %w", err)
		}
	}
	if err != nil {
		return nil, 0, err
	}
	if p.After != nil {
		args = append(args, *p.After)
		after := fmt.Sprintf(" AND id < $%d", len(args))
		cond, base = cond+after, base+after
	}
	args = append(args, p.Size, p.offset())
	page := fmt.Sprintf(" ORDER BY id DESC LIMIT $%d OFFSET $%d", len(args)-1, len(args))
	query := `SELECT ` + contactColumns + ` FROM contacts WHERE ` + cond + page
	if f.Search != "" && total <= fewMatches {
		// Names recur all through an address book; phone numbers follow how they were
		// imported, so their matches may all be old, and the newest contacts hold none.
		if byName := strings.Trim(f.Search, "0123456789") != ""; byName {
			out, ok, err := s.probeNewest(ctx, accountID, f.GroupID, total, p, base, sr.cond, page, args)
			if ok || err != nil {
				return out, total, err
			}
		}
		query = `WITH matches AS MATERIALIZED (SELECT ` + contactColumns + ` FROM contacts WHERE ` + cond + `)
			SELECT * FROM matches` + page
	}
	out, err := s.listContacts(ctx, query, args)
	return out, total, err
}

func (s *Store) listContacts(ctx context.Context, query string, args []any) ([]Contact, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list contacts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Contact, error) { return scanContact(r) })
	if err != nil {
		return nil, fmt.Errorf("list contacts: %w", err)
	}
	return out, nil
}

// CreateContact adds a contact. A phone the account has already is ErrContactExists, or
// ErrContactOptedOut when that contact opted out; a group not the account's is ErrUnknownGroup.
func (s *Store) CreateContact(ctx context.Context, n NewContact) (Contact, error) {
	// An import of the account under way is waited for (contactsLockClass): its merge looks
	// phones up before it writes them.
	c, err := scanContact(s.pool.QueryRow(ctx, `INSERT INTO contacts (account_id, id, phone, first_name, last_name, group_id)
		SELECT $1, $2, $3, $4, $5, $6 FROM (SELECT pg_advisory_xact_lock_shared($7, hashtext($1::uuid::text))) AS importing
		WHERE $6::uuid IS NULL OR EXISTS (SELECT 1 FROM contact_groups WHERE id = $6 AND account_id = $1 FOR KEY SHARE)
		RETURNING `+contactColumns, n.AccountID, NewID(), n.Phone, n.FirstName, n.LastName, n.GroupID, contactsLockClass))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Contact{}, ErrUnknownGroup
	case isUniqueViolation(err, "contacts_phone_key"):
		var opted bool
		if qerr := s.pool.QueryRow(ctx, `SELECT opted_out_at IS NOT NULL FROM contacts WHERE account_id = $1 AND phone = $2`,
			n.AccountID, n.Phone).Scan(&opted); qerr == nil && opted {
			return Contact{}, ErrContactOptedOut
		}
		return Contact{}, ErrContactExists
	case err != nil:
		return Contact{}, fmt.Errorf("create contact: %w", err)
	}
	return c, nil
}

// OptOutContact marks one of the account's active contacts opted out: it is no longer listed
// and no campaign messages it again; its history stays. Its number joins the account's
// suppression list (source contact) in the same statement, so no send messages it either:
// the number is returned, with whether it was added (false: it was suppressed already).
func (s *Store) OptOutContact(ctx context.Context, accountID, id uuid.UUID) (uint32, bool, error) {
	var phone *string
	var added *int32
	err := s.pool.QueryRow(ctx, `WITH o AS (UPDATE contacts SET opted_out_at = now()
			WHERE account_id = $1 AND id = $2 AND opted_out_at IS NULL RETURNING phone),
		s AS (INSERT INTO suppressions (account_id, nsn, source, reason)
			SELECT $1, substr(phone, 5)::integer, 'contact', 'the contact was opted out' FROM o ON CONFLICT DO NOTHING RETURNING nsn)
		SELECT (SELECT phone FROM o), (SELECT nsn FROM s)`, accountID, id).Scan(&phone, &added)
	if err != nil {
		return 0, false, fmt.Errorf("opt out contact: %w", err)
	}
	if phone == nil {
		return 0, false, ErrNotFound
	}
	nsn, err := ParseE164(*phone)
	if err != nil {
		return 0, false, fmt.Errorf("opt out contact: %w", err)
	}
	return nsn, added != nil, nil
}

// Groups lists the account's groups, newest first, with their active contacts' count.
func (s *Store) Groups(ctx context.Context, accountID uuid.UUID) ([]Group, error) {
	// The counts are kept by the writes (migration 019): counting would read every contact.
	rows, err := s.pool.Query(ctx, `SELECT g.id, g.account_id, g.name, g.description, g.created_at, coalesce(n.active, 0)
		FROM contact_groups g LEFT JOIN (SELECT group_id, sum(active)::bigint AS active FROM contact_counts
			WHERE account_id = $1 GROUP BY group_id) n ON n.group_id = g.id
		WHERE g.account_id = $1 ORDER BY g.id DESC`, accountID)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Group, error) {
		var g Group
		err := r.Scan(&g.ID, &g.AccountID, &g.Name, &g.Description, &g.CreatedAt, &g.ContactCount)
		return g, err
	})
}

// GroupNames lists an account's groups as Groups does, without counting their contacts
// (ContactCount is 0): for pages that only name them, since counting reads every contact.
func (s *Store) GroupNames(ctx context.Context, accountID uuid.UUID) ([]Group, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, account_id, name, description, created_at
		FROM contact_groups WHERE account_id = $1 ORDER BY id DESC`, accountID)
	if err != nil {
		return nil, fmt.Errorf("list group names: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Group, error) {
		var g Group
		err := r.Scan(&g.ID, &g.AccountID, &g.Name, &g.Description, &g.CreatedAt)
		return g, err
	})
}

// CreateGroup adds a group.
func (s *Store) CreateGroup(ctx context.Context, accountID uuid.UUID, name, description string) (Group, error) {
	g := Group{ID: NewID(), AccountID: accountID, Name: name, Description: description}
	if err := s.pool.QueryRow(ctx, `INSERT INTO contact_groups (id, account_id, name, description) VALUES ($1, $2, $3, $4)
		RETURNING created_at`, g.ID, accountID, name, description).Scan(&g.CreatedAt); err != nil {
		return Group{}, fmt.Errorf("create group: %w", err)
	}
	return g, nil
}

// DeleteGroup deletes one of the account's groups; its contacts stay, in no group. Writers
// that put contacts in a group hold it (FOR KEY SHARE) until they commit, so the delete waits
// for them and then takes their contacts out too.
func (s *Store) DeleteGroup(ctx context.Context, accountID, id uuid.UUID) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM contact_groups WHERE id = $1 AND account_id = $2`, id, accountID)
		if err != nil {
			return fmt.Errorf("delete group: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		if _, err := tx.Exec(ctx, `UPDATE contacts SET group_id = NULL WHERE account_id = $1 AND group_id = $2`, accountID, id); err != nil {
			return fmt.Errorf("delete group: %w", err)
		}
		return nil
	})
}

// GroupOf checks a group is the account's.
func (s *Store) GroupOf(ctx context.Context, accountID, id uuid.UUID) error {
	var one int
	err := s.pool.QueryRow(ctx, `SELECT 1 FROM contact_groups WHERE id = $1 AND account_id = $2`, id, accountID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("group: %w", err)
	}
	return nil
}

// ExportContacts streams the account's active contacts (of one group, when given) to each,
// oldest first, in one read.
func (s *Store) ExportContacts(ctx context.Context, accountID uuid.UUID, groupID *uuid.UUID, each func(Contact) error) error {
	rows, err := s.pool.Query(ctx, `SELECT `+contactColumns+` FROM contacts
		WHERE account_id = $1 AND opted_out_at IS NULL AND ($2::uuid IS NULL OR group_id = $2) ORDER BY id`, accountID, groupID)
	if err != nil {
		return fmt.Errorf("export contacts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		c, err := scanContact(rows)
		if err != nil {
			return fmt.Errorf("export contacts: %w", err)
		}
		if err := each(c); err != nil {
			return err
		}
	}
	return rows.Err()
}
