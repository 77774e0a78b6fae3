package smpp

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tuma-sms/tuma/carriers"
)

func TestPartsUCS2ThreeParts(t *testing.T) {
	text := strings.Repeat("ж", 135) // 135 UCS-2 units: 67 + 67 + 1
	parts, enc, err := Parts(text, 0x1A7, ConcatUDH)
	if err != nil || enc != carriers.UCS2 || len(parts) != 3 {
		t.Fatalf("%d parts, %s, %v", len(parts), enc, err)
	}
	var got strings.Builder
	for i, p := range parts {
		if p.ESMClass != ESMClassUDHI || p.DataCoding != CodingUCS2 {
			t.Fatalf("part %d: esm_class %#x data_coding %#x", i+1, p.ESMClass, p.DataCoding)
		}
		if want := []byte{5, 0, 3, 0xA7, 3, byte(i + 1)}; !bytes.Equal(p.ShortMessage[:6], want) {
			t.Fatalf("part %d UDH % x, want % x", i+1, p.ShortMessage[:6], want)
		}
		if len(p.ShortMessage) > 140 {
			t.Fatalf("part %d is %d octets", i+1, len(p.ShortMessage))
		}
		pdu := PDU{ESMClass: p.ESMClass, DataCoding: p.DataCoding, ShortMessage: p.ShortMessage}
		seg, err := ReadSegment(&pdu)
		if err != nil || seg.Seq != i+1 || seg.Total != 3 || seg.Ref != 0xA7 {
			t.Fatalf("part %d reads back as %+v, %v", i+1, seg, err)
		}
		s, err := DecodeText(p.DataCoding, seg.Body)
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(s)
	}
	if got.String() != text {
		t.Fatal("the parts do not join back into the text")
	}
}

func TestPartsGSMKeepsEscapePairsWhole(t *testing.T) {
	text := strings.Repeat("a", 152) + "€" + strings.Repeat("a", 152) // worked example 8: 3 parts
	parts, enc, err := Parts(text, 1, ConcatUDH)
	if err != nil || enc != carriers.GSM7 || len(parts) != 3 {
		t.Fatalf("%d parts, %s, %v", len(parts), enc, err)
	}
	for i, p := range parts {
		if p.DataCoding != CodingDefault || len(p.ShortMessage)-6 > 153 {
			t.Fatalf("part %d: coding %#x, %d septets", i+1, p.DataCoding, len(p.ShortMessage)-6)
		}
		if p.ShortMessage[len(p.ShortMessage)-1] == 0x1B {
			t.Fatalf("part %d ends in the middle of an escape pair", i+1)
		}
	}
}

func TestPartsSAR(t *testing.T) {
	parts, _, err := Parts(strings.Repeat("b", 200), 0xBEEF, ConcatSAR)
	if err != nil || len(parts) != 2 {
		t.Fatal(len(parts), err)
	}
	for i, p := range parts {
		pdu := PDU{ShortMessage: p.ShortMessage, TLVs: p.TLVs}
		seg, err := ReadSegment(&pdu)
		if err != nil || p.ESMClass != 0 || seg.Ref != 0xBEEF || seg.Total != 2 || seg.Seq != i+1 {
			t.Fatalf("part %d: %+v %v", i+1, seg, err)
		}
	}
}

func TestPartsSingleHasNoHeader(t *testing.T) {
	parts, enc, err := Parts("Habari {jina}", 1, ConcatUDH)
	if err != nil || len(parts) != 1 || enc != carriers.GSM7 || parts[0].ESMClass != 0 || parts[0].TLVs != nil {
		t.Fatalf("%+v %v", parts, err)
	}
	if want := []byte("Habari \x1b(jina\x1b)"); !bytes.Equal(parts[0].ShortMessage, want) {
		t.Fatalf("% x", parts[0].ShortMessage)
	}
	if _, _, err := Parts("", 1, ConcatUDH); err == nil {
		t.Fatal("an empty text has parts")
	}
}

func FuzzReadSegment(f *testing.F) {
	f.Add(byte(ESMClassUDHI), []byte{5, 0, 3, 1, 2, 1, 'a'})
	f.Add(byte(ESMClassUDHI), []byte{6, 8, 4, 1, 2, 3, 1, 'a'})
	f.Add(byte(ESMClassUDHI), []byte{9, 0, 3})
	f.Fuzz(func(t *testing.T, esm byte, sm []byte) {
		p := PDU{ESMClass: esm, ShortMessage: sm}
		seg, err := ReadSegment(&p)
		if err == nil && (len(seg.Body) > len(sm) || seg.Seq < 1 || seg.Seq > seg.Total) {
			t.Fatalf("%+v from % x", seg, sm)
		}
	})
}
