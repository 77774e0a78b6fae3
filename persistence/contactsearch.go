// Contact search: what a typed term matches, and counting its matches exactly without reading
// the account's rows (migration 014 says what each index is for, with the figures).

package persistence

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

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

// keyEnd follows every text that starts with a prefix, in the byte order of the "C" keys: the
// largest code point. (A name whose next character is U+10FFFF, a noncharacter, is not found.)
const keyEnd = "\U0010FFFF"

// search is a normalised term as SQL: the condition a contact must meet, with its arguments
// numbered from the first it was given, and for one word, the prefix both name keys are
// counted by.
type search struct {
	cond string
	args []any
	word string // a single word: counted through the name keys (countWord)
}

// newSearch reads a normalised term (SearchTerm). Digits match a phone's leading digits, after
// 254 (0712 345 and +254712345 alike), or its trailing ones when there are at least four.
// Words match the beginning of the first name or the last name, or of the whole name in either
// order ("otieno mw" and "mwangi oti" both find Otieno Mwangi). Case never matters.
func newSearch(term string, next int) search {
	var s search
	arg := func(v any) string {
		s.args = append(s.args, v)
		return fmt.Sprintf("$%d", next+len(s.args)-1)
	}
	starts := func(key, prefix string) string {
		return fmt.Sprintf("%s >= %s AND %s < %s", key, arg(prefix), key, arg(prefix+keyEnd))
	}
	if strings.Trim(term, "0123456789") == "" {
		national := strings.TrimPrefix(term, "254")
		arms := []string{starts("phone", "+254"+national)}
		suffix := national
		if len(national) == 3 && len(term) == 6 {
			// Four digits typed with a leading 0 ("0567", a number's last four): the 0 was read
			// as 254, which leaves three.
			suffix = "0" + national
		}
		if len(suffix) >= 4 {
			arms = append(arms, fmt.Sprintf("right(phone, 4) = %s AND phone LIKE %s", arg(suffix[len(suffix)-4:]), arg("%"+suffix)))
		}
		s.cond = "(" + strings.Join(arms, " OR ") + ")"
		return s
	}
	arms := []string{starts("first_key", term), starts("last_key", term)}
	if !strings.Contains(term, " ") {
		s.word = term
	}
	// The whole name: the words before a space are a name whole, the rest begin the other.
	for i := range len(term) {
		if term[i] != ' ' {
			continue
		}
		whole, rest := term[:i], term[i+1:]
		arms = append(arms, fmt.Sprintf("first_key = %s AND %s", arg(whole), starts("last_key", rest)),
			fmt.Sprintf("last_key = %s AND %s", arg(whole), starts("first_key", rest)))
	}
	s.cond = "(" + strings.Join(arms, " OR ") + ")"
	return s
}

// countWord counts the account's active contacts whose first or last name begins with word:
// each name key's matches by an index-only scan, less those counted twice (both names begin
// with it), which are looked for only when both counts are not zero.
func (s *Store) countWord(ctx context.Context, accountID uuid.UUID, word string) (int64, error) {
	const active = `FROM contacts WHERE account_id = $1 AND opted_out_at IS NULL`
	var first, last, both int64
	if err := s.pool.QueryRow(ctx, `SELECT
			(SELECT count(*) `+active+` AND first_key >= $2 AND first_key < $3),
			(SELECT count(*) `+active+` AND last_key >= $2 AND last_key < $3)`,
		accountID, word, word+keyEnd).Scan(&first, &last); err != nil {
		return 0, fmt.Errorf("count contacts: %w", err)
	}
	if first > 0 && last > 0 {
		if err := s.pool.QueryRow(ctx, `SELECT count(*) `+active+`
				AND first_key >= $2 AND first_key < $3 AND last_key >= $2 AND last_key < $3`,
			accountID, word, word+keyEnd).Scan(&both); err != nil {
			return 0, fmt.Errorf("count contacts: %w", err)
		}
	}
	return first + last - both, nil
}
