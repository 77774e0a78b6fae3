// Reassembly of concatenated mobile-originated messages: parts are held per (source,
// destination, reference, total) until all have come, within a bound on the parts held and a
// wait, so a part that never comes cannot hold memory forever.

package smpp

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Defaults of a Reassembler.
const (
	// DefaultMOPartsWait is how long the first part of a message waits for the others. Phones
	// send the parts back to back, but SMSCs may deliver them minutes apart after an outage;
	// past the wait the message is delivered with the parts it has (Incomplete), not dropped.
	DefaultMOPartsWait = 5 * time.Minute
	// DefaultMOMaxParts bounds the parts held (each ≤ 254 octets, so about 1 MB): 4,096 is
	// hundreds of long messages in reassembly at once. At the bound the oldest message waiting
	// is delivered with what it has, and the part that met the bound is refused for now
	// (ESME_RX_T_APPN) so the SMSC brings it again.
	DefaultMOMaxParts = 4096
)

// ErrReassemblyFull refuses a part while the bound on parts held is reached.
var ErrReassemblyFull = errors.New("smpp: too many parts of concatenated messages held")

// Reassembler joins the parts of concatenated mobile-originated messages. Several binds of a
// network share one, since an SMSC may deliver a message's parts on different binds. It is
// safe for concurrent use.
type Reassembler struct {
	wait     time.Duration
	maxParts int

	mu      sync.Mutex
	pending map[moKey]*partial
	due     []*partial // expired or evicted, waiting to be handed on
	held    int        // parts in pending and due
	// recent are the messages completed within the wait: a part of one that comes again (the
	// SMSC resends when our deliver_sm_resp was lost) is a duplicate, not the start of a
	// message of its own that would be handed on, alone, when its wait ends. At most
	// maxParts are kept.
	recent map[moKey]time.Time
}

// moKey names one concatenated message. The total is in it too: a reference reused by another
// message of a different length cannot mix their parts.
type moKey struct {
	src, dst   string
	ref        uint16
	total      int
	sar, ref16 bool
}

// partial is a message some of whose parts have come.
type partial struct {
	key   moKey
	first *PDU           // the first part that came: addresses and coding
	parts map[int]moPart // by sequence number, from 1
	since time.Time
}

type moPart struct {
	coding byte
	body   []byte
}

// NewReassembler holds parts for at most wait (0: DefaultMOPartsWait) and at most maxParts
// parts at once (0: DefaultMOMaxParts).
func NewReassembler(wait time.Duration, maxParts int) *Reassembler {
	if wait <= 0 {
		wait = DefaultMOPartsWait
	}
	if maxParts <= 0 {
		maxParts = DefaultMOMaxParts
	}
	return &Reassembler{wait: wait, maxParts: maxParts, pending: map[moKey]*partial{}, recent: map[moKey]time.Time{}}
}

// Assembly is a message whose parts have all come, handed out by Add. If handing it on fails,
// Undo puts its parts back but the last (so the SMSC's resend of that part completes it again).
type Assembly struct {
	MO   MO
	p    *partial
	last int
}

// Add takes a mobile-originated deliver_sm. A message of one part is whole at once; a part of
// a longer one is held (nil, nil) until its last part comes. A part already held is taken as
// the resend it is. ErrReassemblyFull refuses the part for now.
func (r *Reassembler) Add(p *PDU, now time.Time) (*Assembly, error) {
	seg := moSegment(p)
	if !seg.Concatenated {
		return &Assembly{MO: moOf(p, moText(p.DataCoding, seg.Body), 1, 1)}, nil
	}
	_, sar := p.TLV(TagSarMsgRefNum)
	k := moKey{src: p.Source, dst: p.Dest, ref: seg.Ref, total: seg.Total, sar: sar && p.ESMClass&ESMClassUDHI == 0,
		ref16: isRef16(p)}
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.pending[k]
	if m != nil {
		if _, dup := m.parts[seg.Seq]; dup {
			return nil, nil
		}
	} else if at, ok := r.recent[k]; ok && now.Sub(at) < r.wait {
		return nil, nil
	}
	if r.held >= r.maxParts {
		r.evictOldest()
		return nil, ErrReassemblyFull
	}
	if m == nil {
		m = &partial{key: k, first: p, parts: map[int]moPart{}, since: now}
		r.pending[k] = m
	}
	m.parts[seg.Seq] = moPart{coding: p.DataCoding, body: seg.Body}
	r.held++
	if len(m.parts) < seg.Total {
		return nil, nil
	}
	delete(r.pending, k)
	r.held -= len(m.parts)
	r.remember(k, now)
	return &Assembly{MO: m.message(), p: m, last: seg.Seq}, nil
}

// remember marks a message completed, within the bound on what is remembered.
func (r *Reassembler) remember(k moKey, now time.Time) {
	if len(r.recent) >= r.maxParts {
		for rk, at := range r.recent {
			if now.Sub(at) >= r.wait || len(r.recent) >= r.maxParts {
				delete(r.recent, rk)
			}
		}
	}
	r.recent[k] = now
}

// StrictText is a completed message's text decoded as one submit_sm's would be (DecodeText):
// an error when a part's data_coding differs from the first's or the joined octets are not
// text in it. MO.Text, for messages from phones, never fails: it marks what it cannot read.
func (a *Assembly) StrictText() (string, error) {
	if a == nil || a.p == nil {
		return "", fmt.Errorf("not a joined message: %w", ErrMalformed)
	}
	m := a.p
	var body []byte
	for seq := 1; seq <= m.key.total; seq++ {
		pt, ok := m.parts[seq]
		if !ok || pt.coding != m.first.DataCoding {
			return "", fmt.Errorf("part %d of %d: missing or in another data_coding: %w", seq, m.key.total, ErrMalformed)
		}
		body = append(body, pt.body...)
	}
	return DecodeText(m.first.DataCoding, body)
}

// Forget drops a completed message from the ones remembered (recent): a part with its key
// is then the start of a new message. An ESME's submits need it: their 8-bit references
// repeat (some clients always use the same one), and a new long message must never be taken
// for a resend of the last and answered without being sent.
func (r *Reassembler) Forget(a *Assembly) {
	if a == nil || a.p == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.recent, a.p.key)
}

// Undo puts back the parts of a message whose handing on failed, all but the one that
// completed it; a message of one part holds nothing.
func (r *Reassembler) Undo(a *Assembly) {
	if a == nil || a.p == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.recent, a.p.key)
	if _, again := r.pending[a.p.key]; again {
		return // its parts are coming again already
	}
	delete(a.p.parts, a.last)
	r.pending[a.p.key] = a.p
	r.held += len(a.p.parts)
}

// Due takes the messages whose wait is over (or that the bound pushed out) to be handed on
// with the parts they have. One that fails to be handed on goes back with Requeue.
func (r *Reassembler) Due(now time.Time) []*Assembly {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, m := range r.pending {
		if now.Sub(m.since) >= r.wait {
			delete(r.pending, k)
			r.due = append(r.due, m)
		}
	}
	for k, at := range r.recent {
		if now.Sub(at) >= r.wait {
			delete(r.recent, k)
		}
	}
	if len(r.due) == 0 {
		return nil
	}
	out := make([]*Assembly, len(r.due))
	for i, m := range r.due {
		out[i] = &Assembly{MO: m.message(), p: m}
		r.held -= len(m.parts)
	}
	r.due = nil
	return out
}

// Requeue keeps an expired message whose handing on failed for the next Due.
func (r *Reassembler) Requeue(a *Assembly) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.due = append(r.due, a.p)
	r.held += len(a.p.parts)
}

// Held is the parts held now (for tests and metrics).
func (r *Reassembler) Held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held
}

// evictOldest moves the message waiting longest to due, to be delivered with what it has.
func (r *Reassembler) evictOldest() {
	var old *partial
	for _, m := range r.pending {
		if old == nil || m.since.Before(old.since) {
			old = m
		}
	}
	if old != nil {
		delete(r.pending, old.key)
		r.due = append(r.due, old)
	}
}

// isRef16 says whether a part's UDH carries a 16-bit reference (IE 0x08), so an 8-bit and a
// 16-bit reference of the same value are different messages.
func isRef16(p *PDU) bool {
	if p.ESMClass&ESMClassUDHI == 0 {
		return false
	}
	b := p.ShortMessage
	if len(b) == 0 {
		b, _ = p.TLV(TagMessagePayload)
	}
	if len(b) == 0 || int(b[0])+1 > len(b) {
		return false
	}
	udh := b[1 : 1+int(b[0])]
	ref16 := false
	for len(udh) >= 2 && 2+int(udh[1]) <= len(udh) {
		switch {
		case udh[0] == 0 && udh[1] == 3:
			ref16 = false
		case udh[0] == 8 && udh[1] == 4:
			ref16 = true
		}
		udh = udh[2+int(udh[1]):]
	}
	return ref16
}

// message joins the parts in order. A whole message whose parts share a coding is decoded as
// one body, so a character an SMSC split across parts (an escape, a surrogate pair) comes
// through whole; otherwise (a part missing, mixed codings, an odd UCS-2 body) each part is
// decoded alone, so one part's octets cannot shift the next's. Missing parts are just absent.
func (m *partial) message() MO {
	joined := len(m.parts) == m.key.total
	for _, pt := range m.parts {
		joined = joined && pt.coding == m.first.DataCoding && (pt.coding != CodingUCS2 || len(pt.body)%2 == 0)
	}
	var sb strings.Builder
	if joined {
		var body []byte
		for seq := 1; seq <= m.key.total; seq++ {
			body = append(body, m.parts[seq].body...)
		}
		sb.WriteString(moText(m.first.DataCoding, body))
	} else {
		for seq := 1; seq <= m.key.total; seq++ {
			if pt, ok := m.parts[seq]; ok {
				sb.WriteString(moText(pt.coding, pt.body))
			}
		}
	}
	return moOf(m.first, sb.String(), len(m.parts), m.key.total)
}
