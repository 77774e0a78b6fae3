package persistence

import (
	"context"
	"fmt"

	"github.com/google/uuid"
)

// activeContacts is how many active contacts the account has (in the group, when given),
// from the counters the writes keep (migration 019): counting would read every contact.
func (s *Store) activeContacts(ctx context.Context, accountID uuid.UUID, groupID *uuid.UUID) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(active), 0)::bigint FROM contact_counts
		WHERE account_id = $1 AND ($2::uuid IS NULL OR group_id = $2)`, accountID, groupID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count contacts: %w", err)
	}
	return n, nil
}

// probeRows is how many of the newest contacts a search looks through first.
const probeRows = 4000

// probeNewest finds a name search's page among the probeRows newest contacts searched (base,
// with the page's cursor), when the matches are common enough that the window should hold the
// page twice over: reading 4,000 rows in order beats reading, say, 5,000 matches scattered
// over the whole table (a fifth of 100,000 contacts' pages) to sort them. ok is false when
// it did not look, or the window held less than a page: the caller reads every match then.
// args end with the page's LIMIT and OFFSET, which page names.
func (s *Store) probeNewest(ctx context.Context, accountID uuid.UUID, groupID *uuid.UUID, matches int64, p Page,
	base, searchCond, page string, args []any) ([]Contact, bool, error) {
	active, err := s.activeContacts(ctx, accountID, groupID)
	if err != nil || active == 0 {
		return nil, false, err
	}
	if want := int64(2 * (p.offset() + p.Size)); probeRows*matches < want*active {
		return nil, false, nil
	}
	args = append(args[:len(args):len(args)], probeRows)
	out, err := s.listContacts(ctx, fmt.Sprintf(`SELECT `+contactColumns+` FROM (
			SELECT * FROM contacts WHERE `+base+` ORDER BY id DESC LIMIT $%d) newest
		WHERE `+searchCond+page, len(args)), args)
	if err != nil || len(out) < p.Size {
		return nil, false, err
	}
	return out, true, nil
}
