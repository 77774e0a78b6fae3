package app_test

import (
	"testing"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/carriers/smpp"
)

// A submit_multi is one send of its reachable destinations, priced as the HTTP send to them;
// an invalid number and a distribution list are listed in unsuccess_smes; a data_sm is sent
// like a submit_sm, its text in message_payload.
func TestSMPPServerSubmitMultiAndDataSM(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_SMPP_SERVER_ADDR": "127.0.0.1:0", "TUMA_RATE_LIMIT_RPS": "0", "TUMA_SIM_OUTCOMES": "delivered=1"})
	a := n.register("smpp-multi@example.com")
	n.credit(a, "100")
	n.approved(a, "ACMEBANK", "all")
	systemID, password := n.smppCredential(a, map[string]any{})
	e := dialESME(t, n.smpp)
	if st := e.bind(smpp.BindTransmitter, systemID, password); st != smpp.StatusOK {
		t.Fatalf("bind = %s", st)
	}

	text := "Branch closed on Monday"
	before := n.balance(a)
	r := e.call(&smpp.PDU{Header: smpp.Header{ID: smpp.SubmitMulti}, SourceTON: 5, Source: "ACMEBANK",
		Dests: []smpp.Dest{{Flag: smpp.DestSME, TON: 1, NPI: 1, Addr: "0712345678"}, {Flag: smpp.DestSME, TON: 1, NPI: 1, Addr: "0200000000"},
			{Flag: smpp.DestList, Addr: "staff"}, {Flag: smpp.DestSME, TON: 1, NPI: 1, Addr: "254733000001"}},
		DataCoding: smpp.CodingDefault, ShortMessage: gsm7(t, text)})
	if r.ID != smpp.SubmitMultiResp || r.Status != smpp.StatusOK || r.MessageID == "" {
		t.Fatalf("submit_multi = %s %s %q", r.ID, r.Status, r.MessageID)
	}
	want := map[string]smpp.Status{"0200000000": smpp.StatusInvDstAdr, "staff": 0x40}
	if len(r.Unsuccess) != len(want) {
		t.Errorf("unsuccess_smes = %+v; want %v", r.Unsuccess, want)
	}
	for _, u := range r.Unsuccess {
		if want[u.Addr] != u.Status {
			t.Errorf("unsuccess_sme %s = %s; want %s", u.Addr, u.Status, want[u.Addr])
		}
	}
	cost := before - n.balance(a)
	data := n.do("GET", "/sms/messages?job_id="+r.MessageID, nil, key(a)...).json(t)["data"].([]any)
	got := map[any]bool{}
	for _, m := range data {
		got[m.(map[string]any)["recipient"]] = m.(map[string]any)["message"] == text
	}
	if len(got) != 2 || !got["+254712345678"] || !got["+254733000001"] {
		t.Errorf("the submit_multi's job holds %v; want the 2 valid numbers with the text", got)
	}
	h := n.send(a, map[string]any{"recipients": []string{"0712345679", "254733000002"}, "message": text, "sender_id": "ACMEBANK"})
	if h.Status != 202 {
		t.Fatalf("HTTP send = %d %s", h.Status, h.Body)
	}
	if httpCost := h.json(t)["cost_kes"].(float64); cost != httpCost || cost <= 0 {
		t.Errorf("submit_multi debit %v; the HTTP send to 2 numbers costs %v", cost, httpCost)
	}

	// Every destination refused: ESME_RINVDSTADR, each listed.
	r = e.call(&smpp.PDU{Header: smpp.Header{ID: smpp.SubmitMulti}, Dests: []smpp.Dest{{Flag: smpp.DestSME, Addr: "0200000000"},
		{Flag: smpp.DestSME, Addr: "12"}}, ShortMessage: gsm7(t, "hi")})
	if r.Status != smpp.StatusInvDstAdr || len(r.Unsuccess) != 2 {
		t.Errorf("submit_multi to 2 bad numbers = %s %+v; want ESME_RINVDSTADR, both listed", r.Status, r.Unsuccess)
	}
	r = e.call(&smpp.PDU{Header: smpp.Header{ID: smpp.SubmitMulti}, ShortMessage: gsm7(t, "hi")})
	if r.Status != 0x33 {
		t.Errorf("submit_multi to nobody = %s; want ESME_RINVNUMDESTS", r.Status)
	}

	// data_sm, UCS-2 in message_payload.
	uni := "Karibu ✓"
	r = e.call(&smpp.PDU{Header: smpp.Header{ID: smpp.DataSM}, SourceTON: 5, Source: "ACMEBANK", DestTON: 1, DestNPI: 1, Dest: "0712345678",
		DataCoding: smpp.CodingUCS2, TLVs: []smpp.TLV{{Tag: smpp.TagMessagePayload, Value: carriers.EncodeUCS2(uni)}}})
	if r.ID != smpp.DataSMResp || r.Status != smpp.StatusOK || r.MessageID == "" {
		t.Fatalf("data_sm = %s %s %q", r.ID, r.Status, r.MessageID)
	}
	if m := n.smppMessage(a, r.MessageID); m["message"] != uni || m["encoding"] != "ucs2" || m["recipient"] != "+254712345678" {
		t.Errorf("the data_sm's message = %v", m)
	}
	r = e.call(&smpp.PDU{Header: smpp.Header{ID: smpp.DataSM}, Dest: "0200000000",
		TLVs: []smpp.TLV{{Tag: smpp.TagMessagePayload, Value: gsm7(t, "hi")}}})
	if r.ID != smpp.DataSMResp || r.Status != smpp.StatusInvDstAdr {
		t.Errorf("data_sm to a landline = %s %s; want ESME_RINVDSTADR", r.ID, r.Status)
	}
}
