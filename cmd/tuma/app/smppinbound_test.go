package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers/smpp"
)

// sendMO has the network's SMSC deliver a subscriber's message to the node; it returns once
// the node has answered every part ESME_ROK.
func sendMO(t *testing.T, s *smpp.SMSC, m smpp.MOSpec) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := s.SendMO(ctx, m)
	if err != nil {
		t.Fatalf("SMSC MO %q after %d parts: %v", m.Text, n, err)
	}
	return n
}

// A subscriber's STOP to the account's short code, as a deliver_sm from the network's SMSC,
// suppresses the number (source keyword) before the SMSC is answered, so the very next send
// leaves it out, and is confirmed over SMPP from the account's sender; a long UCS-2 message
// in UDH parts is listed whole in the inbox.
func TestSMPPInboundMessages(t *testing.T) {
	ss := startSMSCs(t, smpp.SMSCConfig{ReceiptTLVs: true})
	n := startNode(t, withEnv(ss.env(""), "TUMA_RATE_LIMIT_RPS", "0"))
	a := n.register("smpp-mo@example.com")
	n.approveDefaultSender(a, "ACME", "all")
	n.credit(a, "100")
	if r := n.do("POST", "/admin/accounts/"+a.ID+"/inbound-numbers", map[string]any{"number": "22384", "network": "safaricom"}, adminAuth()...); r.Status != 201 {
		t.Fatalf("assign = %d %s", r.Status, r.Body)
	}

	sendMO(t, ss["safaricom"], smpp.MOSpec{From: "254712345678", To: "22384", Text: "STOP"})
	list := n.do("GET", "/suppressions", nil, key(a)...).json(t)["data"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["phone"] != "+254712345678" || list[0].(map[string]any)["source"] != "keyword" {
		t.Fatalf("suppressions after an SMPP STOP = %v; want +254712345678 by keyword", list)
	}
	r := n.send(a, map[string]any{"recipients": []string{"0712345678", "0712999999"}, "message": "hi"})
	if r.Status != 202 || r.json(t)["suppressed_count"] != 1.0 || r.json(t)["recipients_count"] != 1.0 {
		t.Fatalf("send after the SMPP STOP = %d %s; want the number left out", r.Status, r.Body)
	}
	reply := n.deliveredReply(a, "+254712345678", "You will no longer receive messages from Acme Ltd. Reply START to subscribe again.")
	if reply["sender_id"] != "ACME" || reply["cost_kes"] != 0.0 || reply["provider_message_id"] == nil {
		t.Errorf("the SMPP STOP's confirmation = %v; want it from ACME, free, submitted", reply)
	}
	n.waitDone(a, 2)
	if got := ss["safaricom"].Stats().Submits; got != 2 {
		t.Errorf("Safaricom's SMSC took %d submits; want the send's and the confirmation", got)
	}

	long := strings.Repeat("Habari, nimepokea ujumbe wako 😀 ", 5) // UCS-2: 3 parts
	if parts := sendMO(t, ss["airtel"], smpp.MOSpec{From: "254733000001", To: "22384", Text: long}); parts != 3 {
		t.Fatalf("the long message went in %d parts; want 3", parts)
	}
	inbox := n.do("GET", "/sms/inbound?from=0733000001", nil, key(a)...).json(t)["data"].([]any)
	if len(inbox) != 1 {
		t.Fatalf("inbox from 0733000001 = %v; want the long message", inbox)
	}
	m := inbox[0].(map[string]any)
	if m["text"] != long || m["to"] != "22384" || m["network"] != "airtel" || m["from"] != "+254733000001" {
		t.Fatalf("inbound message %v; want the long text whole from airtel", m)
	}
	if got := n.inbox(a, ""); len(got) != 2 || got[1] != "STOP" {
		t.Fatalf("inbox = %q; want the long message and STOP", got)
	}
}
