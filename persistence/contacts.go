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

// searchTokens is what contacts are searched by: the lower-cased words of the name and '#'
// followed by the phone's last four digits. It is the expression of contacts_search_idx,
// letter for letter, so the index serves it.
const searchTokens = `array_to_tsvector(array_remove(string_to_array(lower(first_name || ' ' || last_name || ' #' || right(phone, 4)), ' '), ''))`

// ContactFilter narrows a contact list.
type ContactFilter struct {
	GroupID *uuid.UUID
	Search  string // already normalised (see SearchTerm)
}

// SearchTerm turns what a user typed into what contacts are searched for: a phone in any
// form, or part of one, becomes its digits with a leading 0 read as 254 (07… and +2547… find
// the same contact); anything else is lower-cased words. "" matches everything.
func SearchTerm(raw string) string {
	raw = strings.TrimSpace(raw)
	phone := raw != ""
	var digits strings.Builder
	for _, r := range raw {
		switch {
		case r >= '0' && r <= '9':
			digits.WriteRune(r)
		case r == ' ' || r == '-' || r == '.' || r == '(' || r == ')' || r == '+':
		default:
			phone = false
		}
	}
	if phone && digits.Len() > 0 {
		d := digits.String()
		if len(d) >= 2 && d[0] == '0' {
			d = "254" + d[1:]
		}
		return d
	}
	return strings.ToLower(strings.Join(strings.Fields(raw), " "))
}

// searchCondition is the SQL condition a normalised term sets, its arguments numbered from
// next. Words match the beginnings of a name's words, all of them ("otieno mw" finds Otieno
// Mwangi). Digits match a phone's leading digits (after 254), or its trailing ones when there are
// at least four, or the beginning of a word of the name.
func searchCondition(term string, next int) (string, []any) {
	if strings.Trim(term, "0123456789") != "" {
		return fmt.Sprintf("%s @@ $%d::tsquery", searchTokens, next), []any{prefixQuery(strings.Fields(term))}
	}
	national := strings.TrimPrefix(term, "254")
	arms := fmt.Sprintf("phone >= $%d AND phone < $%d OR %s @@ $%d::tsquery", next, next+1, searchTokens, next+2)
	args := []any{"+254" + national, "+254" + national + ":", prefixQuery([]string{term})}
	if len(national) >= 4 {
		arms += fmt.Sprintf(" OR %s @@ $%d::tsquery AND phone LIKE $%d", searchTokens, next+3, next+4)
		args = append(args, "'#"+national[len(national)-4:]+"'", "%"+national)
	}
	return "(" + arms + ")", args
}

// prefixQuery is the tsquery that matches text whose words begin with each of words, quoted
// so that nothing in them is read as an operator.
func prefixQuery(words []string) string {
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(w) + "':*"
	}
	return strings.Join(parts, " & ")
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
	if f.Search != "" {
		cond, more := searchCondition(f.Search, len(args)+1)
		args = append(args, more...)
		where = append(where, cond)
	}
	cond := strings.Join(where, " AND ")
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM contacts WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count contacts: %w", err)
	}
	if p.After != nil {
		args = append(args, *p.After)
		cond += fmt.Sprintf(" AND id < $%d", len(args))
	}
	args = append(args, p.Size, p.offset())
	page := fmt.Sprintf(" ORDER BY id DESC LIMIT $%d OFFSET $%d", len(args)-1, len(args))
	query := `SELECT ` + contactColumns + ` FROM contacts WHERE ` + cond + page
	if f.Search != "" && total <= fewMatches {
		query = `WITH matches AS MATERIALIZED (SELECT ` + contactColumns + ` FROM contacts WHERE ` + cond + `)
			SELECT * FROM matches` + page
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list contacts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Contact, error) { return scanContact(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("list contacts: %w", err)
	}
	return out, total, nil
}

// CreateContact adds a contact. A phone the account has already is ErrContactExists, or
// ErrContactOptedOut when that contact opted out; a group not the account's is ErrUnknownGroup.
func (s *Store) CreateContact(ctx context.Context, n NewContact) (Contact, error) {
	c, err := scanContact(s.pool.QueryRow(ctx, `INSERT INTO contacts (account_id, id, phone, first_name, last_name, group_id)
		SELECT $1, $2, $3, $4, $5, $6
		WHERE $6::uuid IS NULL OR EXISTS (SELECT 1 FROM contact_groups WHERE id = $6 AND account_id = $1)
		RETURNING `+contactColumns, n.AccountID, NewID(), n.Phone, n.FirstName, n.LastName, n.GroupID))
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
// and no campaign messages it again; its history stays.
func (s *Store) OptOutContact(ctx context.Context, accountID, id uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, `UPDATE contacts SET opted_out_at = now()
		WHERE account_id = $1 AND id = $2 AND opted_out_at IS NULL`, accountID, id)
	if err != nil {
		return fmt.Errorf("opt out contact: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// Groups lists the account's groups, newest first, with their active contacts' count.
func (s *Store) Groups(ctx context.Context, accountID uuid.UUID) ([]Group, error) {
	rows, err := s.pool.Query(ctx, `SELECT g.id, g.account_id, g.name, g.description, g.created_at,
			(SELECT count(*) FROM contacts c WHERE c.account_id = g.account_id AND c.group_id = g.id AND c.opted_out_at IS NULL)
		FROM contact_groups g WHERE g.account_id = $1 ORDER BY g.id DESC`, accountID)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Group, error) {
		var g Group
		err := r.Scan(&g.ID, &g.AccountID, &g.Name, &g.Description, &g.CreatedAt, &g.ContactCount)
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

// DeleteGroup deletes one of the account's groups; its contacts stay, in no group.
func (s *Store) DeleteGroup(ctx context.Context, accountID, id uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM contact_groups WHERE id = $1 AND account_id = $2`, id, accountID)
	if err != nil {
		return fmt.Errorf("delete group: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
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
