// The body of a delivery: {"events":[…]}, oldest first.

package webhooks

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

// messageData is a message event's data (CONTRACT §14). Its absent values are zero values
// rather than pointers, so making one allocates nothing.
type messageData struct {
	MessageID         uuid.UUID
	JobID             uuid.UUID // uuid.Nil: null
	CampaignID        uuid.UUID // uuid.Nil: null
	Reference         *string
	Recipient         string // omitted when empty, as Network, SenderID and Parts
	Network           string
	SenderID          string
	Status            string
	ProviderStatus    string
	ProviderMessageID *string
	Parts             int
	CostCents         int64     // shown as KES with two decimals, as the API shows money
	SentAt            time.Time // zero: null, as DeliveredAt
	DeliveredAt       time.Time
}

// appendStamp writes a time as a JSON string in RFC 3339 (UTC, nanoseconds as needed, as
// time.RFC3339Nano spells it): no character of it needs escaping. Written by hand: a body
// has two or three times an event, and the layout-driven formatter was a fifth of Body.
func appendStamp(b []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		b = append(b, '"')
		b = t.AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	}
	h, mi, sec := t.Clock()
	b = append(b, '"', byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+int(mo)/10), byte('0'+int(mo)%10), '-', byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':', byte('0'+sec/10), byte('0'+sec%10))
	if ns := t.Nanosecond(); ns != 0 {
		var f [10]byte
		f[0] = '.'
		for i := 9; i > 0; i-- {
			f[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for f[n-1] == '0' {
			n--
		}
		b = append(b, f[:n]...)
	}
	return append(b, 'Z', '"')
}

func appendOptStamp(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	return appendStamp(b, t)
}

// Body renders a delivery's events; msgs has the message each message event describes, by
// the event's place (zero: gone, the id is all there is). A
// message event shows its message as the event left it: message.sent is "sent" whatever
// happened since, so every attempt of a delivery carries the same events. It is written by
// hand: encoding/json took a fifth of a busy node's CPU here, mostly re-checking the data it
// had just made.
func Body(d persistence.WebhookDelivery, msgs []persistence.MessageEventData) ([]byte, error) {
	b := make([]byte, 0, 64+len(d.Events)*640) // a message event is 480–560 bytes: grown, the body was copied whole
	b = append(b, `{"events":[`...)
	for i, e := range d.Events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":"`...)
		b = persistence.AppendEventID(b, e.Seq)
		b = append(b, `","type":`...)
		b = appendString(b, string(e.Type))
		b = append(b, `,"created_at":`...)
		b = appendStamp(b, e.CreatedAt)
		b = append(b, `,"data":`...)
		switch {
		case e.Type.IsMessage():
			b = appendMessage(b, messageEvent(e, msgs[i]))
		case len(e.Data) == 0:
			b = append(b, "{}"...)
		case !json.Valid(e.Data):
			return nil, fmt.Errorf("event %s: its data is not JSON", e.ID())
		default:
			b = append(b, e.Data...)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

// appendMessage writes a message event's data in the order of CONTRACT §14.
func appendMessage(b []byte, m messageData) []byte {
	b = append(b, `{"message_id":`...)
	b = appendUUID(b, m.MessageID)
	b = append(b, `,"job_id":`...)
	if m.JobID == uuid.Nil {
		b = append(b, "null"...)
	} else {
		b = appendUUID(b, m.JobID)
	}
	b = append(b, `,"campaign_id":`...)
	if m.CampaignID == uuid.Nil {
		b = append(b, "null"...)
	} else {
		b = appendUUID(b, m.CampaignID)
	}
	b = append(b, `,"reference":`...)
	b = appendOptString(b, m.Reference)
	for _, f := range [...]struct{ k, v string }{{"recipient", m.Recipient}, {"network", m.Network}, {"sender_id", m.SenderID}} {
		if f.v != "" {
			b = append(b, `,"`...)
			b = append(b, f.k...)
			b = append(b, `":`...)
			b = appendString(b, f.v)
		}
	}
	b = append(b, `,"status":`...)
	b = appendString(b, m.Status)
	b = append(b, `,"provider_status":`...)
	b = appendString(b, m.ProviderStatus)
	b = append(b, `,"provider_message_id":`...)
	b = appendOptString(b, m.ProviderMessageID)
	if m.Parts != 0 {
		b = append(b, `,"parts":`...)
		b = strconv.AppendInt(b, int64(m.Parts), 10)
	}
	b = append(b, `,"cost_kes":`...)
	b = appendKES(b, m.CostCents)
	b = append(b, `,"sent_at":`...)
	b = appendOptStamp(b, m.SentAt)
	b = append(b, `,"delivered_at":`...)
	b = appendOptStamp(b, m.DeliveredAt)
	return append(b, '}')
}

// appendKES writes integer cents as KES with two decimals.
func appendKES(b []byte, cents int64) []byte {
	if cents < 0 {
		b, cents = append(b, '-'), -cents
	}
	b = strconv.AppendInt(b, cents/100, 10)
	c := cents % 100
	return append(b, '.', byte('0'+c/10), byte('0'+c%10))
}

// appendUUID writes an id as a JSON string, as uuid.UUID.String spells it.
func appendUUID(b []byte, id uuid.UUID) []byte {
	var s [36]byte
	hex.Encode(s[0:8], id[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], id[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], id[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], id[8:10])
	s[23] = '-'
	hex.Encode(s[24:], id[10:])
	b = append(b, '"')
	b = append(b, s[:]...)
	return append(b, '"')
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendString writes s as a JSON string as encoding/json does: quotes, backslashes and
// control characters escaped, <, > and & as \u escapes (safe in HTML), invalid UTF-8 as
// U+FFFD, and U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		// Runs that need no escaping (ids, numbers, times: nearly all of a body) go at once.
		j := i
		for j < len(s) && plain(s[j]) {
			j++
		}
		b = append(b, s[i:j]...)
		if i = j; i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// plain says an ASCII byte goes into a JSON string as it is (HTML-sensitive ones are escaped,
// as encoding/json does).
func plain(c byte) bool {
	return c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

func messageEvent(e persistence.WebhookEvent, m persistence.MessageEventData) messageData {
	out := messageData{MessageID: e.MessageID, Status: string(persistence.MessageSent)}
	if m.ID == uuid.Nil { // gone since (deleted with its account): the id is all there is
		return out
	}
	out.JobID, out.CampaignID, out.Reference = m.JobID, m.CampaignID, m.Reference
	out.Recipient, out.Network, out.SenderID = m.Recipient, m.Network.String(), m.Sender
	out.ProviderMessageID, out.Parts, out.CostCents = m.ProviderMessageID, m.Parts, m.CostCents
	out.SentAt, out.ProviderStatus = m.SentAt, m.ProviderStatus
	switch e.Type {
	case persistence.EventMessageSent:
		if m.Status != persistence.MessageSent { // final since: show the status the event reported
			out.ProviderStatus = "ENROUTE"
			if m.ProviderMessageID == nil {
				out.ProviderStatus = "UNKNOWN"
			}
		}
	case persistence.EventMessageDelivered:
		out.Status, out.DeliveredAt = string(persistence.MessageDelivered), m.DeliveredAt
	case persistence.EventMessageFailed:
		out.Status = string(persistence.MessageFailed)
	}
	return out
}
