package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/carriers/smpp"
)

// The same batch sent over SMPP by one account and over HTTP by another, message for message:
// every message costs the same and has as many parts, and the two ledgers end equal, debit for
// debit. GSM-7 and UCS-2, one part and several (message_payload), every network.
func TestSMPPBillingEqualsHTTP(t *testing.T) {
	n := startNode(t, withEnv(fastSims, "TUMA_SMPP_SERVER_ADDR", "127.0.0.1:0", "TUMA_RATE_LIMIT_RPS", "0"))
	viaSMPP, viaHTTP := n.register("ledger-smpp@example.com"), n.register("ledger-http@example.com")
	n.credit(viaSMPP, "500")
	n.credit(viaHTTP, "500")
	systemID, password := n.smppCredential(viaSMPP, map[string]any{})
	e := dialESME(t, n.smpp)
	if st := e.bind(smpp.BindTransmitter, systemID, password); st != smpp.StatusOK {
		t.Fatalf("bind = %s", st)
	}
	type msg struct{ to, text string }
	var batch []msg
	prefixes := []string{"0712", "0733", "0770"} // Safaricom, Airtel, Telkom
	texts := []string{
		"Your code is 4821",
		strings.Repeat("Order 1042 ships today from Westlands. ", 6), // GSM-7, 2 parts with the prefix
		"Habari 😀",
		strings.Repeat("Asante sana, karibu tena 🙏 ", 4), // UCS-2, 2 parts
		"Price: 100€ {fixed} [ok]",                       // GSM-7 extension characters
	}
	for i := range 30 {
		batch = append(batch, msg{to: fmt.Sprintf("%s%06d", prefixes[i%3], 100000+i), text: texts[i%len(texts)]})
	}
	ids := map[int]string{}
	for i, m := range batch {
		var p *smpp.PDU
		if ascii, err := carriers.EncodeGSM7(m.text); err == nil {
			p = &smpp.PDU{Header: smpp.Header{ID: smpp.SubmitSM}, DestTON: 1, DestNPI: 1, Dest: m.to,
				DataCoding: smpp.CodingDefault, RegisteredDelivery: 1,
				TLVs: []smpp.TLV{{Tag: smpp.TagMessagePayload, Value: ascii}}}
		} else {
			p = &smpp.PDU{Header: smpp.Header{ID: smpp.SubmitSM}, DestTON: 1, DestNPI: 1, Dest: m.to,
				DataCoding: smpp.CodingUCS2, RegisteredDelivery: 1,
				TLVs: []smpp.TLV{{Tag: smpp.TagMessagePayload, Value: utf16be(m.text)}}}
		}
		r := e.call(p)
		if r.ID != smpp.SubmitSMResp || r.Status != smpp.StatusOK {
			t.Fatalf("submit %d (%q) = %s %s", i, m.text, r.ID, r.Status)
		}
		ids[i] = r.MessageID
		if h := n.send(viaHTTP, map[string]any{"recipients": []string{m.to}, "message": m.text}); h.Status != 202 {
			t.Fatalf("HTTP send %d = %d %s", i, h.Status, h.Body)
		}
	}
	n.waitDone(viaSMPP, len(batch))
	n.waitDone(viaHTTP, len(batch))

	httpMsgs := map[string]map[string]any{}
	for _, x := range n.do("GET", "/sms/messages?page_size=100", nil, key(viaHTTP)...).json(t)["data"].([]any) {
		m := x.(map[string]any)
		httpMsgs[m["recipient"].(string)] = m
	}
	for i, m := range batch {
		s := n.smppMessage(viaSMPP, ids[i])
		h := httpMsgs[s["recipient"].(string)]
		if h == nil || s["message"] != h["message"] || s["parts"] != h["parts"] || s["cost_kes"] != h["cost_kes"] || s["encoding"] != h["encoding"] {
			t.Errorf("message %d to %s: over SMPP %v parts, KES %v, %q; over HTTP %v", i, m.to, s["parts"], s["cost_kes"], s["message"], h)
		}
	}
	ledger := func(a account) string {
		return fmt.Sprint(n.sqlInt(`SELECT coalesce(sum(amount_cents), 0) FROM wallet_transactions WHERE account_id = $1 AND type = 'debit'`, a.ID),
			" cents in ", n.sqlInt(`SELECT count(*) FROM wallet_transactions WHERE account_id = $1 AND type = 'debit'`, a.ID), " debits, balance ",
			n.sqlInt(`SELECT balance_cents FROM wallets WHERE account_id = $1`, a.ID))
	}
	if s, h := ledger(viaSMPP), ledger(viaHTTP); s != h {
		t.Errorf("ledgers differ: over SMPP %s; over HTTP %s", s, h)
	}
}
