// Concatenated submits: the parts of a long message (UDH IE 0x00 or 0x08, or the SAR TLVs)
// are held per account, whichever of its binds they come on, by carriers/smpp's Reassembler
// (the one that joins mobile-originated parts), and sent as one message when the last comes.

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

// Bounds on the parts an account's binds hold.
const (
	// PartsWait is how long the first part of a message waits for the others, on any of the
	// account's binds and after the last of them ends (an ESME reconnecting resends only what
	// was not answered). One still incomplete past the wait is dropped (logged), never sent in
	// pieces.
	PartsWait = 2 * time.Minute
	// MaxParts bounds the parts an account holds (each ≤ 254 octets: about 256 KB). A part
	// that meets the bound is answered ESME_RMSGQFUL and the oldest message waiting is dropped.
	MaxParts = 1024
)

// longMessages are the long messages an account's binds are sending: an ESME may spread a
// message's parts over its binds, or send an unanswered part again on a new one.
type longMessages struct {
	mu    sync.Mutex // a part's join whole: its hold and its message's id
	parts *smpp.Reassembler
	ids   messageIDs
	// Under the server's mu: the account's binds, and when the last ended.
	binds int
	idle  time.Time
}

func newLongMessages() *longMessages {
	return &longMessages{parts: smpp.NewReassembler(PartsWait, MaxParts)}
}

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
	lm := ss.long
	lm.mu.Lock()
	defer lm.mu.Unlock()
	now := time.Now()
	ss.s.dropExpired(lm, ss.bind.AccountID, now)
	a, err := lm.parts.Add(p, now)
	if err != nil { // the bound is met: the ESME resends the part later
		return joined{}, smpp.StatusMsgQFul
	}
	key := partKey(p)
	id, receipt := lm.ids.of(key, receiptOf(p.RegisteredDelivery), now)
	if a == nil {
		return joined{held: true, id: id, key: key}, smpp.StatusOK
	}
	lm.ids.done(key)
	lm.parts.Forget(a) // the same reference again is a new message, not a resend
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
		lm := ss.long
		lm.mu.Lock()
		defer lm.mu.Unlock()
		lm.parts.Undo(j.a)
		lm.ids.keep(j.key, j.id, j.sub.Receipt, time.Now()) // its held parts were answered with this id
	}
}

// dropExpired drops an account's messages whose wait is over, or that the bound pushed out.
// lm.mu is held.
func (s *Server) dropExpired(lm *longMessages, account uuid.UUID, now time.Time) {
	lm.ids.expire(now.Add(-PartsWait))
	for _, a := range lm.parts.Due(now) {
		s.log.Warn("smpp server: incomplete concatenated message dropped",
			slog.String("account", account.String()), slog.String("destination", a.MO.Dest),
			slog.Int("parts", a.MO.Parts), slog.Int("total", a.MO.Total))
	}
}

// longFor is the account's long messages, for a bind that begins; the accounts whose binds
// all ended more than PartsWait ago are let go.
func (s *Server) longFor(account uuid.UUID) *longMessages {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for a, lm := range s.long {
		if lm.binds == 0 && now.Sub(lm.idle) > PartsWait {
			delete(s.long, a)
			lm.mu.Lock()
			s.dropExpired(lm, a, now.Add(PartsWait)) // logs what it held
			lm.mu.Unlock()
		}
	}
	lm := s.long[account]
	if lm == nil {
		lm = newLongMessages()
		s.long[account] = lm
	}
	lm.binds++
	return lm
}

// leaveLong is a bind of the account ending: its held parts wait PartsWait for another.
func (s *Server) leaveLong(account uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lm := s.long[account]; lm != nil {
		if lm.binds--; lm.binds <= 0 {
			lm.binds, lm.idle = 0, time.Now()
		}
	}
}
