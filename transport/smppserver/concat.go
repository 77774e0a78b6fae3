// Concatenated submits: the parts of a long message (UDH IE 0x00 or 0x08, or the SAR TLVs)
// are held per bind by carriers/smpp's Reassembler, the one that joins mobile-originated
// parts, and sent as one message when the last comes.

package smppserver

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers/smpp"
	"github.com/tuma-sms/tuma/persistence"
)

// Bounds on the parts a bind holds.
const (
	// PartsWait is how long the first part of a message waits for the others. ESMEs send a
	// message's parts back to back; one still incomplete past the wait is dropped (logged),
	// never sent in pieces.
	PartsWait = 2 * time.Minute
	// MaxParts bounds the parts a bind holds (each ≤ 254 octets: about 256 KB). A part that
	// meets the bound is answered ESME_RMSGQFUL and the oldest message waiting is dropped.
	MaxParts = 1024
)

// joined is a part's place in its message: whole (the completing part, with the message to
// send) or held.
type joined struct {
	sub  Submit
	a    *smpp.Assembly // nil: held, answered at once
	held bool
	id   uuid.UUID // the message's id, answered for every part (held ones too)
	key  string
}

// messageIDs are the ids of the long messages a bind is receiving, by message: chosen when the
// first part comes, answered for every part, and the id the message takes. Clients (Kannel
// among them) follow a long message's receipt by the id of whichever part was answered first.
type messageIDs struct {
	mu  sync.Mutex
	ids map[string]pendingID
}

type pendingID struct {
	id      uuid.UUID
	since   time.Time
	receipt persistence.ReceiptMode // what its parts so far asked for (joinReceipts)
}

// joinReceipts is the delivery receipt a long message owes when its parts asked for a and b.
// Each part carries its own registered_delivery, and clients differ in which parts they set it
// on (every part, or the first or last alone): the message gets a receipt if any part asked
// for one, on either outcome if any part asked for that, else on failure only. Its one
// receipt names the id every part was answered with, so it answers whichever part asked.
func joinReceipts(a, b persistence.ReceiptMode) persistence.ReceiptMode {
	switch {
	case a == persistence.ReceiptFinal || b == persistence.ReceiptFinal:
		return persistence.ReceiptFinal
	case a == persistence.ReceiptFailure || b == persistence.ReceiptFailure:
		return persistence.ReceiptFailure
	}
	return persistence.ReceiptNone
}

// partKey names a part's message: its addresses, reference and size, read where the text is
// (message_payload when it carries the header; readSubmit has checked the segment).
func partKey(p *smpp.PDU) string {
	q := *p
	if payload, ok := p.TLV(smpp.TagMessagePayload); ok {
		q.ShortMessage = payload
	}
	seg, _ := smpp.ReadSegment(&q)
	return fmt.Sprintf("%s\x00%s\x00%d\x00%d", p.Source, p.Dest, seg.Ref, seg.Total)
}

// of is the id of key's message, chosen now if its first part just came, and the receipt its
// parts so far asked for, receipt (this part's) included.
func (m *messageIDs) of(key string, receipt persistence.ReceiptMode, now time.Time) (uuid.UUID, persistence.ReceiptMode) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ids == nil {
		m.ids = map[string]pendingID{}
	}
	p, ok := m.ids[key]
	if !ok {
		p = pendingID{id: persistence.NewID(), since: now}
	}
	p.receipt = joinReceipts(p.receipt, receipt)
	m.ids[key] = p
	return p.id, p.receipt
}

// keep holds id for key again (its message's send failed; the completing part comes again),
// with the receipt its parts asked for.
func (m *messageIDs) keep(key string, id uuid.UUID, receipt persistence.ReceiptMode, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ids == nil {
		m.ids = map[string]pendingID{}
	}
	m.ids[key] = pendingID{id: id, since: now, receipt: receipt}
}

func (m *messageIDs) done(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.ids, key)
}

// expire forgets the ids of messages that began before cutoff (dropped unfinished).
func (m *messageIDs) expire(cutoff time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, p := range m.ids {
		if p.since.Before(cutoff) {
			delete(m.ids, k)
		}
	}
}

// join holds a part of a concatenated submit; the part that completes its message returns
// the message whole.
func (ss *session) join(p *smpp.PDU) (joined, smpp.Status) {
	now := time.Now()
	ss.dropExpired(now)
	a, err := ss.parts.Add(p, now)
	if err != nil { // the bound is met: the ESME resends the part later
		return joined{}, smpp.StatusMsgQFul
	}
	key := partKey(p)
	id, receipt := ss.ids.of(key, receiptOf(p.RegisteredDelivery), now)
	if a == nil {
		return joined{held: true, id: id, key: key}, smpp.StatusOK
	}
	ss.ids.done(key)
	ss.parts.Forget(a) // the same reference again is a new message, not a resend
	text, err := a.StrictText()
	if err != nil { // refused as one submit_sm of that text would be; its parts go with it
		return joined{}, StatusInvDCS
	}
	return joined{sub: Submit{To: a.MO.Dest, From: a.MO.Source, Text: text, MessageID: id, Receipt: receipt}, a: a, id: id, key: key},
		smpp.StatusOK
}

// unjoin puts back the parts of a message whose send failed, but the completing one: the
// ESME's resend of that part completes it again.
func (ss *session) unjoin(j joined) {
	if j.a != nil {
		ss.parts.Undo(j.a)
		ss.ids.keep(j.key, j.id, j.sub.Receipt, time.Now()) // its held parts were answered with this id
	}
}

// dropExpired drops the messages whose wait is over, or that the bound pushed out.
func (ss *session) dropExpired(now time.Time) {
	ss.ids.expire(now.Add(-PartsWait))
	for _, a := range ss.parts.Due(now) {
		ss.s.log.Warn("smpp server: incomplete concatenated message dropped",
			slog.String("account", ss.bind.AccountID.String()), slog.String("destination", a.MO.Dest),
			slog.Int("parts", a.MO.Parts), slog.Int("total", a.MO.Total))
	}
}
