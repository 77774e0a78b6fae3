// Mobile-originated messages: a deliver_sm that is no receipt or acknowledgement is a message a
// subscriber sent (SMPP 3.4 §4.6.1, §5.2.12), read here into text whatever its coding.

package smpp

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tuma-sms/tuma/carriers"
)

// IsMO says whether a deliver_sm is a mobile-originated message: esm_class message type
// (bits 5-2) 0, the default. 0x04 is a delivery receipt; 0x08 (SME delivery ack), 0x10 (SME
// manual/user ack), 0x20 (intermediate delivery notification) and the rest are not messages.
func (p *PDU) IsMO() bool { return p.ID == DeliverSM && p.ESMClass&esmTypeMask == 0 }

// MO is a mobile-originated message, whole (or as much of it as came: Incomplete).
type MO struct {
	Source, Dest         string // as the SMSC wrote them: the subscriber, and the number it wrote to
	SourceTON, SourceNPI byte
	DestTON, DestNPI     byte
	DataCoding           byte
	Text                 string // always valid UTF-8
	// Parts is how many parts were joined (1 for a short message); Total how many its header
	// announced. Incomplete: some never came before the wait for them ended.
	Parts, Total int
	Incomplete   bool
}

// moSegment reads which part of which message a deliver_sm is. Its body is the short_message,
// or the message_payload TLV when short_message is empty. A header that cannot be read (cut
// short, garbled, impossible numbers) makes the whole body the text of a single message: a
// subscriber's message is never refused for its framing.
func moSegment(p *PDU) Segment {
	q := *p
	if len(q.ShortMessage) == 0 {
		if v, ok := p.TLV(TagMessagePayload); ok {
			q.ShortMessage = v
		}
	}
	seg, err := ReadSegment(&q)
	if err != nil {
		return Segment{Total: 1, Seq: 1, Body: q.ShortMessage}
	}
	if seg.Concatenated && seg.Total == 1 {
		seg.Concatenated = false // a "1 of 1" header: nothing to wait for
	}
	return seg
}

// moText decodes a part's body by data_coding and never fails: what cannot be read becomes
// U+FFFD, so a subscriber's message is always kept.
//
//   - 0x00 (the SMSC default) and 0xF0-0xF3 (GSM message class, default alphabet): GSM 03.38
//     unpacked, with the extension table;
//   - 0x08: UCS-2 read as UTF-16BE, so a phone's surrogate pairs (emoji) come through; a lone
//     surrogate or an odd last octet is U+FFFD;
//   - 0x01 (IA5): ASCII; 0x03 (Latin-1): ISO-8859-1; anything else (8-bit data, codings this
//     package does not know) is taken as Latin-1, octet for octet (notes/telecom.md §3.3).
func moText(dataCoding byte, body []byte) string {
	switch {
	case dataCoding == CodingDefault || dataCoding&0xFC == 0xF0:
		return gsmText(body)
	case dataCoding == CodingUCS2:
		u := make([]uint16, len(body)/2)
		for i := range u {
			u[i] = uint16(body[2*i])<<8 | uint16(body[2*i+1])
		}
		s := string(utf16.Decode(u)) // lone surrogates are U+FFFD
		if len(body)%2 != 0 {
			s += string(utf8.RuneError)
		}
		return s
	case dataCoding == 0x01:
		var sb strings.Builder
		for _, c := range body {
			if c < 0x80 {
				sb.WriteByte(c)
			} else {
				sb.WriteRune(utf8.RuneError)
			}
		}
		return sb.String()
	}
	r := make([]rune, len(body))
	for i, c := range body {
		r[i] = rune(c)
	}
	return string(r)
}

// gsmText decodes unpacked GSM 03.38, an octet that is no septet (or an escape with nothing
// after it) as U+FFFD.
func gsmText(body []byte) string {
	if s, err := carriers.DecodeGSM7(body); err == nil {
		return s
	}
	var sb strings.Builder
	start := 0
	flush := func(end int) {
		if end > start {
			s, _ := carriers.DecodeGSM7(body[start:end]) // a run of valid septets
			sb.WriteString(s)
		}
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c >= 0x80:
			flush(i)
			sb.WriteRune(utf8.RuneError)
			start = i + 1
		case c == 0x1B && (i+1 == len(body) || body[i+1] >= 0x80):
			flush(i)
			sb.WriteRune(utf8.RuneError)
			if i+1 < len(body) {
				i++
			}
			start = i + 1
		case c == 0x1B:
			i++ // the escape's character
		}
	}
	flush(len(body))
	return sb.String()
}

// moOf is the message of a deliver_sm read alone, or of its parts joined (in order).
func moOf(p *PDU, text string, parts, total int) MO {
	return MO{Source: p.Source, Dest: p.Dest, SourceTON: p.SourceTON, SourceNPI: p.SourceNPI,
		DestTON: p.DestTON, DestNPI: p.DestNPI, DataCoding: p.DataCoding, Text: text, Parts: parts, Total: total,
		Incomplete: parts < total}
}
