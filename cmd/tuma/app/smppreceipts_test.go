package app_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers/smpp"
)

// nextReceipt reads PDUs until a deliver_sm (answering enquire_link on the way) and checks it
// is a receipt whose text and TLVs name the same message, which it returns with the PDU.
func (e *esme) nextReceipt() (*smpp.PDU, string) {
	e.t.Helper()
	for {
		p := e.read()
		if p == nil {
			e.t.Fatal("the server closed the connection before a receipt")
		}
		if p.ID != smpp.DeliverSM {
			continue
		}
		if !p.IsReceipt() {
			e.t.Fatalf("deliver_sm esm_class %#x; want a receipt", p.ESMClass)
		}
		rt, ok := smpp.ParseReceiptText(p.ShortMessage)
		id, _ := p.TLV(smpp.TagReceiptedMessageID)
		st, _ := p.TLV(smpp.TagMessageState)
		if !ok || string(id) != rt.ID+"\x00" && string(id) != rt.ID || len(st) != 1 || smpp.MessageState(st[0]) != rt.State {
			e.t.Fatalf("receipt %q, receipted_message_id %q, message_state %v", p.ShortMessage, id, st)
		}
		return p, rt.ID
	}
}

// answer writes the resp of a deliver_sm.
func (e *esme) answer(p *smpp.PDU, st smpp.Status) {
	e.t.Helper()
	b, err := (&smpp.PDU{Header: smpp.Header{ID: smpp.DeliverSMResp, Seq: p.Seq, Status: st}}).Append(nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.raw(b)
}

// A transceiver gets the receipt of its submit as deliver_sm naming the message id its
// submit_sm_resp carried; a receipt answered with an error comes again, and one answered OK
// does not (the next receipt is the next message's); HTTP sends get none.
func TestSMPPServerReceiptsTransceiver(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_SMPP_SERVER_ADDR": "127.0.0.1:0", "TUMA_RATE_LIMIT_RPS": "0", "TUMA_SIM_OUTCOMES": "delivered=1"})
	a := n.register("smppr@example.com")
	n.credit(a, "100")
	systemID, password := n.smppCredential(a, map[string]any{})

	e := dialESME(t, n.smpp)
	if st := e.bind(smpp.BindTransceiver, systemID, password); st != smpp.StatusOK {
		t.Fatalf("bind = %s", st)
	}
	st, id := e.submit("", "0712345678", smpp.CodingDefault, gsm7(t, "first"))
	if st != smpp.StatusOK {
		t.Fatalf("submit_sm = %s", st)
	}
	p, got := e.nextReceipt()
	rt, _ := smpp.ParseReceiptText(p.ShortMessage)
	if got != id || rt.Stat != "DELIVRD" || rt.Err != "000" || p.Source != "254712345678" {
		t.Errorf("receipt %q from %q; want DELIVRD of %s from 254712345678", p.ShortMessage, p.Source, id)
	}
	if m := n.smppMessage(a, id); m["status"] != "delivered" {
		t.Errorf("message %s is %v; want delivered", id, m["status"])
	}
	e.answer(p, smpp.StatusSysErr)
	p, got = e.nextReceipt()
	if got != id {
		t.Fatalf("after ESME_RSYSERR the next receipt is of %s; want %s again", got, id)
	}
	e.answer(p, smpp.StatusOK)

	// A message sent over HTTP is not receipted over SMPP: once it is final, the next
	// receipt is still the next submit's.
	r := n.send(a, map[string]any{"recipients": []string{"0712345670"}, "message": "over http"})
	if r.Status != 202 {
		t.Fatalf("HTTP send = %d %s", r.Status, r.Body)
	}
	job := r.json(t)["job_id"].(string)
	for deadline := time.Now().Add(20 * time.Second); ; {
		l := n.do("GET", "/sms/messages?job_id="+job, nil, key(a)...).json(t)["data"].([]any)
		if len(l) == 1 && l[0].(map[string]any)["status"] == "delivered" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the HTTP send's message is %v; want delivered within 20s", l)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, id2 := e.submit("", "0712345679", smpp.CodingDefault, gsm7(t, "second"))
	p, got = e.nextReceipt()
	if got != id2 {
		t.Fatalf("after ESME_ROK the next receipt is of %s; want the second message %s", got, id2)
	}
	e.answer(p, smpp.StatusOK)
}

// A transmitter gets no receipts; a receiver that binds once the message is final gets its
// receipt, stored meanwhile.
func TestSMPPServerReceiptsLaterReceiver(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_SMPP_SERVER_ADDR": "127.0.0.1:0", "TUMA_RATE_LIMIT_RPS": "0", "TUMA_SIM_OUTCOMES": "delivered=1"})
	a := n.register("smpprl@example.com")
	n.credit(a, "100")
	systemID, password := n.smppCredential(a, map[string]any{})

	tx := dialESME(t, n.smpp)
	if st := tx.bind(smpp.BindTransmitter, systemID, password); st != smpp.StatusOK {
		t.Fatalf("bind_transmitter = %s", st)
	}
	st, id := tx.submit("", "0712345678", smpp.CodingDefault, gsm7(t, "later"))
	if st != smpp.StatusOK {
		t.Fatalf("submit_sm = %s", st)
	}
	for deadline := time.Now().Add(20 * time.Second); n.smppMessage(a, id)["status"] != "delivered"; {
		if time.Now().After(deadline) {
			t.Fatalf("message %s not delivered within 20s", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The transmitter still hears only answers to what it asks.
	if r := tx.call(&smpp.PDU{Header: smpp.Header{ID: smpp.EnquireLink}}); r.ID != smpp.EnquireLinkResp {
		t.Errorf("a transmitter's next PDU is %s; want the enquire_link_resp (no receipt)", r.ID)
	}

	rx := dialESME(t, n.smpp)
	if st := rx.bind(smpp.BindReceiver, systemID, password); st != smpp.StatusOK {
		t.Fatalf("bind_receiver = %s", st)
	}
	p, got := rx.nextReceipt()
	if got != id {
		t.Errorf("the late receiver's receipt is of %s; want %s", got, id)
	}
	rx.answer(p, smpp.StatusOK)
}

// A submit_sm or data_sm is receipted as its registered_delivery asks (SMPP 3.4 §5.2.17):
// 0 never, 1 on either outcome (3, reserved, the same), 2 only if the message failed. Receipts
// come in the order their messages became final, so the first receipt after messages that owe
// none became final proves none was queued for them.
func TestSMPPServerRegisteredDelivery(t *testing.T) {
	n := startNode(t, withEnv(fastSims, "TUMA_SMPP_SERVER_ADDR", "127.0.0.1:0", "TUMA_RATE_LIMIT_RPS", "0"))
	// Safaricom delivers every message; Airtel refuses every submit: the message fails.
	if r := n.do("PATCH", "/admin/sim/airtel", `{"reject_rate": 1}`, adminAuth()...); r.Status != 200 {
		t.Fatalf("PATCH /admin/sim/airtel = %d %s", r.Status, r.Body)
	}
	a := n.register("smpp-registered@example.com")
	n.credit(a, "100")
	systemID, password := n.smppCredential(a, map[string]any{})
	e := dialESME(t, n.smpp)
	if st := e.bind(smpp.BindTransceiver, systemID, password); st != smpp.StatusOK {
		t.Fatalf("bind = %s", st)
	}

	what := map[string]string{} // message id → how it was sent, for the failures' messages
	send := func(cmd smpp.CommandID, to string, rd byte) string {
		t.Helper()
		p := &smpp.PDU{Header: smpp.Header{ID: cmd}, DestTON: 1, DestNPI: 1, Dest: to, RegisteredDelivery: rd}
		if cmd == smpp.DataSM {
			p.TLVs = []smpp.TLV{{Tag: smpp.TagMessagePayload, Value: gsm7(t, "registered")}}
		} else {
			p.ShortMessage = gsm7(t, "registered")
		}
		seq := e.write(p)
		r := e.read()
		if r != nil && r.ID == smpp.DeliverSM {
			rt, _ := smpp.ParseReceiptText(r.ShortMessage)
			t.Fatalf("a receipt of %s (%s) came before the %s resp; none was asked for", rt.ID, what[rt.ID], cmd)
		}
		if r == nil || r.ID != cmd.Response() || r.Seq != seq || r.Status != smpp.StatusOK || r.MessageID == "" {
			t.Fatalf("%s to %s = %+v; want ESME_ROK with a message id", cmd, to, r)
		}
		what[r.MessageID] = fmt.Sprintf("%s to %s, registered_delivery %d", cmd, to, rd)
		return r.MessageID
	}
	final := func(id, status string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); n.smppMessage(a, id)["status"] != status; {
			if time.Now().After(deadline) {
				t.Fatalf("message %s (%s) is not %s within 20s", id, what[id], status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	receipt := func(id, stat string) {
		t.Helper()
		p, got := e.nextReceipt()
		if got != id {
			t.Fatalf("the next receipt is of %s (%s); want %s's (%s)", got, what[got], id, what[id])
		}
		if rt, _ := smpp.ParseReceiptText(p.ShortMessage); rt.Stat != stat {
			t.Errorf("receipt of %s (%s) says %s; want %s", id, what[id], rt.Stat, stat)
		}
		e.answer(p, smpp.StatusOK)
	}

	// Owing no receipt: made final one after the other, before any message that owes one.
	final(send(smpp.SubmitSM, "0712345678", 0), "delivered")
	final(send(smpp.SubmitSM, "0733000001", 0), "failed")
	final(send(smpp.DataSM, "0712345677", 0), "delivered")
	final(send(smpp.SubmitSM, "0712345676", 0x10), "delivered") // an intermediate notification alone: no SMSC receipt
	final(send(smpp.SubmitSM, "0712345675", 2), "delivered")    // delivered: no receipt on failure only
	final(send(smpp.DataSM, "0712345674", 2), "delivered")

	// Owing one: each is the next receipt.
	receipt(send(smpp.SubmitSM, "0733000002", 2), "UNDELIV")
	receipt(send(smpp.DataSM, "0733000003", 2), "UNDELIV")
	receipt(send(smpp.SubmitSM, "0712345673", 1), "DELIVRD")
	receipt(send(smpp.SubmitSM, "0733000004", 1), "UNDELIV")
	receipt(send(smpp.DataSM, "0712345672", 1), "DELIVRD")
	receipt(send(smpp.SubmitSM, "0712345671", 3), "DELIVRD")
}

// One account's client that never answers its deliver_sm does not hold up another account's
// receipts: each account's round runs on its own (before, every round waited for the slowest
// account, up to the 10 s answer timeout).
func TestSMPPServerSilentClientDelaysNoOther(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_SMPP_SERVER_ADDR": "127.0.0.1:0", "TUMA_RATE_LIMIT_RPS": "0", "TUMA_SIM_OUTCOMES": "delivered=1"})
	bindAs := func(email string) *esme {
		t.Helper()
		a := n.register(email)
		n.credit(a, "100")
		systemID, password := n.smppCredential(a, map[string]any{})
		e := dialESME(t, n.smpp)
		if st := e.bind(smpp.BindTransceiver, systemID, password); st != smpp.StatusOK {
			t.Fatalf("bind = %s", st)
		}
		return e
	}
	silent := bindAs("silent@example.com")
	if st, _ := silent.submit("", "0712345678", smpp.CodingDefault, gsm7(t, "never answered")); st != smpp.StatusOK {
		t.Fatalf("submit_sm = %s", st)
	}
	silent.nextReceipt() // and never answered: its round waits up to 10 s
	lively := bindAs("lively@example.com")
	st, id := lively.submit("", "0712345679", smpp.CodingDefault, gsm7(t, "answered"))
	if st != smpp.StatusOK {
		t.Fatalf("submit_sm = %s", st)
	}
	start := time.Now()
	p, got := lively.nextReceipt()
	if took := time.Since(start); got != id || took > 4*time.Second {
		t.Errorf("the other account's receipt (%s) came after %v; want its own (%s) within 4 s", got, took, id)
	}
	lively.answer(p, smpp.StatusOK)
}
