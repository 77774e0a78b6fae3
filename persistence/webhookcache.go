// A node's memory of the messages its own status flushes gave webhook events.
//
// A message event carries only its message's id; a delivery renders the message as it is. Read
// back from PostgreSQL, 100 messages a delivery were the webhook path's costliest statement
// under bulk load (bench/RESULTS.md, 2026-11-26 17:00), though the flush that wrote each event
// had just had the row in hand. So a flush's updates return the fields an event shows when an
// account of theirs wants message events (by provider id, when any account does), and after
// the commit the node keeps those accounts' messages here, the last
// Options.WebhookCache messages in a ring. A delivery takes a message from here when the
// memory is as far along as its event (message.sent: any state; a final event: that final
// state) and reads the rest, as before. Another node's flushes, and writers other than the
// status flushes, leave this node's memory behind, never ahead: what it lacks is read.

package persistence

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tuma-sms/tuma/carriers"
)

// hookCache is the ring of messages; a nil one remembers nothing.
type hookCache struct {
	mu    sync.Mutex
	slots []cachedMessage
	byID  map[uuid.UUID]int32
	next  int
	refs  map[uuid.UUID]*string // jobs' references (fixed at acceptance), a few thousand at most
	// texts holds the sender IDs and receipt statuses rendered: few and repeated, each made a
	// string once rather than at every event.
	texts map[shortText]string
	// spare holds flushes' lists of messages to remember, reused: a flush's list grew
	// through appends to a few hundred kilobytes, a seventh of the node's allocation under
	// webhook load (bench/RESULTS.md).
	spare sync.Pool
}

// cachedMessage is a message as a committed flush left it, in a slot of fixed size with one
// pointer (the provider id, nil for none, shared by the events that show it): a ring of
// 131,072 holds about 30 MB the collector barely scans.
type cachedMessage struct {
	account, id, job, campaign uuid.UUID // campaign: uuid.Nil for none
	pid                        *string
	recipient, sender          shortText
	ps                         shortText
	status                     MessageStatus
	network                    carriers.Network
	parts                      int16
	cost                       int64
	sentAt, doneAt             int64 // Unix nanoseconds; 0: none
}

// shortText holds a short string in place: phone numbers, sender IDs, receipt statuses.
type shortText struct {
	n uint8
	b [23]byte
}

func short[T ~string | ~[]byte](s T) (shortText, bool) {
	var t shortText
	if len(s) > len(t.b) {
		return t, false
	}
	t.n = uint8(copy(t.b[:], s))
	return t, true
}

func (t *shortText) String() string { return string(t.b[:t.n]) }

// slot is the row as a slot of the account, if each of its texts fits (else the message is
// read when delivered).
func (r *eventRow) slot(account, id, job uuid.UUID, net, parts int16, cost int64, st MessageStatus, done *time.Time) (cachedMessage, bool) {
	c := cachedMessage{account: account, id: id, job: job, status: st, network: carriers.Network(net), parts: parts, cost: cost}
	var ok [3]bool
	c.recipient, ok[0] = short(r.recipient)
	c.sender, ok[1] = short(r.sender)
	c.ps, ok[2] = short(r.ps)
	if r.campaign.Valid {
		c.campaign = r.campaign.Bytes
	}
	if r.pid.Valid {
		pid := r.pid.String
		c.pid = &pid
	}
	if r.sentAt.Valid {
		c.sentAt = r.sentAt.Time.UnixNano()
	}
	if done != nil {
		c.doneAt = done.UnixNano()
	}
	// Sent with no provider id (an unknown outcome): the id may come late, written by another
	// shard's flush that could commit before this memory is kept. Read it when delivered.
	late := st == MessageSent && c.pid == nil
	return c, ok[0] && ok[1] && ok[2] && !late
}

// data is the slot as the message it holds. c.mu is held (for the texts).
func (c *hookCache) data(m *cachedMessage) MessageEventData {
	d := MessageEventData{ID: m.id, JobID: m.job, CampaignID: m.campaign, Recipient: m.recipient.String(), Network: m.network,
		Sender: c.text(m.sender), Status: m.status, ProviderStatus: c.text(m.ps), ProviderMessageID: m.pid,
		Parts: int(m.parts), CostCents: m.cost}
	at := func(ns int64) time.Time {
		if ns == 0 {
			return time.Time{}
		}
		return time.Unix(0, ns).UTC()
	}
	d.SentAt = at(m.sentAt)
	switch m.status {
	case MessageDelivered:
		d.DeliveredAt = at(m.doneAt)
	case MessageFailed:
		d.FailedAt = at(m.doneAt)
	}
	return d
}

// maxCachedTexts bounds the texts kept as strings; past it they start again.
const maxCachedTexts = 1024

// text is t as a string, made once while it stays among the texts. c.mu is held.
func (c *hookCache) text(t shortText) string {
	if s, ok := c.texts[t]; ok {
		return s
	}
	if len(c.texts) >= maxCachedTexts {
		clear(c.texts)
	}
	s := t.String()
	c.texts[t] = s
	return s
}

// maxCachedRefs bounds the jobs whose reference is remembered; past it they start again.
const maxCachedRefs = 4096

func newHookCache(n int) *hookCache {
	if n <= 0 {
		return nil
	}
	return &hookCache{slots: make([]cachedMessage, 0, n), byID: make(map[uuid.UUID]int32, n),
		refs: map[uuid.UUID]*string{}, texts: map[shortText]string{}}
}

// list is an empty list for a flush to gather its messages in, to be handed to put.
func (c *hookCache) list() []cachedMessage {
	if c == nil {
		return nil
	}
	if l, ok := c.spare.Get().(*[]cachedMessage); ok {
		return (*l)[:0]
	}
	return make([]cachedMessage, 0, 256)
}

// put remembers messages a flush committed, each in place of its older self or of the oldest,
// and takes the list back for another flush.
func (c *hookCache) put(ms []cachedMessage) {
	if c == nil || cap(ms) == 0 {
		return
	}
	defer c.spare.Put(&ms)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range ms {
		if i, ok := c.byID[m.id]; ok {
			c.slots[i] = m
			continue
		}
		if len(c.slots) < cap(c.slots) {
			c.byID[m.id] = int32(len(c.slots))
			c.slots = append(c.slots, m)
			continue
		}
		delete(c.byID, c.slots[c.next].id)
		c.slots[c.next] = m
		c.byID[m.id] = int32(c.next)
		c.next = (c.next + 1) % len(c.slots)
	}
}

// drop forgets messages a write changed behind the memory's back.
func (c *hookCache) drop(ids []uuid.UUID) {
	if c == nil || len(ids) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if i, ok := c.byID[id]; ok {
			c.slots[i].id = uuid.Nil // the slot stays in the ring, matching nothing
			delete(c.byID, id)
		}
	}
}

// take puts in out the account's messages of the message events when the memory is as far
// along as the event (message.sent: any state; a final event: that final state), the first
// event of a message deciding, and returns the message ids of the others, once each: a later
// event of a message the memory has an earlier state of is read, as are the rest of its
// events. Each message taken gets its job's reference when the memory has it; jobs lists,
// once each, those it has not. One lock for a delivery's events.
func (c *hookCache) take(account uuid.UUID, events []WebhookEvent, out map[uuid.UUID]MessageEventData) (read, jobs []uuid.UUID) {
	unread := map[uuid.UUID]bool{}
	if c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	for _, e := range events {
		if !e.Type.IsMessage() || unread[e.MessageID] {
			continue
		}
		if c != nil {
			if i, ok := c.byID[e.MessageID]; ok && c.slots[i].account == account && c.slots[i].covers(e.Type) {
				if _, seen := out[e.MessageID]; !seen {
					m := c.data(&c.slots[i])
					ref, ok := c.refs[m.JobID]
					if !ok && !slices.Contains(jobs, m.JobID) {
						jobs = append(jobs, m.JobID)
					}
					m.Reference = ref
					out[e.MessageID] = m
				}
				continue
			}
		}
		unread[e.MessageID] = true
		delete(out, e.MessageID)
		read = append(read, e.MessageID)
	}
	return read, jobs
}

// covers says the slot is as far along as an event of the type.
func (m *cachedMessage) covers(t EventType) bool {
	switch {
	case t == EventMessageSent,
		t == EventMessageDelivered && m.status == MessageDelivered,
		t == EventMessageFailed && m.status == MessageFailed:
		return true
	}
	return false
}

func (c *hookCache) putRef(job uuid.UUID, ref *string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.refs) >= maxCachedRefs {
		clear(c.refs)
	}
	c.refs[job] = ref
}

// WebhookEventMessages is the account's messages that the message events of a delivery
// describe, by id: from this node's memory where it is as far along as the events, the rest
// read (WebhookMessages).
func (s *Store) WebhookEventMessages(ctx context.Context, accountID uuid.UUID, events []WebhookEvent) (map[uuid.UUID]MessageEventData, error) {
	out := make(map[uuid.UUID]MessageEventData, len(events))
	read, jobs := s.hookCache.take(accountID, events, out)
	if len(jobs) > 0 {
		refs, err := s.readRefs(ctx, accountID, jobs)
		if err != nil {
			return nil, err
		}
		for id, m := range out {
			if r, ok := refs[m.JobID]; ok {
				m.Reference = r
				out[id] = m
			}
		}
	}
	if len(read) == 0 {
		return out, nil
	}
	msgs, err := s.WebhookMessages(ctx, accountID, read)
	if err != nil {
		return nil, err
	}
	for _, id := range read {
		if m, ok := msgs[id]; ok {
			out[id] = m
		} else {
			delete(out, id) // gone (deleted with its account): the id is all there is
		}
	}
	return out, nil
}

// readRefs reads the references of the account's jobs, and remembers them.
func (s *Store) readRefs(ctx context.Context, accountID uuid.UUID, jobs []uuid.UUID) (map[uuid.UUID]*string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, reference FROM jobs WHERE id = ANY($2::uuid[]) AND account_id = $1`, accountID, jobs)
	if err != nil {
		return nil, fmt.Errorf("webhook references: %w", err)
	}
	defer rows.Close()
	out := make(map[uuid.UUID]*string, len(jobs))
	for rows.Next() {
		var id uuid.UUID
		var ref *string
		if err := rows.Scan(&id, &ref); err != nil {
			return nil, fmt.Errorf("webhook references: %w", err)
		}
		out[id] = ref
		s.hookCache.putRef(id, ref)
	}
	return out, rows.Err()
}

// eventRow is what a flush's update returns of a message for its events beyond what the
// statement returns anyway, when an account of the flush has an endpoint.
// Its texts are the driver's bytes (valid until the next row: slot copies them) and its
// nullable fields are values, so a row scans without allocating but for a provider id.
type eventRow struct {
	recipient, sender, ps pgtype.DriverBytes
	campaign              pgtype.UUID
	pid                   pgtype.Text
	sentAt                pgtype.Timestamptz
	parts                 int16 // the sent update's; the final ones return parts and cost already
	cost                  int64
}

// The updates' returned columns an event shows: the sent update adds parts and cost.
const (
	finalEventFields = `, m.recipient, m.sender, m.campaign_id, m.provider_message_id, m.sent_at, m.provider_status`
	sentEventFields  = finalEventFields + `, m.parts, m.cost_cents`
)

// eventFields is the RETURNING tail of a statement over the accounts' messages: fields when
// one of them wants message events (accounts nil: not known before the statement, so when any
// account does), else none.
func (a *flushAggregate) eventFields(fields string, accounts []uuid.UUID) string {
	if !a.hooks.any() {
		return ""
	}
	if accounts == nil {
		return fields
	}
	seen := uuid.Nil
	for _, acct := range accounts {
		if acct != seen && a.hooks.wants(acct) {
			return fields
		}
		seen = acct
	}
	return ""
}

// eventDest is where a tail scans.
func eventDest(r *eventRow, tail string) []any {
	if tail == "" {
		return nil
	}
	d := []any{&r.recipient, &r.sender, &r.campaign, &r.pid, &r.sentAt, &r.ps}
	if tail == sentEventFields {
		d = append(d, &r.parts, &r.cost)
	}
	return d
}

// keep remembers a message the flush moved, for the deliveries of its events, when its
// account wants them.
func (a *flushAggregate) keep(c cachedMessage, fits bool) {
	if fits && a.hooks.wants(c.account) {
		a.remember = append(a.remember, c)
	}
}
