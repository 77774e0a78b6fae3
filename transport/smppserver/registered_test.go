package smppserver

import (
	"testing"

	"github.com/tuma-sms/tuma/carriers/smpp"
	"github.com/tuma-sms/tuma/persistence"
)

// registered_delivery's bits 1-0 are the receipt a submit_sm or data_sm asks for (3, reserved,
// as 1; the other bits ignored); a long message's receipt is the one any of its parts asked
// for (on either outcome over on failure only), kept while a failed send waits for its
// completing part again.
func TestRegisteredDelivery(t *testing.T) {
	const (
		none    = persistence.ReceiptNone
		final   = persistence.ReceiptFinal
		failure = persistence.ReceiptFailure
	)
	for rd, want := range map[byte]persistence.ReceiptMode{0: none, 1: final, 2: failure, 3: final, 0x10: none, 0x1C: none, 0x11: final, 0x1E: failure} {
		if got := receiptOf(rd); got != want {
			t.Errorf("receiptOf(%#x) = %d; want %d", rd, got, want)
		}
	}

	f := &flakySender{}
	nc := bound(t, startWith(t, Options{}, f))
	seq := uint32(1)
	call := func(p *smpp.PDU, want smpp.Status) {
		t.Helper()
		seq++
		p.Seq = seq
		write(t, nc, p)
		if r := readPDU(t, nc); r == nil || r.ID != p.ID.Response() || r.Seq != p.Seq || r.Status != want {
			t.Fatalf("%s seq %d answered %+v; want %s", p.ID, p.Seq, r, want)
		}
	}
	// sent checks the last submit the sender got.
	sent := func(what, to string, want persistence.ReceiptMode) {
		t.Helper()
		got := f.submits()
		if len(got) == 0 || got[len(got)-1].To != to || got[len(got)-1].Receipt != want {
			t.Fatalf("%s: the sender got %+v last; want a submit to %s with receipt %d", what, got, to, want)
		}
	}

	for _, c := range []struct {
		rd   byte
		want persistence.ReceiptMode
	}{{0, none}, {1, final}, {2, failure}, {3, final}} {
		call(&smpp.PDU{Header: smpp.Header{ID: smpp.SubmitSM}, Dest: "0712345678", RegisteredDelivery: c.rd, ShortMessage: []byte("hi")}, smpp.StatusOK)
		sent("submit_sm", "0712345678", c.want)
		call(&smpp.PDU{Header: smpp.Header{ID: smpp.DataSM}, Dest: "0712345679", RegisteredDelivery: c.rd,
			TLVs: []smpp.TLV{{Tag: smpp.TagMessagePayload, Value: []byte("hi")}}}, smpp.StatusOK)
		sent("data_sm", "0712345679", c.want)
	}

	// Long messages of 3 parts, sent 3, 1, 2 (the last completes it); rds are by part.
	for i, c := range []struct {
		rds  [3]byte
		want persistence.ReceiptMode
	}{
		{[3]byte{0, 0, 0}, none},
		{[3]byte{1, 0, 0}, final},
		{[3]byte{0, 0, 1}, final},
		{[3]byte{0, 2, 0}, failure},
		{[3]byte{2, 1, 2}, final},
	} {
		ref := byte(20 + i)
		for k, part := range []byte{3, 1, 2} {
			p := udhPart(0, ref, part, "ab")
			p.RegisteredDelivery = c.rds[part-1]
			call(p, smpp.StatusOK)
			if k < 2 && len(f.submits()) != 4*2+i {
				t.Fatalf("message %d: a held part was sent", i)
			}
		}
		sent("long message", "0712345678", c.want)
	}

	// The completing part's send fails: the receipt its held part asked for is kept.
	f.mu.Lock()
	f.fails = 1
	f.mu.Unlock()
	p := udhPart(0, 40, 1, "ab")
	p.RegisteredDelivery = 2
	call(p, smpp.StatusOK)
	call(udhPart(0, 40, 3, "ab"), smpp.StatusOK)
	call(udhPart(0, 40, 2, "cd"), smpp.StatusThrottled)
	call(udhPart(0, 40, 2, "cd"), smpp.StatusOK)
	sent("long message sent again", "0712345678", failure)
}
