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
	index slotIndex
	next  int
	refs  map[uuid.UUID]*string // jobs' references (fixed at acceptance), a few thousand at most
	// texts holds the sender IDs and receipt statuses rendered: few and repeated, each made a
	// string once rather than at every event.
	texts  map[shortText]string
	recent [4]recentText // the texts last looked up (the zero one is "")
	turn   int
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

// data writes the slot as the message it holds into d. c.mu is held (for the texts).
func (c *hookCache) data(m *cachedMessage, d *MessageEventData) {
	*d = MessageEventData{ID: m.id, JobID: m.job, CampaignID: m.campaign, Recipient: m.recipient.String(), Network: m.network,
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
}

// maxCachedTexts bounds the texts kept as strings; past it they start again.
const maxCachedTexts = 1024

// text is t as a string, made once while it stays among the texts. c.mu is held.
func (c *hookCache) text(t shortText) string {
	for _, r := range c.recent { // a delivery's events mostly repeat a sender and a status
		if r.t == t {
			return r.s
		}
	}
	s, ok := c.texts[t]
	if !ok {
		if len(c.texts) >= maxCachedTexts {
			clear(c.texts)
		}
		s = t.String()
		c.texts[t] = s
	}
	c.recent[c.turn] = recentText{t, s}
	c.turn = (c.turn + 1) % len(c.recent)
	return s
}

// recentText is a text lately made a string.
type recentText struct {
	t shortText
	s string
}

// maxCachedRefs bounds the jobs whose reference is remembered; past it they start again.
const maxCachedRefs = 4096

func newHookCache(n int) *hookCache {
	if n <= 0 {
		return nil
	}
	return &hookCache{slots: make([]cachedMessage, 0, n), index: newSlotIndex(n),
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
		if i := c.index.find(m.id, c.slots); i >= 0 {
			c.slots[i] = m
			continue
		}
		if len(c.slots) < cap(c.slots) {
			c.index.add(m.id, int32(len(c.slots)))
			c.slots = append(c.slots, m)
			continue
		}
		c.index.remove(c.slots[c.next].id, int32(c.next))
		c.slots[c.next] = m
		c.index.add(m.id, int32(c.next))
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
		if i := c.index.find(id, c.slots); i >= 0 {
			c.index.remove(id, i)
			c.slots[i].id = uuid.Nil // the slot stays in the ring, matching nothing
		}
	}
}

// take fills out (one entry per event) with the account's messages of the message events
// when the memory is as far along as the event (message.sent: any state; a final event: that
// final state), the first event of a message deciding, and returns the message ids of the
// others, once each: a later event of a message the memory has an earlier state of is read,
// as are the rest of its events (their entries are left zero). Each message taken gets its
// job's reference when the memory has it; jobs lists, once each, those it has not. One lock
// for a delivery's events.
func (c *hookCache) take(account uuid.UUID, events []WebhookEvent, out []MessageEventData) (read, jobs []uuid.UUID) {
	var unread map[uuid.UUID]bool // rare: a memory behind its events
	if c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	var last struct { // a delivery's messages are mostly of one job
		job uuid.UUID
		ref *string
		ok  bool
	}
	for i, e := range events {
		if !e.Type.IsMessage() || unread[e.MessageID] {
			continue
		}
		if c != nil {
			if s := c.index.find(e.MessageID, c.slots); s >= 0 && c.slots[s].account == account && c.slots[s].covers(e.Type) {
				m := &out[i]
				c.data(&c.slots[s], m)
				if m.JobID != last.job || !last.ok {
					last.job = m.JobID
					last.ref, last.ok = c.refs[m.JobID]
					if !last.ok && !slices.Contains(jobs, m.JobID) {
						jobs = append(jobs, m.JobID)
					}
				}
				m.Reference = last.ref
				continue
			}
		}
		if unread == nil {
			unread = map[uuid.UUID]bool{}
		}
		unread[e.MessageID] = true
		read = append(read, e.MessageID)
	}
	for i, e := range events {
		if unread[e.MessageID] && e.Type.IsMessage() {
			out[i] = MessageEventData{}
		}
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
// describe, one entry per event (zero for an event that is not a message's, or whose message
// is gone): from this node's memory where it is as far along as the events, the rest read
// (WebhookMessages).
func (s *Store) WebhookEventMessages(ctx context.Context, accountID uuid.UUID, events []WebhookEvent) ([]MessageEventData, error) {
	out := make([]MessageEventData, len(events))
	read, jobs := s.hookCache.take(accountID, events, out)
	if len(jobs) > 0 {
		refs, err := s.readRefs(ctx, accountID, jobs)
		if err != nil {
			return nil, err
		}
		for i := range out {
			if r, ok := refs[out[i].JobID]; ok && out[i].ID != uuid.Nil {
				out[i].Reference = r
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
	for i, e := range events {
		if e.Type.IsMessage() && out[i].ID == uuid.Nil {
			out[i] = msgs[e.MessageID] // zero when gone (deleted with its account): the id is all there is
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
