package smpp

import (
	"bytes"
	"strings"
	"time"
)

// MessageState is SMPP's message_state (TLV 0x0427, query_sm_resp).
type MessageState uint8

// The states (SMPP 3.4 §5.2.28).
const (
	StateEnroute       MessageState = 1
	StateDelivered     MessageState = 2
	StateExpired       MessageState = 3
	StateDeleted       MessageState = 4
	StateUndeliverable MessageState = 5
	StateAccepted      MessageState = 6
	StateUnknown       MessageState = 7
	StateRejected      MessageState = 8
)

var stateStats = [...]string{"", "ENROUTE", "DELIVRD", "EXPIRED", "DELETED", "UNDELIV", "ACCEPTD", "UNKNOWN", "REJECTD"}

// String is the state's receipt stat word (DELIVRD …).
func (s MessageState) String() string {
	if s >= StateEnroute && s <= StateRejected {
		return stateStats[s]
	}
	return "STATE(" + itoa(int(s)) + ")"
}

// Final says whether the state ends the message's life: all but ENROUTE and ACCEPTD (which
// Kannel too reads as buffered), and values out of range.
func (s MessageState) Final() bool {
	return s >= StateDelivered && s <= StateRejected && s != StateAccepted
}

// StateFromStat reads a receipt's stat word, short (DELIVRD) or long (DELIVERED), any case.
func StateFromStat(stat string) (MessageState, bool) {
	switch strings.ToUpper(strings.TrimSpace(stat)) {
	case "ENROUTE":
		return StateEnroute, true
	case "DELIVRD", "DELIVERED":
		return StateDelivered, true
	case "EXPIRED":
		return StateExpired, true
	case "DELETED":
		return StateDeleted, true
	case "UNDELIV", "UNDELIVERABLE":
		return StateUndeliverable, true
	case "ACCEPTD", "ACCEPTED":
		return StateAccepted, true
	case "UNKNOWN":
		return StateUnknown, true
	case "REJECTD", "REJECTED":
		return StateRejected, true
	}
	return 0, false
}

// ReceiptText is what an Appendix B delivery receipt text says.
type ReceiptText struct {
	ID              string // as written
	Sub, Dlvrd      string
	Submitted, Done time.Time // zero when absent or unreadable (YYMMDDhhmm[ss], UTC)
	Stat            string    // upper-cased
	State           MessageState
	Err             string
	Text            string
}

// maxReceiptText bounds what ParseReceiptText reads: a receipt is one short_message.
const maxReceiptText = 1024

// receiptKeys are the keys of a receipt text, longest first where one begins another.
var receiptKeys = []string{"submit date:", "done date:", "dlvrd:", "text:", "stat:", "sub:", "err:", "id:"}

// ParseReceiptText reads a receipt text tolerantly: keys in any case and order, variable
// widths, unknown keys skipped, text: running to the end. ok is false unless both an id and a
// stat were found.
func ParseReceiptText(b []byte) (ReceiptText, bool) {
	var r ReceiptText
	if len(b) > maxReceiptText {
		return r, false
	}
	b = bytes.TrimRight(b, "\x00\r\n ")
	s := string(b)
	i := 0
	for i < len(s) {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		key := ""
		for _, k := range receiptKeys {
			if hasPrefixFold(s[i:], k) {
				key = k
				break
			}
		}
		if key == "" { // an unknown key or stray word: skip to the next space
			j := strings.IndexByte(s[i:], ' ')
			if j < 0 {
				break
			}
			i += j
			continue
		}
		i += len(key)
		if key == "text:" {
			r.Text = s[i:]
			break
		}
		j := strings.IndexByte(s[i:], ' ')
		if j < 0 {
			j = len(s) - i
		}
		v := s[i : i+j]
		i += j
		switch key {
		case "id:":
			r.ID = v
		case "sub:":
			r.Sub = v
		case "dlvrd:":
			r.Dlvrd = v
		case "submit date:":
			r.Submitted = receiptTime(v)
		case "done date:":
			r.Done = receiptTime(v)
		case "stat:":
			r.Stat = strings.ToUpper(v)
			r.State, _ = StateFromStat(v)
		case "err:":
			r.Err = v
		}
	}
	return r, r.ID != "" && r.Stat != ""
}

// hasPrefixFold is strings.HasPrefix ignoring ASCII case, byte for byte (strings.ToLower
// would change the length of invalid UTF-8).
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// receiptTime reads YYMMDDhhmm or YYMMDDhhmmss as UTC.
func receiptTime(v string) time.Time {
	layout := "0601021504"
	if len(v) == 12 {
		layout = "060102150405"
	}
	t, err := time.Parse(layout, v)
	if err != nil {
		return time.Time{}
	}
	return t
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// Format writes the receipt in Appendix B's form, the inverse of ParseReceiptText: "id:… sub:…
// dlvrd:… submit date:YYMMDDhhmm done date:YYMMDDhhmm stat:… err:… text:…", dates in UTC,
// stat from State when Stat is empty, text cut to 20 characters.
func (r ReceiptText) Format() string {
	stat := r.Stat
	if stat == "" {
		stat = r.State.String()
	}
	text := []rune(r.Text)
	if len(text) > 20 {
		text = text[:20]
	}
	return "id:" + r.ID + " sub:" + r.Sub + " dlvrd:" + r.Dlvrd + " submit date:" + r.Submitted.UTC().Format("0601021504") +
		" done date:" + r.Done.UTC().Format("0601021504") + " stat:" + stat + " err:" + r.Err + " text:" + string(text)
}
