// Inbound: the numbers operators give accounts, the messages subscribers send to them, and
// the opt-out and opt-in keywords in those messages (CONTRACT §15).

package persistence

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
)

// ErrInboundNumberTaken is an inbound number another account has already.
var ErrInboundNumberTaken = errors.New("the inbound number belongs to another account")

// InboundNumber is a short code or long number that routes what is sent to it to an account.
type InboundNumber struct {
	Number    string // a short code's digits, or a long number in E.164
	AccountID uuid.UUID
	Network   carriers.Network
	CreatedAt time.Time
}

// AssignInboundNumber gives number to an account; added is false when the account had it
// already (and then nothing changes, its network included). Another account's number is
// ErrInboundNumberTaken.
func (s *Store) AssignInboundNumber(ctx context.Context, accountID uuid.UUID, number string, network carriers.Network) (InboundNumber, bool, error) {
	out := InboundNumber{Number: number, AccountID: accountID, Network: network}
	err := s.pool.QueryRow(ctx, `INSERT INTO inbound_numbers (number, account_id, network) VALUES ($1, $2, $3)
		ON CONFLICT DO NOTHING RETURNING created_at`, number, accountID, int16(network)).Scan(&out.CreatedAt)
	if err == nil {
		return out, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return out, false, fmt.Errorf("assign inbound number: %w", err)
	}
	var n int16
	err = s.pool.QueryRow(ctx, `SELECT account_id, network, created_at FROM inbound_numbers WHERE number = $1`, number).
		Scan(&out.AccountID, &n, &out.CreatedAt)
	if err != nil {
		// Numbers are never unassigned, so the row the insert met is there.
		return out, false, fmt.Errorf("assign inbound number: %w", err)
	}
	out.Network = carriers.Network(n)
	if out.AccountID != accountID {
		return InboundNumber{}, false, ErrInboundNumberTaken
	}
	return out, false, nil
}

// KeywordAction is what a message's first word asks of its account's suppression list.
type KeywordAction int

const (
	KeywordNone   KeywordAction = iota
	KeywordOptOut               // STOP and its synonyms: suppress the sender
	KeywordOptIn                // START, ANZA: lift the sender's keyword suppression
)

// keywords are the words that act, upper-cased: English and Swahili (acha: stop, sitisha:
// suspend, anza: start).
var keywords = map[string]KeywordAction{
	"STOP": KeywordOptOut, "STOPALL": KeywordOptOut, "UNSUBSCRIBE": KeywordOptOut, "CANCEL": KeywordOptOut,
	"END": KeywordOptOut, "QUIT": KeywordOptOut, "ACHA": KeywordOptOut, "SITISHA": KeywordOptOut,
	"START": KeywordOptIn, "ANZA": KeywordOptIn,
}

// Keyword finds the keyword a message begins with: its first word, case-insensitively, with
// punctuation around it ignored ("Stop." and "stop, please" are STOP; "stopped" is none).
func Keyword(text string) (string, KeywordAction) {
	first := strings.TrimLeftFunc(text, unicode.IsSpace)
	if i := strings.IndexFunc(first, unicode.IsSpace); i >= 0 {
		first = first[:i]
	}
	w := strings.ToUpper(strings.TrimFunc(first, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSymbol(r) }))
	if a, ok := keywords[w]; ok {
		return w, a
	}
	return "", KeywordNone
}

// NewInbound is a message a subscriber sent to an inbound number (a mobile-originated SMS).
type NewInbound struct {
	From    uint32 // the sender's NSN
	To      string // the number it was sent to, as InboundNumber.Number
	Network carriers.Network
	Text    string // decoded; any bytes, any length
}

// InboundMessage is a stored inbound message.
type InboundMessage struct {
	ID         uuid.UUID
	AccountID  *uuid.UUID // nil: sent to a number no account has (unrouted)
	From       uint32
	To         string
	Network    carriers.Network
	Text       string
	Keyword    string // upper-cased; "" when it began with none
	ReceivedAt time.Time
}

// FromE164 is the sender as the API shows it.
func (m InboundMessage) FromE164() string { return Recipient{NSN: m.From}.E164() }

// InboundResult is what receiving a message did.
type InboundResult struct {
	Message InboundMessage
	// Suppressed: the sender is on its account's list now (an opt-out keyword, whether or
	// not it was already); Lifted: its keyword suppression was removed (an opt-in keyword).
	Suppressed, Lifted bool
	OptedOut           int // the account's contacts of that number opted out by it
	// ReplyJobID is the keyword's confirmation, written as a job open for dispatch in the same
	// transaction (keywordreplies.go); uuid.Nil when none was due.
	ReplyJobID uuid.UUID
}

// storableText is text as PostgreSQL can hold it: invalid UTF-8 and NUL become U+FFFD, the
// rest is kept as received.
func storableText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// ReceiveInbound stores a message for the account its number belongs to (unrouted when none
// does) with a message.received event. An opt-out keyword from a routed message suppresses
// the sender (source keyword), opts out the account's contacts of that number and raises
// optout.created when the suppression is new; an opt-in keyword lifts a keyword suppression
// (never one the account or a contact opt-out made) and raises optout.removed. All of it in
// one transaction: the events are never lost nor raised for a change that did not commit.
// So is the keyword's confirmation (replyToKeyword): an opt-out keyword is answered whether or
// not the number was suppressed already, an opt-in one when the number is on no list after it.
// The message stays unsettled until SettleInbound: a redelivery meanwhile reuses it
// (redelivered).
func (s *Store) ReceiveInbound(ctx context.Context, in NewInbound) (InboundResult, error) {
	kw, action := Keyword(in.Text)
	m := InboundMessage{ID: NewID(), From: in.From, To: in.To, Network: in.Network, Text: storableText(in.Text), Keyword: kw}
	var out InboundResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = InboundResult{}
		m.AccountID = nil
		if first, again, err := redelivered(ctx, tx, in, m.Text); err != nil || again {
			out = first
			return err
		}
		var acct uuid.UUID
		err := tx.QueryRow(ctx, `SELECT account_id FROM inbound_numbers WHERE number = $1`, in.To).Scan(&acct)
		switch {
		case err == nil:
			m.AccountID = &acct
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO inbound_messages (id, account_id, from_nsn, to_number, network, text, keyword)
			VALUES ($1, $2, $3, $4, $5, $6, nullif($7, '')) RETURNING received_at`,
			m.ID, m.AccountID, int32(m.From), m.To, int16(m.Network), m.Text, m.Keyword).Scan(&m.ReceivedAt); err != nil {
			return err
		}
		if m.AccountID == nil {
			return nil // kept for operators; no account to tell, no list to change
		}
		var kwJSON any // null when none
		if m.Keyword != "" {
			kwJSON = m.Keyword
		}
		if err := queueAccountEvent(ctx, tx, acct, EventMessageReceived, map[string]any{"id": m.ID, "from": m.FromE164(),
			"to": m.To, "network": m.Network.String(), "text": m.Text, "received_at": m.ReceivedAt.UTC(), "keyword": kwJSON}); err != nil {
			return err
		}
		switch action {
		case KeywordNone:
			return nil
		case KeywordOptOut:
			if err := optOutByKeyword(ctx, tx, &out, acct, m); err != nil {
				return err
			}
		case KeywordOptIn:
			if err := optInByKeyword(ctx, tx, &out, acct, m); err != nil {
				return err
			}
			if !out.Lifted {
				// Nothing lifted: either not suppressed at all (a START to confirm all the
				// same) or by the account or a contact, which a START does not change.
				if on, err := suppressedNow(ctx, tx, acct, m.From); err != nil || on {
					return err
				}
			}
		}
		out.ReplyJobID, err = replyToKeyword(ctx, tx, acct, m, action)
		return err
	})
	if err != nil {
		return InboundResult{}, fmt.Errorf("receive inbound: %w", err)
	}
	if out.Message.ID == uuid.Nil { // not a redelivery
		out.Message = m
	}
	return out, nil
}

// optOutByKeyword suppresses the sender of an opt-out keyword and opts out the account's
// contacts of that number.
func optOutByKeyword(ctx context.Context, tx pgx.Tx, out *InboundResult, acct uuid.UUID, m InboundMessage) error {
	out.Suppressed = true
	reason := fmt.Sprintf("sent %s to %s", m.Keyword, m.To)
	var created time.Time
	err := tx.QueryRow(ctx, `INSERT INTO suppressions (account_id, nsn, source, reason) VALUES ($1, $2, 'keyword', $3)
		ON CONFLICT DO NOTHING RETURNING created_at`, acct, int32(m.From), reason).Scan(&created)
	added := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	// Not under the import lock CreateContact takes: an import would hold an MO for as long
	// as it runs, and a contact it adds meanwhile is still never messaged (suppressed).
	tag, err := tx.Exec(ctx, `UPDATE contacts SET opted_out_at = now() WHERE account_id = $1 AND phone = $2 AND opted_out_at IS NULL`,
		acct, m.FromE164())
	if err != nil {
		return err
	}
	out.OptedOut = int(tag.RowsAffected())
	if !added {
		return nil // on the list already (any source): no new opt-out to report
	}
	return queueAccountEvent(ctx, tx, acct, EventOptoutCreated, map[string]any{"phone": m.FromE164(),
		"source": SuppressedByKeyword, "reason": reason, "keyword": m.Keyword, "created_at": created.UTC()})
}

// optInByKeyword lifts the sender's keyword suppression, if it has one, and when the number is
// then on no list, opts its contacts back in: those the STOP opted out (since the lifted
// suppression), so campaigns reach them again, as the confirmation says. A contact the
// account opted out itself (deleted, and on the list as source contact) stays out.
func optInByKeyword(ctx context.Context, tx pgx.Tx, out *InboundResult, acct uuid.UUID, m InboundMessage) error {
	var reason string
	var created, removed time.Time
	err := tx.QueryRow(ctx, `DELETE FROM suppressions WHERE account_id = $1 AND nsn = $2 AND source = 'keyword'
		RETURNING reason, created_at, now()`, acct, int32(m.From)).Scan(&reason, &created, &removed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // nothing a keyword could lift: not suppressed, or by the account or a contact
	}
	if err != nil {
		return err
	}
	out.Lifted = true
	if _, err := tx.Exec(ctx, `UPDATE contacts SET opted_out_at = NULL
		WHERE account_id = $1 AND phone = $2 AND opted_out_at >= $3
			AND NOT EXISTS (SELECT 1 FROM suppressions WHERE account_id = $1 AND nsn = $4)`,
		acct, m.FromE164(), created, int32(m.From)); err != nil {
		return err
	}
	return queueAccountEvent(ctx, tx, acct, EventOptoutRemoved, map[string]any{"phone": m.FromE164(),
		"source": SuppressedByKeyword, "reason": reason, "keyword": m.Keyword, "created_at": created.UTC(), "removed_at": removed.UTC()})
}

// InboundFilter narrows an account's inbox: one sender (0: all), after a message (its id).
type InboundFilter struct {
	From  uint32
	After *uuid.UUID
}

// InboundMessages lists an account's inbound messages newest first, limit at most.
func (s *Store) InboundMessages(ctx context.Context, accountID uuid.UUID, f InboundFilter, limit int) ([]InboundMessage, error) {
	after := uuid.Max
	if f.After != nil {
		after = *f.After
	}
	rows, err := s.pool.Query(ctx, `SELECT id, account_id, from_nsn, to_number, network, text, coalesce(keyword, ''), received_at
		FROM inbound_messages WHERE account_id = $1 AND ($2 = 0 OR from_nsn = $2) AND id < $3
		ORDER BY id DESC LIMIT $4`, accountID, int32(f.From), after, limit)
	if err != nil {
		return nil, fmt.Errorf("inbound messages: %w", err)
	}
	return collectInbound(rows)
}

// UnroutedInbound lists the messages sent to numbers no account had, newest first.
func (s *Store) UnroutedInbound(ctx context.Context, limit int) ([]InboundMessage, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, account_id, from_nsn, to_number, network, text, coalesce(keyword, ''), received_at
		FROM inbound_messages WHERE account_id IS NULL ORDER BY id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("unrouted inbound: %w", err)
	}
	return collectInbound(rows)
}

func collectInbound(rows pgx.Rows) ([]InboundMessage, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (InboundMessage, error) {
		var m InboundMessage
		var from int32
		var network int16
		err := r.Scan(&m.ID, &m.AccountID, &from, &m.To, &network, &m.Text, &m.Keyword, &m.ReceivedAt)
		m.From, m.Network = uint32(from), carriers.Network(network)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("inbound messages: %w", err)
	}
	return out, nil
}
