package smpp

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tuma-sms/tuma/carriers"
)

func TestIsMOByESMClass(t *testing.T) {
	for _, c := range []struct {
		esm  byte
		want bool
	}{
		{0x00, true}, {0x40, true}, {0x03, true}, {0x80, true}, // default type: any mode, UDHI, reply path
		{0x04, false}, {0x44, false}, // delivery receipt
		{0x08, false}, {0x10, false}, {0x20, false}, // SME delivery ack, manual/user ack, intermediate notification
		{0x18, false},
	} {
		p := PDU{Header: Header{ID: DeliverSM}, ESMClass: c.esm}
		if got := p.IsMO(); got != c.want {
			t.Errorf("IsMO(esm_class %#02x) = %v; want %v", c.esm, got, c.want)
		}
	}
	if (&PDU{Header: Header{ID: SubmitSM}}).IsMO() {
		t.Error("a submit_sm is no MO")
	}
}

func TestMOTextCodings(t *testing.T) {
	gsm := "Bei €5 {ok} [x] ~^|\\ £ Ñ @ Δ"
	gsmBody, err := carriers.EncodeGSM7(gsm)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		coding byte
		body   []byte
		want   string
	}{
		{"GSM-7 with extension characters", CodingDefault, gsmBody, gsm},
		{"GSM message class coding", 0xF1, gsmBody, gsm},
		{"GSM octet over 0x7F", CodingDefault, []byte{'h', 0x90, 'i'}, "h\uFFFDi"},
		{"GSM escape at the end", CodingDefault, []byte{'h', 0x1B}, "h\uFFFD"},
		{"GSM escape before a bad octet", CodingDefault, []byte{0x1B, 0xFF, 'a'}, "\uFFFDa"},
		{"UCS-2 with an emoji pair", CodingUCS2, carriers.EncodeUCS2("Habari 😀 ж"), "Habari 😀 ж"},
		{"UCS-2 lone high surrogate", CodingUCS2, []byte{0xD8, 0x3D, 0, 'a'}, "\uFFFDa"},
		{"UCS-2 lone low surrogate", CodingUCS2, []byte{0, 'a', 0xDE, 0x00}, "a\uFFFD"},
		{"UCS-2 odd length", CodingUCS2, []byte{0, 'a', 0}, "a\uFFFD"},
		{"IA5", 0x01, []byte("STOP\x80"), "STOP\uFFFD"},
		{"Latin-1", 0x03, []byte{'c', 'a', 'f', 0xE9}, "café"},
		{"8-bit data as Latin-1", 0x04, []byte{'a', 0xFF}, "aÿ"},
	} {
		if got := moText(c.coding, c.body); got != c.want {
			t.Errorf("%s: moText = %q; want %q", c.name, got, c.want)
		}
	}
}

// moPDU is an MO deliver_sm from 254712345678 to 22384.
func moPDU(esm, coding byte, sm []byte, tlvs ...TLV) *PDU {
	return &PDU{Header: Header{ID: DeliverSM}, SourceTON: 1, SourceNPI: 1, Source: "254712345678", DestTON: 3,
		Dest: "22384", ESMClass: esm, DataCoding: coding, ShortMessage: sm, TLVs: tlvs}
}

// ucs2Parts splits text into n UCS-2 bodies at rune boundaries.
func ucs2Parts(text string, n int) [][]byte {
	rs := []rune(text)
	var out [][]byte
	for i := range n {
		out = append(out, carriers.EncodeUCS2(string(rs[i*len(rs)/n:(i+1)*len(rs)/n])))
	}
	return out
}

func udh8(ref, total, seq byte, body []byte) []byte {
	return append([]byte{5, 0, 3, ref, total, seq}, body...)
}

func udh16(ref uint16, total, seq byte, body []byte) []byte {
	return append([]byte{6, 8, 4, byte(ref >> 8), byte(ref), total, seq}, body...)
}

func TestReassemblyConcatenatedForms(t *testing.T) {
	text := strings.Repeat("Habari ya asubuhi 😀 ", 8) // UCS-2, long
	bodies := ucs2Parts(text, 3)
	forms := map[string]func(seq int) *PDU{
		"UDH 8-bit reference": func(seq int) *PDU {
			return moPDU(ESMClassUDHI, CodingUCS2, udh8(0x2A, 3, byte(seq), bodies[seq-1]))
		},
		"UDH 16-bit reference": func(seq int) *PDU {
			return moPDU(ESMClassUDHI, CodingUCS2, udh16(0x1234, 3, byte(seq), bodies[seq-1]))
		},
		"SAR TLVs": func(seq int) *PDU {
			return moPDU(0, CodingUCS2, bodies[seq-1], Uint16TLV(TagSarMsgRefNum, 0x0101),
				ByteTLV(TagSarTotalSegments, 3), ByteTLV(TagSarSegmentSeqnum, byte(seq)))
		},
	}
	for name, part := range forms {
		for _, order := range [][]int{{1, 2, 3}, {3, 1, 2}} {
			r := NewReassembler(time.Minute, 100)
			now := time.Now()
			var got *Assembly
			for i, seq := range order {
				a, err := r.Add(part(seq), now)
				if err != nil {
					t.Fatalf("%s %v: part %d: %v", name, order, seq, err)
				}
				if (a != nil) != (i == len(order)-1) {
					t.Fatalf("%s %v: part %d completed = %v", name, order, seq, a != nil)
				}
				got = a
			}
			if got.MO.Text != text || got.MO.Parts != 3 || got.MO.Total != 3 || got.MO.Incomplete ||
				got.MO.Source != "254712345678" || got.MO.Dest != "22384" {
				t.Errorf("%s %v: %+v; want the text whole", name, order, got.MO)
			}
			if r.Held() != 0 {
				t.Errorf("%s %v: %d parts still held", name, order, r.Held())
			}
		}
	}
}

func TestReassemblyDuplicateAndSeparateMessages(t *testing.T) {
	r := NewReassembler(time.Minute, 100)
	now := time.Now()
	add := func(p *PDU) *Assembly {
		t.Helper()
		a, err := r.Add(p, now)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	add(moPDU(ESMClassUDHI, 0, udh8(7, 2, 1, []byte("Hello "))))
	if a := add(moPDU(ESMClassUDHI, 0, udh8(7, 2, 1, []byte("Hello ")))); a != nil || r.Held() != 1 {
		t.Fatalf("a resent part: %+v, %d held; want it taken once", a, r.Held())
	}
	other := moPDU(ESMClassUDHI, 0, udh8(7, 2, 2, []byte("other")))
	other.Source = "254733000001" // same reference, another subscriber
	if a := add(other); a != nil {
		t.Fatalf("another sender's part completed %+v", a.MO)
	}
	if a := add(moPDU(ESMClassUDHI, 0, udh8(7, 2, 2, []byte("world")))); a == nil || a.MO.Text != "Hello world" {
		t.Fatalf("got %+v; want Hello world", a)
	}
	if a := add(moPDU(ESMClassUDHI, 0, udh8(7, 2, 2, []byte("world")))); a != nil || r.Held() != 1 {
		t.Fatalf("the last part resent after its message completed: %+v, %d held; want a duplicate", a, r.Held())
	}
	if a := add(moPDU(0, 0, []byte("STOP"))); a == nil || a.MO.Text != "STOP" || a.MO.Parts != 1 {
		t.Fatalf("a single message: %+v", a)
	}
}

// A message whose last part never comes is handed on with what it has once the wait is over.
func TestReassemblyMissingPartExpires(t *testing.T) {
	r := NewReassembler(time.Minute, 100)
	now := time.Now()
	for _, seq := range []byte{1, 3} {
		if a, err := r.Add(moPDU(ESMClassUDHI, 0, udh8(9, 3, seq, []byte{'a' + seq})), now); a != nil || err != nil {
			t.Fatalf("part %d: %v %v", seq, a, err)
		}
	}
	if due := r.Due(now.Add(59 * time.Second)); len(due) != 0 {
		t.Fatalf("due before the wait is over: %+v", due)
	}
	due := r.Due(now.Add(time.Minute))
	if len(due) != 1 || due[0].MO.Text != "bd" || !due[0].MO.Incomplete || due[0].MO.Parts != 2 || due[0].MO.Total != 3 {
		t.Fatalf("due = %+v; want the 2 parts it has", due)
	}
	if r.Held() != 0 {
		t.Fatalf("%d held after it was handed on", r.Held())
	}
	r.Requeue(due[0]) // handing on failed: kept for the next round
	if again := r.Due(now.Add(time.Minute)); len(again) != 1 || again[0].MO.Text != "bd" {
		t.Fatalf("requeued = %+v", again)
	}
}

// At the bound the oldest message waiting is pushed out with what it has, and the part that
// met the bound is refused for now.
func TestReassemblyBound(t *testing.T) {
	r := NewReassembler(time.Hour, 2)
	now := time.Now()
	_, _ = r.Add(moPDU(ESMClassUDHI, 0, udh8(1, 2, 1, []byte("old"))), now)
	_, _ = r.Add(moPDU(ESMClassUDHI, 0, udh8(2, 2, 1, []byte("new"))), now.Add(time.Second))
	if _, err := r.Add(moPDU(ESMClassUDHI, 0, udh8(3, 2, 1, []byte("x"))), now); err != ErrReassemblyFull {
		t.Fatalf("over the bound: %v; want ErrReassemblyFull", err)
	}
	due := r.Due(now)
	if len(due) != 1 || due[0].MO.Text != "old" || r.Held() != 1 {
		t.Fatalf("due = %+v, %d held; want the oldest pushed out", due, r.Held())
	}
	if _, err := r.Add(moPDU(ESMClassUDHI, 0, udh8(3, 2, 1, []byte("x"))), now); err != nil {
		t.Fatalf("after the push-out: %v", err)
	}
}

// A failed hand-on puts the parts back but the last, whose resend completes the message again.
func TestReassemblyUndo(t *testing.T) {
	r := NewReassembler(time.Hour, 10)
	now := time.Now()
	_, _ = r.Add(moPDU(ESMClassUDHI, 0, udh8(4, 2, 1, []byte("ab"))), now)
	a, _ := r.Add(moPDU(ESMClassUDHI, 0, udh8(4, 2, 2, []byte("cd"))), now)
	r.Undo(a)
	if r.Held() != 1 {
		t.Fatalf("%d held after undo; want the first part", r.Held())
	}
	a, _ = r.Add(moPDU(ESMClassUDHI, 0, udh8(4, 2, 2, []byte("cd"))), now)
	if a == nil || a.MO.Text != "abcd" {
		t.Fatalf("resent last part gives %+v", a)
	}
}

func TestReassemblyGarbledHeaders(t *testing.T) {
	for _, c := range []struct { // Latin-1 (0x03) where the header becomes text, to read it as is
		name string
		p    *PDU
		want string
	}{
		{"UDH longer than the message", moPDU(ESMClassUDHI, 3, []byte{9, 0, 3, 1}), "\t\x00\x03\x01"},
		{"UDH element cut short", moPDU(ESMClassUDHI, 3, []byte{3, 0, 3, 1, 'h'}), "\x03\x00\x03\x01h"},
		{"part 4 of 3", moPDU(ESMClassUDHI, 3, udh8(1, 3, 4, []byte("hi"))), "\x05\x00\x03\x01\x03\x04hi"},
		{"empty with UDHI", moPDU(ESMClassUDHI, 0, nil), ""},
		{"SAR without its numbers", moPDU(0, 0, []byte("hi"), Uint16TLV(TagSarMsgRefNum, 1)), "hi"},
		{"part 1 of 1", moPDU(ESMClassUDHI, 0, udh8(1, 1, 1, []byte("one"))), "one"},
		{"text in message_payload", moPDU(0, 0, nil, TLV{Tag: TagMessagePayload, Value: []byte("long text")}), "long text"},
	} {
		r := NewReassembler(time.Minute, 10)
		a, err := r.Add(c.p, time.Now())
		if err != nil || a == nil {
			t.Errorf("%s: %v %v; want a message", c.name, a, err)
			continue
		}
		if a.MO.Text != c.want || !utf8.ValidString(a.MO.Text) {
			t.Errorf("%s: text %q; want %q", c.name, a.MO.Text, c.want)
		}
	}
}

// FuzzMO feeds arbitrary deliver_sm fields to the reassembler: it never panics, its texts are
// valid UTF-8, what it holds stays within its bound and expiry empties it.
func FuzzMO(f *testing.F) {
	f.Add(byte(ESMClassUDHI), byte(CodingUCS2), udh8(1, 2, 1, carriers.EncodeUCS2("😀")), []byte{}, uint8(2))
	f.Add(byte(ESMClassUDHI), byte(0), udh16(0x101, 3, 2, []byte("ab\x1b")), []byte{}, uint8(3))
	f.Add(byte(0), byte(CodingUCS2), []byte{0xD8, 0x3D}, []byte{0x02, 0x0C, 0, 2, 0, 1, 0x02, 0x0E, 0, 1, 2, 0x02, 0x0F, 0, 1, 1}, uint8(1))
	f.Add(byte(ESMClassUDHI), byte(3), []byte{200, 0, 3}, []byte{}, uint8(4))
	f.Fuzz(func(t *testing.T, esm, coding byte, sm, tlvBytes []byte, copies uint8) {
		var tlvs []TLV
		if len(tlvBytes) > 0 {
			r := reader{b: tlvBytes}
			tlvs = r.tlvs()
		}
		r := NewReassembler(time.Minute, 8)
		now := time.Now()
		for i := range int(copies%6) + 1 {
			sm := bytes.Clone(sm)
			if len(sm) > 5 && i > 0 {
				sm[5] = byte(i) // another part number, where a UDH would keep it
			}
			a, err := r.Add(moPDU(esm&^esmTypeMask, coding, sm, tlvs...), now)
			if err != nil && err != ErrReassemblyFull {
				t.Fatal(err)
			}
			if a != nil && !utf8.ValidString(a.MO.Text) {
				t.Fatalf("invalid UTF-8 %q", a.MO.Text)
			}
			if r.Held() > 8 {
				t.Fatalf("%d parts held over the bound", r.Held())
			}
		}
		for _, a := range r.Due(now.Add(time.Minute)) {
			if !utf8.ValidString(a.MO.Text) || a.MO.Parts > a.MO.Total {
				t.Fatalf("due %+v", a.MO)
			}
		}
		if r.Held() != 0 {
			t.Fatalf("%d held after expiry", r.Held())
		}
	})
}
