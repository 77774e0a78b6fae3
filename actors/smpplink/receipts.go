// Delivery receipts: read from deliver_sm, correlated to the id the engine knows, and folded
// over a long message's parts.

package smpplink

import (
	"sync"
	"time"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers/smpp"
)

// earlyHold is how long a receipt that overtook its part's submit_sm_resp waits to be claimed
// while a long message is being submitted on the link.
const earlyHold = time.Second

// partsTTL is how long a long message waits for its parts' receipts before it is forgotten
// (then its first part's receipt alone settles it, as after a restart).
const partsTTL = 24 * time.Hour

// deliver reads a deliver_sm on one of the link's binds. The engine records receipts in
// batches; one lost to a crash is recovered by the engine's query_sm of messages left sent.
func (l *link) deliver(p *smpp.PDU) smpp.Status {
	if !p.IsReceipt() { // an SME or intermediate acknowledgement (MO go to l.mo)
		l.set.log.Debug("smpp deliver_sm neither receipt nor message ignored", "network", l.network,
			"esm_class", p.ESMClass)
		return smpp.StatusOK
	}
	if l.set.sink.Load() == nil {
		return smpp.StatusXTAppn // not ready to record it: the SMSC delivers it again later
	}
	id, st, ok := l.readReceipt(p)
	if !ok {
		l.set.log.Warn("smpp receipt without an id or a state", "network", l.network, "text", string(p.ShortMessage))
		return smpp.StatusOK // asking for it again would bring the same bytes
	}
	l.parts.receipt(id, st, l.emit)
	return smpp.StatusOK
}

// readReceipt prefers the TLVs (the id as submit_sm_resp wrote it) to the text (whose id the
// bind's ids option converts).
func (l *link) readReceipt(p *smpp.PDU) (string, actors.CarrierStatus, bool) {
	text, textOK := smpp.ParseReceiptText(p.ShortMessage)
	id, ok := p.TLVString(smpp.TagReceiptedMessageID)
	if ok && id != "" {
		id = smpp.NormalizeID(id)
	} else if textOK {
		form := smpp.IDSame
		if len(l.binds) > 0 {
			form = l.binds[0].Config().IDForm
		}
		id = smpp.ReceiptID(text.ID, form)
	} else {
		return "", actors.CarrierStatus{}, false
	}
	state := text.State
	if v, ok := p.TLVUint(smpp.TagMessageState); ok {
		state = smpp.MessageState(v)
	}
	if state == 0 {
		return "", actors.CarrierStatus{}, false
	}
	// Receipt dates have minutes at best: the time it reached us keeps sent before delivered.
	return id, status(state, text.Err, time.Now()), true
}

func (l *link) emit(id string, st actors.CarrierStatus) {
	if f := l.set.sink.Load(); f != nil {
		(*f)(l.network, id, st)
	}
}

// parts folds the receipts of long messages: a message is delivered when every part is, and
// failed with its first failed part's status otherwise.
type parts struct {
	mu       sync.Mutex
	byID     map[string]*longMessage // a part's id → its message
	inFlight int                     // long messages being submitted now
	early    map[string]earlyReceipt
}

type longMessage struct {
	first   string // the id the engine knows the message by
	left    int    // parts sent whose final receipt has not come
	failed  *actors.CarrierStatus
	last    actors.CarrierStatus
	started time.Time
	open    bool // still being submitted: more parts may come
}

type earlyReceipt struct {
	id string
	st actors.CarrierStatus
	at time.Time
}

func newParts() *parts {
	return &parts{byID: map[string]*longMessage{}, early: map[string]earlyReceipt{}}
}

// begin says a long message's parts are about to go; done must follow.
func (ps *parts) begin() {
	ps.mu.Lock()
	ps.inFlight++
	ps.mu.Unlock()
}

// sent records a long message's part, once the SMSC has taken it; emit receives a receipt
// that had overtaken it.
func (ps *parts) sent(m *longMessage, id string, emit func(string, actors.CarrierStatus)) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if m.first == "" {
		m.first = id
	}
	m.left++
	ps.byID[id] = m
	if r, ok := ps.early[id]; ok {
		delete(ps.early, id)
		ps.fold(m, id, r.st, emit)
	}
}

// done ends a long message's submission: refused is set when a part after the first was
// refused (the message then ends failed).
func (ps *parts) done(m *longMessage, refused *actors.CarrierStatus, emit func(string, actors.CarrierStatus)) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.inFlight--
	m.open = false
	if refused != nil && m.failed == nil {
		m.failed = refused
	}
	if m.left == 0 && m.first != "" {
		ps.finish(m, emit)
	}
}

// receipt takes a final receipt for id, or passes a non-final one by.
func (ps *parts) receipt(id string, st actors.CarrierStatus, emit func(string, actors.CarrierStatus)) {
	if !st.Final {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if m, ok := ps.byID[id]; ok {
		ps.fold(m, id, st, emit)
		return
	}
	if ps.inFlight > 0 { // it may be a part whose submit_sm_resp is still on its way
		ps.early[id] = earlyReceipt{id: id, st: st, at: time.Now()}
		return
	}
	emit(id, st)
}

func (ps *parts) fold(m *longMessage, id string, st actors.CarrierStatus, emit func(string, actors.CarrierStatus)) {
	delete(ps.byID, id)
	m.left--
	m.last = st
	if !st.Delivered && m.failed == nil {
		f := st
		m.failed = &f
	}
	if m.left == 0 && !m.open {
		ps.finish(m, emit)
	}
}

func (ps *parts) finish(m *longMessage, emit func(string, actors.CarrierStatus)) {
	st := m.last
	if m.failed != nil {
		st = *m.failed
	}
	emit(m.first, st)
}

// expire returns the early receipts no part claimed in time, and forgets long messages whose
// receipts never all came.
func (ps *parts) expire(now time.Time) []earlyReceipt {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []earlyReceipt
	for id, r := range ps.early {
		if now.Sub(r.at) >= earlyHold || ps.inFlight == 0 {
			out = append(out, r)
			delete(ps.early, id)
		}
	}
	for id, m := range ps.byID {
		if now.Sub(m.started) > partsTTL {
			delete(ps.byID, id)
		}
	}
	return out
}
