package smpp

import (
	"encoding/binary"
	"fmt"
)

// TLV is an optional parameter: a tag and its value.
type TLV struct {
	Tag   uint16
	Value []byte
}

// The tags this package reads or writes.
const (
	TagReceiptedMessageID uint16 = 0x001E // C-string: the message a receipt is about
	TagSarMsgRefNum       uint16 = 0x020C // 2 octets: a concatenated message's reference
	TagSarTotalSegments   uint16 = 0x020E // 1 octet
	TagSarSegmentSeqnum   uint16 = 0x020F // 1 octet, from 1
	TagSCInterfaceVersion uint16 = 0x0210 // 1 octet, in bind responses
	TagNetworkErrorCode   uint16 = 0x0423 // 3 octets: network type, then a 2-octet code
	TagMessagePayload     uint16 = 0x0424 // the whole text, instead of short_message
	TagMessageState       uint16 = 0x0427 // 1 octet
)

// maxTLVs bounds the TLVs read from one PDU; a body of one-octet-free TLVs (4 octets each)
// could otherwise ask for thousands of entries.
const maxTLVs = 32

// tlvs reads the rest of the body as TLVs, copying their values into one allocation.
func (r *reader) tlvs() []TLV {
	if len(r.b) == 0 {
		return nil
	}
	n, total := 0, 0
	for rest := r.b; len(rest) > 0; n++ {
		if len(rest) < 4 {
			r.fail(fmt.Errorf("TLV header cut short: %w", ErrMalformed))
			return nil
		}
		l := int(binary.BigEndian.Uint16(rest[2:]))
		if 4+l > len(rest) {
			r.fail(fmt.Errorf("TLV %#04x of %d octets, %d left: %w", binary.BigEndian.Uint16(rest), l, len(rest)-4, ErrMalformed))
			return nil
		}
		if n == maxTLVs {
			r.fail(fmt.Errorf("over %d TLVs: %w", maxTLVs, ErrMalformed))
			return nil
		}
		total += l
		rest = rest[4+l:]
	}
	out := make([]TLV, n)
	vals := make([]byte, total)
	for i := range out {
		l := int(binary.BigEndian.Uint16(r.b[2:]))
		out[i].Tag = binary.BigEndian.Uint16(r.b)
		out[i].Value = vals[:l:l]
		copy(out[i].Value, r.b[4:4+l])
		vals, r.b = vals[l:], r.b[4+l:]
	}
	return out
}

func (w *writer) tlvs(ts []TLV) {
	for _, t := range ts {
		if len(t.Value) > 0xFFFF {
			w.fail(fmt.Errorf("TLV %#04x of %d octets: %w", t.Tag, len(t.Value), ErrFieldTooLong))
			return
		}
		w.b = binary.BigEndian.AppendUint16(w.b, t.Tag)
		w.b = binary.BigEndian.AppendUint16(w.b, uint16(len(t.Value)))
		w.b = append(w.b, t.Value...)
	}
}

// TLV returns the value of the first TLV with the tag.
func (p *PDU) TLV(tag uint16) ([]byte, bool) {
	for _, t := range p.TLVs {
		if t.Tag == tag {
			return t.Value, true
		}
	}
	return nil, false
}

// TLVString reads a C-string TLV (its NUL optional: some SMSCs leave it out).
func (p *PDU) TLVString(tag uint16) (string, bool) {
	v, ok := p.TLV(tag)
	if !ok {
		return "", false
	}
	for i, c := range v {
		if c == 0 {
			v = v[:i]
			break
		}
	}
	return string(v), true
}

// TLVUint reads a TLV of 1, 2 or 4 octets as a number.
func (p *PDU) TLVUint(tag uint16) (uint32, bool) {
	v, ok := p.TLV(tag)
	if !ok {
		return 0, false
	}
	switch len(v) {
	case 1:
		return uint32(v[0]), true
	case 2:
		return uint32(binary.BigEndian.Uint16(v)), true
	case 4:
		return binary.BigEndian.Uint32(v), true
	}
	return 0, false
}

// StringTLV makes a C-string TLV.
func StringTLV(tag uint16, s string) TLV {
	return TLV{Tag: tag, Value: append([]byte(s), 0)}
}

// ByteTLV makes a one-octet TLV.
func ByteTLV(tag uint16, v byte) TLV { return TLV{Tag: tag, Value: []byte{v}} }

// Uint16TLV makes a two-octet TLV.
func Uint16TLV(tag uint16, v uint16) TLV {
	return TLV{Tag: tag, Value: binary.BigEndian.AppendUint16(nil, v)}
}
