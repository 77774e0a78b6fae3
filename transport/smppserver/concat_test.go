package smppserver

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/tuma-sms/tuma/carriers/smpp"
)

// flakySender refuses its first n submits as sends that failed, then records the others.
type flakySender struct {
	echoSender
	mu    sync.Mutex
	fails int
	sent  []Submit
}

func (f *flakySender) Submit(_ context.Context, s Submit) (Accepted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fails > 0 {
		f.fails--
		return Accepted{}, context.DeadlineExceeded
	}
	f.sent = append(f.sent, s)
	return Accepted{MessageID: "job"}, nil
}

func (f *flakySender) submits() []Submit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Submit(nil), f.sent...)
}

// udhPart is part seq of 3 of message ref, 16-bit reference.
func udhPart(seq uint32, ref byte, part byte, text string) *smpp.PDU {
	return &smpp.PDU{Header: smpp.Header{ID: smpp.SubmitSM, Seq: seq}, Source: "S", Dest: "0712345678", ESMClass: smpp.ESMClassUDHI,
		ShortMessage: append([]byte{6, 8, 4, 0, ref, 3, part}, text...)}
}

// The completing part of a message whose send fails is answered with the failure and the
// earlier parts stay held: resending it sends the whole message, once. Parts held when the
// bind ends are never sent.
func TestConcatenatedSendFailsThenResent(t *testing.T) {
	f := &flakySender{fails: 1}
	nc := bound(t, startWith(t, Options{}, f))
	call := func(p *smpp.PDU) *smpp.PDU {
		t.Helper()
		write(t, nc, p)
		r := readPDU(t, nc)
		if r == nil || r.ID != smpp.SubmitSMResp || r.Seq != p.Seq {
			t.Fatalf("part seq %d answered %+v", p.Seq, r)
		}
		return r
	}
	for i, part := range []byte{3, 1} {
		if r := call(udhPart(uint32(2+i), 9, part, "ab")); r.Status != smpp.StatusOK || r.MessageID == "" || r.MessageID == "job" {
			t.Fatalf("held part %d = %s %q; want ESME_ROK with an id of its own", part, r.Status, r.MessageID)
		}
	}
	if r := call(udhPart(4, 9, 2, "cd")); r.Status != smpp.StatusThrottled {
		t.Fatalf("completing part whose send failed = %s; want ESME_RTHROTTLED", r.Status)
	}
	if r := call(udhPart(5, 9, 2, "cd")); r.Status != smpp.StatusOK || r.MessageID != "job" {
		t.Fatalf("the completing part again = %s %q; want ESME_ROK job", r.Status, r.MessageID)
	}
	if got := f.submits(); len(got) != 1 || got[0].Text != "abcdab" || got[0].To != "0712345678" || got[0].From != "S" {
		t.Fatalf("sent %+v; want one message abcdab", got)
	}
	// A message left incomplete at unbind is dropped.
	call(udhPart(6, 10, 1, "zz"))
	write(t, nc, &smpp.PDU{Header: smpp.Header{ID: smpp.Unbind, Seq: 7}})
	if r := readPDU(t, nc); r == nil || r.ID != smpp.UnbindResp {
		t.Fatalf("unbind = %+v", r)
	}
	if got := f.submits(); len(got) != 1 {
		t.Errorf("after unbind, sent %+v; want the one message only", got)
	}
}

// A new long message with the reference, addresses and size of one just sent is a new
// message, sent in its turn: 8-bit references repeat (some clients always use the same one),
// and it was answered ESME_ROK part by part and never sent.
func TestConcatenatedReferenceUsedAgainIsANewMessage(t *testing.T) {
	f := &flakySender{}
	nc := bound(t, startWith(t, Options{}, f))
	seq := uint32(1)
	for _, text := range []string{"first ", "second "} {
		for part := byte(1); part <= 3; part++ {
			seq++
			write(t, nc, udhPart(seq, 7, part, text))
			if r := readPDU(t, nc); r == nil || r.Status != smpp.StatusOK {
				t.Fatalf("part %d of %q answered %+v", part, text, r)
			}
		}
	}
	if got := f.submits(); len(got) != 2 || got[0].Text != "first first first " || got[1].Text != "second second second " {
		t.Fatalf("sent %+v; want both messages", got)
	}
}

// Two long messages whose headers come in message_payload are told apart: each part is
// answered with its own message's id, and each message is sent under it.
func TestConcatenatedHeaderInPayload(t *testing.T) {
	f := &flakySender{}
	nc := bound(t, startWith(t, Options{}, f))
	part := func(seq uint32, ref, n byte, text string) *smpp.PDU {
		return &smpp.PDU{Header: smpp.Header{ID: smpp.SubmitSM, Seq: seq}, Source: "S", Dest: "0712345678", ESMClass: smpp.ESMClassUDHI,
			TLVs: []smpp.TLV{{Tag: smpp.TagMessagePayload, Value: append([]byte{5, 0, 3, ref, 2, n}, text...)}}}
	}
	ids := map[string]string{}
	for i, p := range []*smpp.PDU{part(2, 1, 1, "A1"), part(3, 2, 1, "B1")} {
		write(t, nc, p)
		r := readPDU(t, nc)
		if r == nil || r.Status != smpp.StatusOK {
			t.Fatalf("first part %d answered %+v", i, r)
		}
		ids[string(rune('A'+i))] = r.MessageID
	}
	if ids["A"] == ids["B"] {
		t.Fatalf("both messages' first parts answered %s", ids["A"])
	}
	for _, p := range []*smpp.PDU{part(4, 1, 2, "A2"), part(5, 2, 2, "B2")} {
		write(t, nc, p)
		if r := readPDU(t, nc); r == nil || r.Status != smpp.StatusOK {
			t.Fatalf("last part answered %+v", r)
		}
	}
	got := f.submits()
	if len(got) != 2 || got[0].Text != "A1A2" || got[0].MessageID.String() != ids["A"] || got[1].Text != "B1B2" || got[1].MessageID.String() != ids["B"] {
		t.Fatalf("sent %+v; want A1A2 as %s and B1B2 as %s", got, ids["A"], ids["B"])
	}
}

// A long message's parts are held to the rules of a single submit_sm's text: a part that is
// no text in its data_coding is refused (0x104) when it comes, and a message whose parts
// differ in data_coding is refused when it completes; nothing of either is sent. Before, the
// joined text took U+FFFD, went as UCS-2 and was billed about twice.
func TestConcatenatedTextIsChecked(t *testing.T) {
	f := &flakySender{}
	nc := bound(t, startWith(t, Options{}, f))
	call := func(p *smpp.PDU) smpp.Status {
		t.Helper()
		write(t, nc, p)
		r := readPDU(t, nc)
		if r == nil || r.Seq != p.Seq {
			t.Fatalf("seq %d answered %+v", p.Seq, r)
		}
		return r.Status
	}
	if st := call(udhPart(2, 1, 1, "caf\x80")); st != StatusInvDCS {
		t.Errorf("a GSM part with an octet over 0x7F = %s; want 0x104", st)
	}
	odd := udhPart(3, 2, 1, "abc")
	odd.DataCoding = smpp.CodingUCS2
	if st := call(odd); st != StatusInvDCS {
		t.Errorf("a UCS-2 part of odd length = %s; want 0x104", st)
	}
	call(udhPart(4, 3, 1, "ab"))
	call(udhPart(5, 3, 2, "cd"))
	mixed := udhPart(6, 3, 3, "\x00e")
	mixed.DataCoding = smpp.CodingUCS2
	if st := call(mixed); st != StatusInvDCS {
		t.Errorf("a part in another data_coding completing its message = %s; want 0x104", st)
	}
	if got := f.submits(); len(got) != 0 {
		t.Errorf("sent %+v; want nothing", got)
	}
}

// A long message's parts are joined per account, whichever bind each comes on: spread over
// two binds, or with its last part sent again on a new bind after the first one ended, it is
// sent once, whole, under the id its first part was answered with. Before, each bind held its
// own parts: every part was answered ESME_ROK and nothing was sent.
func TestConcatenatedAcrossBinds(t *testing.T) {
	f := &flakySender{}
	s := startWith(t, Options{}, f)
	a, b := boundAs(t, s, "acme"), boundAs(t, s, "acme")
	answer := func(nc net.Conn, p *smpp.PDU) *smpp.PDU {
		t.Helper()
		write(t, nc, p)
		r := readPDU(t, nc)
		if r == nil || r.Status != smpp.StatusOK {
			t.Fatalf("part seq %d answered %+v", p.Seq, r)
		}
		return r
	}
	first := answer(a, udhPart(2, 4, 1, "one "))
	answer(b, udhPart(2, 4, 2, "two "))
	answer(a, udhPart(3, 4, 3, "three"))
	if got := f.submits(); len(got) != 1 || got[0].Text != "one two three" || got[0].MessageID.String() != first.MessageID {
		t.Fatalf("sent %+v; want one message, as %s", got, first.MessageID)
	}

	answer(a, udhPart(4, 5, 1, "x"))
	answer(a, udhPart(5, 5, 2, "y"))
	write(t, a, &smpp.PDU{Header: smpp.Header{ID: smpp.Unbind, Seq: 6}})
	if r := readPDU(t, a); r == nil || r.ID != smpp.UnbindResp {
		t.Fatalf("unbind = %+v", r)
	}
	answer(boundAs(t, s, "acme"), udhPart(2, 5, 3, "z")) // reconnected
	if got := f.submits(); len(got) != 2 || got[1].Text != "xyz" {
		t.Fatalf("sent %+v; want the second message after the reconnect", got)
	}
}
