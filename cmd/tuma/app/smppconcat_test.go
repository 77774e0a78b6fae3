package app_test

import (
	"strings"
	"testing"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/carriers/smpp"
)

// submitPart sends one submit_sm p (addresses set here) and returns its resp.
func (e *esme) submitPart(from, to string, p *smpp.PDU) *smpp.PDU {
	e.t.Helper()
	p.ID, p.SourceTON, p.Source, p.DestTON, p.DestNPI, p.Dest = smpp.SubmitSM, 5, from, 1, 1, to
	r := e.call(p)
	if r.ID != smpp.SubmitSMResp {
		e.t.Fatalf("submit_sm answered with %s", r.ID)
	}
	return r
}

// chunks cuts b into pieces of at most n octets.
func chunks(b []byte, n int) [][]byte {
	var out [][]byte
	for len(b) > n {
		out = append(out, b[:n])
		b = b[n:]
	}
	return append(out, b)
}

// The parts of a concatenated submit_sm, by UDH or SAR TLVs and in any order, are sent as ONE
// message with the joined text, billed as the HTTP send of that text; each earlier part is
// answered at once, the completing one with the message's job id.
func TestSMPPServerConcatenated(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_SMPP_SERVER_ADDR": "127.0.0.1:0", "TUMA_RATE_LIMIT_RPS": "0", "TUMA_SIM_OUTCOMES": "delivered=1"})
	a := n.register("smpp-concat@example.com")
	n.credit(a, "100")
	n.approved(a, "ACMEBANK", "all")
	systemID, password := n.smppCredential(a, map[string]any{})
	e := dialESME(t, n.smpp)
	if st := e.bind(smpp.BindTransceiver, systemID, password); st != smpp.StatusOK {
		t.Fatalf("bind = %s", st)
	}
	httpCost := func(text string) float64 {
		t.Helper()
		r := n.send(a, map[string]any{"recipients": []string{"0712345679"}, "message": text, "sender_id": "ACMEBANK"})
		if r.Status != 202 {
			t.Fatalf("HTTP send = %d %s", r.Status, r.Body)
		}
		return r.json(t)["cost_kes"].(float64)
	}

	// GSM-7 in 3 parts with an 8-bit UDH reference.
	text := strings.Repeat("Your statement is ready {ok}. ", 14)[:400]
	parts := chunks(gsm7(t, text), 153)
	if len(parts) != 3 {
		t.Fatalf("%d parts", len(parts))
	}
	before := n.balance(a)
	var id string
	for i, body := range parts {
		sm := append([]byte{5, 0, 3, 0x2A, 3, byte(i + 1)}, body...)
		r := e.submitPart("ACMEBANK", "0712345678", &smpp.PDU{ESMClass: smpp.ESMClassUDHI, DataCoding: smpp.CodingDefault, ShortMessage: sm})
		if r.Status != smpp.StatusOK || r.MessageID == "" {
			t.Fatalf("part %d = %s %q", i+1, r.Status, r.MessageID)
		}
		id = r.MessageID
	}
	m := n.smppMessage(a, id)
	cost := before - n.balance(a)
	if m["message"] != text || m["parts"] != 3.0 || m["encoding"] != "gsm7" || m["recipient"] != "+254712345678" {
		t.Errorf("the joined GSM-7 message = %v", m)
	}
	if want := httpCost(text); cost != want || m["cost_kes"] != want {
		t.Errorf("3-part SMPP debit %v (message %v); the HTTP send costs %v", cost, m["cost_kes"], want)
	}

	// UCS-2 in 2 parts by SAR TLVs, the last part first.
	uni := strings.Repeat("Habari ya leo 😀 ✓ ", 6)
	parts = chunks(carriers.EncodeUCS2(uni), 134)
	if len(parts) != 2 {
		t.Fatalf("%d UCS-2 parts", len(parts))
	}
	before = n.balance(a)
	for _, seq := range []int{2, 1} {
		r := e.submitPart("ACMEBANK", "0733000001", &smpp.PDU{DataCoding: smpp.CodingUCS2, ShortMessage: parts[seq-1],
			TLVs: []smpp.TLV{smpp.Uint16TLV(smpp.TagSarMsgRefNum, 0x1234), smpp.ByteTLV(smpp.TagSarTotalSegments, 2),
				smpp.ByteTLV(smpp.TagSarSegmentSeqnum, byte(seq))}})
		if r.Status != smpp.StatusOK || r.MessageID == "" {
			t.Fatalf("SAR part %d = %s %q", seq, r.Status, r.MessageID)
		}
		id = r.MessageID
	}
	m = n.smppMessage(a, id)
	cost = before - n.balance(a)
	if m["message"] != uni || m["parts"] != 2.0 || m["encoding"] != "ucs2" || m["network"] != "airtel" {
		t.Errorf("the joined UCS-2 message = %v", m)
	}
	if want := httpCost(uni); cost != want || m["cost_kes"] != want {
		t.Errorf("2-part SMPP debit %v (message %v); the HTTP send costs %v", cost, m["cost_kes"], want)
	}
	if total := n.do("GET", "/sms/messages", nil, key(a)...).json(t)["total"]; total != 4.0 {
		t.Errorf("the account has %v messages; want 2 over SMPP (one per joined message) and 2 over HTTP", total)
	}

	// A part with an impossible header is refused; a part with an empty body too.
	r := e.submitPart("", "0712345678", &smpp.PDU{ESMClass: smpp.ESMClassUDHI, ShortMessage: []byte{5, 0, 3, 1, 2, 3, 'x'}})
	if r.Status != smpp.StatusInvESMClass {
		t.Errorf("part 3 of 2 = %s; want ESME_RINVESMCLASS", r.Status)
	}
	r = e.submitPart("", "0712345678", &smpp.PDU{ESMClass: smpp.ESMClassUDHI, ShortMessage: []byte{5, 0, 3, 1, 2, 1}})
	if r.Status != smpp.StatusInvMsgLen {
		t.Errorf("an empty part = %s; want ESME_RINVMSGLEN", r.Status)
	}
}
