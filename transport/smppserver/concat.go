// Concatenated submits: the parts of a long message (UDH IE 0x00 or 0x08, or the SAR TLVs)
// are held per bind by carriers/smpp's Reassembler, the one that joins mobile-originated
// parts, and sent as one message when the last comes.

package smppserver

import (
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers/smpp"
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
	if a == nil {
		return joined{held: true}, smpp.StatusOK
	}
	return joined{sub: Submit{To: a.MO.Dest, From: a.MO.Source, Text: a.MO.Text}, a: a}, smpp.StatusOK
}

// unjoin puts back the parts of a message whose send failed, but the completing one: the
// ESME's resend of that part completes it again.
func (ss *session) unjoin(j joined) {
	if j.a != nil {
		ss.parts.Undo(j.a)
	}
}

// dropExpired drops the messages whose wait is over, or that the bound pushed out.
func (ss *session) dropExpired(now time.Time) {
	for _, a := range ss.parts.Due(now) {
		ss.s.log.Warn("smpp server: incomplete concatenated message dropped",
			slog.String("account", ss.bind.AccountID.String()), slog.String("destination", a.MO.Dest),
			slog.Int("parts", a.MO.Parts), slog.Int("total", a.MO.Total))
	}
}

// heldID is the message_id of a part answered while its message waits for the others: it
// names no message; the completing part's resp carries the message's.
func heldID() string { return uuid.NewString() }
