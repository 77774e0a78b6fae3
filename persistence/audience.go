// Audiences: a group's active contacts as a campaign sends to them, and their compact form in
// a campaign job's pending list.

package persistence

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
)

// Member is one contact a campaign goes to: where, and the names its merge tags use.
type Member struct {
	Recipient
	FirstName, LastName string
}

// AudienceContact is a group member as stored: its phone still in E.164 text, for the caller
// to place on a network.
type AudienceContact struct {
	Phone, FirstName, LastName string
}

// Audience returns the name of one of the account's groups and its active (not opted-out)
// contacts, oldest first. Another account's group, or none, is ErrNotFound.
func (s *Store) Audience(ctx context.Context, accountID, groupID uuid.UUID) (string, []AudienceContact, error) {
	var name string
	err := s.pool.QueryRow(ctx, `SELECT name FROM contact_groups WHERE id = $1 AND account_id = $2`, groupID, accountID).Scan(&name)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil, ErrNotFound
	}
	if err != nil {
		return "", nil, fmt.Errorf("audience: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT phone, first_name, last_name FROM contacts
		WHERE account_id = $1 AND group_id = $2 AND opted_out_at IS NULL ORDER BY id`, accountID, groupID)
	if err != nil {
		return "", nil, fmt.Errorf("audience: %w", err)
	}
	var out []AudienceContact
	for rows.Next() {
		var c AudienceContact
		if err := rows.Scan(&c.Phone, &c.FirstName, &c.LastName); err != nil {
			rows.Close()
			return "", nil, fmt.Errorf("audience: %w", err)
		}
		out = append(out, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", nil, fmt.Errorf("audience: %w", err)
	}
	return name, out, nil
}

// OptedOut returns which of the numbers (E.164) of a job's recipients are contacts of its
// account that opted out since the job was accepted: a campaign skips them, however long ago
// it was created. Its audience was read, without the contacts opted out then, moments before
// the job was accepted; the margin covers that, and only the (few) contacts opted out since
// are looked at (contacts_opted_out_idx), not every recipient.
func (s *Store) OptedOut(ctx context.Context, accountID, jobID uuid.UUID, phones []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(phones) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT phone FROM contacts
		WHERE account_id = $1 AND opted_out_at >= (SELECT created_at FROM jobs WHERE id = $2) - interval '5 minutes'
			AND phone = ANY($3::text[])`, accountID, jobID, phones)
	if err != nil {
		return nil, fmt.Errorf("opted out: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, fmt.Errorf("opted out: %w", err)
		}
		out[p] = true
	}
	return out, rows.Err()
}

// EncodeAudience packs a campaign's members for its job's pending list: per member the
// recipient's 5 bytes, then each name as a 2-byte length and its UTF-8.
func EncodeAudience(ms []Member) []byte {
	n := 0
	for _, m := range ms {
		n += recipientSize + 4 + len(m.FirstName) + len(m.LastName)
	}
	b := make([]byte, 0, n)
	for _, m := range ms {
		b = binary.BigEndian.AppendUint32(b, m.NSN)
		b = append(b, byte(m.Network))
		b = binary.BigEndian.AppendUint16(b, uint16(len(m.FirstName)))
		b = append(b, m.FirstName...)
		b = binary.BigEndian.AppendUint16(b, uint16(len(m.LastName)))
		b = append(b, m.LastName...)
	}
	return b
}

// DecodeAudience unpacks EncodeAudience.
func DecodeAudience(b []byte) ([]Member, error) {
	var out []Member
	for i := 0; len(b) > 0; i++ {
		if len(b) < recipientSize+2 {
			return nil, fmt.Errorf("audience: truncated at member %d", i)
		}
		m := Member{Recipient: Recipient{NSN: binary.BigEndian.Uint32(b), Network: carriers.Network(b[4])}}
		if m.NSN > 999_999_999 || m.Network < carriers.Safaricom || m.Network > carriers.Telkom {
			return nil, fmt.Errorf("audience: bad member %d", i)
		}
		b = b[recipientSize:]
		var ok bool
		if m.FirstName, b, ok = lengthPrefixed(b); !ok {
			return nil, fmt.Errorf("audience: truncated at member %d", i)
		}
		if m.LastName, b, ok = lengthPrefixed(b); !ok {
			return nil, fmt.Errorf("audience: truncated at member %d", i)
		}
		out = append(out, m)
	}
	return out, nil
}

func lengthPrefixed(b []byte) (string, []byte, bool) {
	if len(b) < 2 {
		return "", nil, false
	}
	n := int(binary.BigEndian.Uint16(b))
	if len(b) < 2+n {
		return "", nil, false
	}
	return string(b[2 : 2+n]), b[2+n:], true
}
