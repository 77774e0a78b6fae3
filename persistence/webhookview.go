// Which accounts want which webhook events: each node's copy of the enabled subscriptions,
// and the events a transaction writes for them.
//
// Writers must know cheaply whether an account subscribes (a status flush must not look
// endpoints up for a million messages of accounts that have none), and must never miss an
// endpoint that existed when their change committed, whichever node created it. So:
//
//   - every change to the set of enabled subscriptions (create, delete, enable, disable, a new
//     event list) runs under an exclusive transaction-scoped advisory lock (hookLockKey) and
//     bumps webhook_subscriptions.version in the same transaction;
//   - every writer of events takes the same lock shared, then reads the version, in the first
//     round trip of its transaction (a pipeline of statements: the read's snapshot follows the
//     lock), and uses its node's copy of the set if the versions match, else reloads it first.
//
// While a writer holds the lock shared no change can commit, so the set it uses is exactly the
// set in force when it commits: an endpoint whose creation committed earlier gets the events,
// on every node, with no delay at all; one created later does not (it did not exist). A change
// waits for the writers under way (one flush, milliseconds) and they for it.

package persistence

import (
	"context"
	"crypto/cipher"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// hookLockKey is the advisory lock of the subscription set ("tumahook" in ASCII).
const hookLockKey int64 = 0x74756d61686f6f6b

// maxChunk is the most events one outbox row holds: an event's id keeps its place in 16 bits.
const maxChunk = 1 << 16

// hookView is a node's copy of the subscription set, shared by its writers.
type hookView struct {
	aead    cipher.AEAD // seals the endpoints' secrets (webhooks.go)
	cur     atomic.Pointer[hookSet]
	reload  sync.Mutex // one reload at a time
	written atomic.Pointer[func()]
}

// hookSet is the set at one version: every enabled endpoint, by account.
type hookSet struct {
	version   int64
	byAccount map[uuid.UUID][]hookSub
}

type hookSub struct {
	endpoint uuid.UUID
	mask     int32
}

// OnWebhookEvents sets what runs after a status flush has committed webhook events (waking
// the delivery worker). Events other writers commit are found by its polling.
func (s *Store) OnWebhookEvents(f func()) { s.hooks.written.Store(&f) }

func (s *Store) hookEventsWritten() {
	if f := s.hooks.written.Load(); f != nil {
		(*f)()
	}
}

// subscriptions takes the subscription lock shared and returns the set in force, in the
// transaction's first round trip; first are statements to run before it in that round trip.
func (s *Store) subscriptions(ctx context.Context, tx pgx.Tx, first ...string) (*hookSet, error) {
	b := &pgx.Batch{}
	for _, q := range first {
		b.Queue(q)
	}
	b.Queue(`SELECT pg_advisory_xact_lock_shared($1)`, hookLockKey)
	var version int64
	b.Queue(`SELECT version FROM webhook_subscriptions`).QueryRow(func(r pgx.Row) error { return r.Scan(&version) })
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("webhook subscriptions: %w", err)
	}
	if set := s.hooks.cur.Load(); set != nil && set.version == version {
		return set, nil
	}
	s.hooks.reload.Lock()
	defer s.hooks.reload.Unlock()
	if set := s.hooks.cur.Load(); set != nil && set.version == version {
		return set, nil
	}
	// The lock held shared keeps the version still: what this reads is the set at version.
	rows, err := tx.Query(ctx, `SELECT id, account_id, event_mask FROM webhook_endpoints WHERE enabled`)
	if err != nil {
		return nil, fmt.Errorf("load webhook subscriptions: %w", err)
	}
	set := &hookSet{version: version, byAccount: map[uuid.UUID][]hookSub{}}
	for rows.Next() {
		var sub hookSub
		var acct uuid.UUID
		if err := rows.Scan(&sub.endpoint, &acct, &sub.mask); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load webhook subscriptions: %w", err)
		}
		set.byAccount[acct] = append(set.byAccount[acct], sub)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load webhook subscriptions: %w", err)
	}
	if cur := s.hooks.cur.Load(); cur == nil || cur.version < version {
		s.hooks.cur.Store(set)
	}
	return set, nil
}

// changeSubscriptions runs f in a transaction that changes the subscription set: under the
// lock held exclusively, bumping the version.
func (s *Store) changeSubscriptions(ctx context.Context, f func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, hookLockKey); err != nil {
			return err
		}
		if err := f(tx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE webhook_subscriptions SET version = version + 1`)
		return err
	})
}

// hookEvents gathers the message events of one transaction, by endpoint, in order.
type hookEvents struct {
	set    *hookSet
	chunks map[uuid.UUID]*hookChunk
	order  []uuid.UUID
	n      int
}

type hookChunk struct {
	types []int16
	msgs  []uuid.UUID
}

func newHookEvents(set *hookSet) *hookEvents {
	return &hookEvents{set: set, chunks: map[uuid.UUID]*hookChunk{}}
}

// message adds an event of a message to each endpoint of its account subscribed to it.
func (h *hookEvents) message(account, id uuid.UUID, t EventType) {
	if h == nil || len(h.set.byAccount) == 0 {
		return
	}
	bit, code := t.bit(), t.code()
	for _, sub := range h.set.byAccount[account] {
		if sub.mask&bit == 0 {
			continue
		}
		c := h.chunks[sub.endpoint]
		if c == nil {
			c = &hookChunk{}
			h.chunks[sub.endpoint] = c
			h.order = append(h.order, sub.endpoint)
		}
		c.types, c.msgs = append(c.types, code), append(c.msgs, id)
		h.n++
	}
}

// messageBits are the message event types' bits.
func messageBits() int32 {
	return EventMessageSent.bit() | EventMessageDelivered.bit() | EventMessageFailed.bit()
}

// wants says whether the account has an endpoint subscribed to a message event: its messages'
// fields are then worth returning from a flush's updates, for the deliveries (webhookcache.go).
func (h *hookEvents) wants(account uuid.UUID) bool {
	if h == nil {
		return false
	}
	for _, sub := range h.set.byAccount[account] {
		if sub.mask&messageBits() != 0 {
			return true
		}
	}
	return false
}

// any says whether any account has an endpoint.
func (h *hookEvents) any() bool { return h != nil && len(h.set.byAccount) > 0 }

// queue adds the outbox rows to b: one per endpoint (more past maxChunk events).
func (h *hookEvents) queue(b *pgx.Batch) {
	if h == nil {
		return
	}
	for _, ep := range h.order {
		c := h.chunks[ep]
		for i := 0; i < len(c.types); i += maxChunk - 1 {
			j := min(i+maxChunk-1, len(c.types))
			b.Queue(`INSERT INTO webhook_events (endpoint_id, types, message_ids) VALUES ($1, $2, $3)`, ep, c.types[i:j], c.msgs[i:j])
		}
	}
}

// queueAccountEvent writes an account event (anything but a message's) in the transaction of
// the change it reports, for each enabled endpoint of the account subscribed to its type. It
// is where message.received and the opt-out events will be written too.
func queueAccountEvent(ctx context.Context, tx pgx.Tx, accountID uuid.UUID, t EventType, data any) error {
	body, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("%s event: %w", t, err)
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_advisory_xact_lock_shared($1)`, hookLockKey)
	b.Queue(`INSERT INTO webhook_events (endpoint_id, types, data)
		SELECT id, ARRAY[$2::smallint], $3::jsonb FROM webhook_endpoints
		WHERE account_id = $1 AND enabled AND event_mask & $4 <> 0`, accountID, t.code(), body, t.bit())
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("%s event: %w", t, err)
	}
	return nil
}

// kes renders cents as a JSON number of KES with two decimals, as the API shows money.
func kes(cents int64) json.Number {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return json.Number(fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100))
}

// queueSenderEvent writes sender_id.approved or sender_id.rejected for a reviewed sender ID.
func queueSenderEvent(ctx context.Context, tx pgx.Tx, snd SenderID) error {
	t := EventSenderApproved
	if snd.Status == SenderRejected {
		t = EventSenderRejected
	}
	return queueAccountEvent(ctx, tx, snd.AccountID, t, map[string]any{"sender_id": snd.ID, "name": snd.Name,
		"network": snd.Network, "status": snd.Status, "rejection_reason": snd.RejectionReason, "reviewed_at": snd.ReviewedAt})
}
