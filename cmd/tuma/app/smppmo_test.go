package app_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers/smpp"
)

// nextInbound reads PDUs until a deliver_sm that is not a receipt, and returns it.
func (e *esme) nextInbound() *smpp.PDU {
	e.t.Helper()
	for {
		p := e.read()
		if p == nil {
			e.t.Fatal("the server closed the connection before an inbound message")
		}
		if p.ID != smpp.DeliverSM {
			continue
		}
		if p.IsReceipt() {
			e.t.Fatalf("a receipt (%q) where an inbound message was due", p.ShortMessage)
		}
		return p
	}
}

// A message texted to the account's number reaches its SMPP receiver as deliver_sm from the
// subscriber to that number, stored while no receiver is bound; a long Unicode text comes in
// parts tied by a UDH. An account without SMPP credentials is not queued anything.
func TestSMPPServerDeliversInbound(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_SMPP_SERVER_ADDR": "127.0.0.1:0", "TUMA_RATE_LIMIT_RPS": "0", "TUMA_SIM_OUTCOMES": "delivered=1"})
	a, b := n.register("smppmo-a@example.com"), n.register("smppmo-b@example.com")
	for i, acct := range []account{a, b} {
		number := []string{"22385", "22386"}[i]
		if r := n.do("POST", "/admin/accounts/"+acct.ID+"/inbound-numbers", map[string]any{"number": number, "network": "safaricom"}, adminAuth()...); r.Status != 201 {
			t.Fatalf("assign %s = %d %s", number, r.Status, r.Body)
		}
	}
	systemID, password := n.smppCredential(a, map[string]any{})
	n.mo("0712345678", "22385", "Hello before you bound")
	n.mo("0712345678", "22386", "To b, which has no SMPP")

	rx := dialESME(t, n.smpp)
	if st := rx.bind(smpp.BindReceiver, systemID, password); st != smpp.StatusOK {
		t.Fatalf("bind_receiver = %s", st)
	}
	p := rx.nextInbound()
	text, err := smpp.DecodeText(p.DataCoding, p.ShortMessage)
	if err != nil || text != "Hello before you bound" || p.Source != "254712345678" || p.Dest != "22385" || p.DestTON != 3 {
		t.Fatalf("deliver_sm %q (%v) from %s to %s (TON %d); want the text from 254712345678 to the short code 22385",
			p.ShortMessage, err, p.Source, p.Dest, p.DestTON)
	}
	rx.answer(p, smpp.StatusOK)
	var creds []map[string]any
	if err := json.Unmarshal(n.do("GET", "/smpp/credentials", nil, key(a)...).Body, &creds); err != nil {
		t.Fatal(err)
	}
	if len(creds) != 1 || creds[0]["last_bound_at"] == nil {
		t.Errorf("credentials %v; want the one, with last_bound_at set by the bind", creds)
	}

	long := strings.Repeat("Habari ya asubuhi 😀 ", 8) // UCS-2: three parts
	n.mo("+254712345679", "22385", long)
	var body []byte
	var coding byte
	for i := 1; ; i++ {
		p := rx.nextInbound()
		seg, err := smpp.ReadSegment(p)
		if err != nil || !seg.Concatenated || seg.Total < 2 || seg.Seq != i {
			t.Fatalf("part %d: %+v, %v; want part %d of a concatenated message", i, seg, err, i)
		}
		body, coding = append(body, seg.Body...), p.DataCoding
		rx.answer(p, smpp.StatusOK)
		if seg.Seq == seg.Total {
			break
		}
	}
	if got, err := smpp.DecodeText(coding, body); err != nil || got != long {
		t.Errorf("the parts joined say %q (%v); want %q", got, err, long)
	}
	// The server's series, by bind type and kind, never by account.
	wants := []string{
		`tuma_smpp_server_binds{type="receiver"} 1`,
		`tuma_smpp_server_bind_attempts_total{status="ESME_ROK"} 1`,
		`tuma_smpp_server_deliveries_total{kind="inbound",outcome="ok"} 2`, // counted once each answer is settled
		`tuma_smpp_server_deliveries_total{kind="receipt",outcome="ok"} 0`,
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		metrics := string(n.do("GET", "/metrics", nil).Body)
		missing := slices.DeleteFunc(slices.Clone(wants), func(w string) bool { return strings.Contains(metrics, w) })
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %q", missing)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// b's message was never queued for SMPP: the outbox holds a's two, both delivered.
	if n := n.sqlInt(`SELECT count(*) FROM smpp_receipts WHERE kind = 'inbound'`); n != 2 {
		t.Errorf("%d inbound rows in the SMPP outbox; want a's 2 (b has no credential)", n)
	}
}
