package smpp

import (
	"errors"
	"fmt"
	"unicode/utf16"

	"github.com/tuma-sms/tuma/carriers"
)

// Concat is how the parts of a long message are tied together.
type Concat uint8

// The ways. UDH is the most portable (notes/telecom.md §3.3); SAR leaves the header to the SMSC.
const (
	ConcatUDH Concat = iota // esm_class UDHI and 05 00 03 ref total seq before each part
	ConcatSAR               // sar_msg_ref_num, sar_total_segments, sar_segment_seqnum TLVs
)

// ParseConcat reads "udh" or "sar".
func ParseConcat(s string) (Concat, error) {
	switch s {
	case "udh":
		return ConcatUDH, nil
	case "sar":
		return ConcatSAR, nil
	}
	return 0, fmt.Errorf("concatenation %q: want udh or sar", s)
}

func (c Concat) String() string {
	if c == ConcatSAR {
		return "sar"
	}
	return "udh"
}

// Part is one submit_sm's worth of a message.
type Part struct {
	ESMClass     byte
	DataCoding   byte
	ShortMessage []byte
	TLVs         []TLV
}

// ErrEmptyText is returned for a message with nothing to send.
var ErrEmptyText = errors.New("smpp: empty text")

// Parts splits text the way it is billed (carriers.Split: escape and surrogate pairs never
// straddle parts) and encodes each part: GSM 03.38 unpacked with data_coding 0, else UCS-2.
// ref ties the parts of one message together; the UDH carries its low 8 bits.
func Parts(text string, ref uint16, concat Concat) ([]Part, carriers.Encoding, error) {
	seg, texts := carriers.Split(text)
	switch {
	case len(texts) == 0:
		return nil, 0, ErrEmptyText
	case len(texts) > carriers.MaxParts:
		return nil, 0, fmt.Errorf("%d parts, at most %d: %w", len(texts), carriers.MaxParts, ErrFieldTooLong)
	}
	out := make([]Part, len(texts))
	for i, t := range texts {
		p := &out[i]
		var body []byte
		if seg.Encoding == carriers.GSM7 {
			b, err := carriers.EncodeGSM7(t)
			if err != nil {
				return nil, 0, fmt.Errorf("part %d: %w", i+1, err)
			}
			body = b
		} else {
			p.DataCoding = CodingUCS2
			body = carriers.EncodeUCS2(t)
		}
		switch {
		case len(texts) == 1:
			p.ShortMessage = body
		case concat == ConcatSAR:
			p.ShortMessage = body
			p.TLVs = []TLV{Uint16TLV(TagSarMsgRefNum, ref), ByteTLV(TagSarTotalSegments, byte(len(texts))),
				ByteTLV(TagSarSegmentSeqnum, byte(i+1))}
		default:
			p.ESMClass = ESMClassUDHI
			p.ShortMessage = append([]byte{5, 0, 3, byte(ref), byte(len(texts)), byte(i + 1)}, body...)
		}
	}
	return out, seg.Encoding, nil
}

// Segment says which part of which message a received short_message is, from its UDH (8- or
// 16-bit reference) or SAR TLVs; a whole message is part 1 of 1. body is the text without
// the header.
type Segment struct {
	Ref          uint16
	Total, Seq   int
	Body         []byte
	Concatenated bool
}

// ReadSegment reads a submit_sm or deliver_sm's concatenation.
func ReadSegment(p *PDU) (Segment, error) {
	s := Segment{Total: 1, Seq: 1, Body: p.ShortMessage}
	if p.ESMClass&ESMClassUDHI != 0 {
		b := p.ShortMessage
		if len(b) == 0 || int(b[0])+1 > len(b) {
			return s, fmt.Errorf("user data header longer than the message: %w", ErrMalformed)
		}
		udh := b[1 : 1+int(b[0])]
		s.Body = b[1+int(b[0]):]
		for len(udh) >= 2 {
			iei, l := udh[0], int(udh[1])
			if 2+l > len(udh) {
				return s, fmt.Errorf("user data header element cut short: %w", ErrMalformed)
			}
			v := udh[2 : 2+l]
			switch {
			case iei == 0 && l == 3:
				s.Ref, s.Total, s.Seq, s.Concatenated = uint16(v[0]), int(v[1]), int(v[2]), true
			case iei == 8 && l == 4:
				s.Ref, s.Total, s.Seq, s.Concatenated = uint16(v[0])<<8|uint16(v[1]), int(v[2]), int(v[3]), true
			}
			udh = udh[2+l:]
		}
	} else if ref, ok := p.TLVUint(TagSarMsgRefNum); ok {
		total, ok1 := p.TLVUint(TagSarTotalSegments)
		seq, ok2 := p.TLVUint(TagSarSegmentSeqnum)
		if !ok1 || !ok2 {
			return s, fmt.Errorf("sar_msg_ref_num without its segment numbers: %w", ErrMalformed)
		}
		s.Ref, s.Total, s.Seq, s.Concatenated = uint16(ref), int(total), int(seq), true
	}
	if s.Concatenated && (s.Total < 1 || s.Seq < 1 || s.Seq > s.Total) {
		return s, fmt.Errorf("part %d of %d: %w", s.Seq, s.Total, ErrMalformed)
	}
	return s, nil
}

// DecodeText turns a part's body into text by its data_coding: the default alphabet as
// unpacked GSM 03.38, UCS-2 as UTF-16BE, Latin-1 and IA5 byte for byte.
func DecodeText(dataCoding byte, body []byte) (string, error) {
	switch dataCoding {
	case CodingDefault:
		return carriers.DecodeGSM7(body)
	case CodingUCS2:
		if len(body)%2 != 0 {
			return "", fmt.Errorf("UCS-2 text of %d octets: %w", len(body), ErrMalformed)
		}
		u := make([]uint16, len(body)/2)
		for i := range u {
			u[i] = uint16(body[2*i])<<8 | uint16(body[2*i+1])
		}
		return string(utf16.Decode(u)), nil
	case 0x01, 0x03:
		r := make([]rune, len(body))
		for i, c := range body {
			r[i] = rune(c)
		}
		return string(r), nil
	}
	return "", fmt.Errorf("data_coding %#02x: %w", dataCoding, ErrMalformed)
}
