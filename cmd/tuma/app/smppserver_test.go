package app_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/carriers/smpp"
)

// esme is a bare SMPP client over the codec: it writes what a test asks, garbage included,
// and reads the server's PDUs one at a time.
type esme struct {
	t   *testing.T
	nc  net.Conn
	br  *bufio.Reader
	seq uint32
}

func dialESME(t *testing.T, addr string) *esme {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &esme{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// write sends p with the next sequence number, which it returns.
func (e *esme) write(p *smpp.PDU) uint32 {
	e.t.Helper()
	e.seq++
	p.Seq = e.seq
	b, err := p.Append(nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.raw(b)
	return p.Seq
}

func (e *esme) raw(b []byte) {
	e.t.Helper()
	if _, err := e.nc.Write(b); err != nil {
		e.t.Fatal(err)
	}
}

// read returns the server's next PDU, or nil once the connection is closed.
func (e *esme) read() *smpp.PDU {
	e.t.Helper()
	_ = e.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(e.br, hdr); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			e.t.Fatal("the server said nothing within 20s")
		}
		return nil
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr))
	copy(b, hdr)
	if _, err := io.ReadFull(e.br, b[4:]); err != nil {
		e.t.Fatal(err)
	}
	var p smpp.PDU
	if err := smpp.Decode(b, &p); err != nil {
		e.t.Fatalf("the server wrote an undecodable PDU: %v", err)
	}
	return &p
}

// call writes p and reads its answer, which must carry p's sequence number.
func (e *esme) call(p *smpp.PDU) *smpp.PDU {
	e.t.Helper()
	seq := e.write(p)
	r := e.read()
	if r == nil {
		e.t.Fatalf("%s: the server closed the connection", p.ID)
	}
	if r.Seq != seq {
		e.t.Fatalf("%s: answer %s has sequence %d; want %d", p.ID, r.ID, r.Seq, seq)
	}
	return r
}

func (e *esme) bind(id smpp.CommandID, systemID, password string) smpp.Status {
	e.t.Helper()
	r := e.call(&smpp.PDU{Header: smpp.Header{ID: id}, SystemID: systemID, Password: password, InterfaceVersion: 0x34})
	if r.ID != id.Response() {
		e.t.Fatalf("bind answered with %s", r.ID)
	}
	return r.Status
}

// submit sends a submit_sm and returns its resp's status and message id.
func (e *esme) submit(from, to string, coding byte, body []byte) (smpp.Status, string) {
	e.t.Helper()
	r := e.call(&smpp.PDU{Header: smpp.Header{ID: smpp.SubmitSM}, SourceTON: 5, Source: from, DestTON: 1, DestNPI: 1, Dest: to,
		DataCoding: coding, ShortMessage: body, RegisteredDelivery: 1})
	if r.ID != smpp.SubmitSMResp {
		e.t.Fatalf("submit_sm answered with %s", r.ID)
	}
	return r.Status, r.MessageID
}

func gsm7(t *testing.T, s string) []byte {
	t.Helper()
	b, err := carriers.EncodeGSM7(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// smppCredential makes a credential over the API and returns its system_id and password.
func (n *node) smppCredential(a account, body map[string]any) (systemID, password string) {
	n.t.Helper()
	r := n.do("POST", "/smpp/credentials", body, key(a)...)
	if r.Status != 201 {
		n.t.Fatalf("create SMPP credential = %d %s", r.Status, r.Body)
	}
	m := r.json(n.t)
	return m["system_id"].(string), m["password"].(string)
}

// smppMessage is the message a submit_sm_resp named, read by GET /sms/messages/{id}; it must
// be the one message of its job, of source smpp.
func (n *node) smppMessage(a account, id string) map[string]any {
	n.t.Helper()
	r := n.do("GET", "/sms/messages/"+id, nil, key(a)...)
	if r.Status != 200 {
		n.t.Fatalf("GET /sms/messages/%s = %d %s", id, r.Status, r.Body)
	}
	m := r.json(n.t)
	if m["source"] != "smpp" {
		n.t.Errorf("message %s has source %v; want smpp", id, m["source"])
	}
	data := n.do("GET", "/sms/messages?job_id="+m["job_id"].(string), nil, key(a)...).json(n.t)["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["id"] != id {
		n.t.Errorf("job %v lists %v; want message %s alone", m["job_id"], data, id)
	}
	return m
}

// An ESME binds with a credential made over the API and its submit_sm are sent like
// POST /sms/send: GSM-7 and UCS-2 texts listed with their cost, the same debit as the HTTP
// send of the same message, the company prefix through the shared sender; a bad destination,
// an unapproved sender, a suppressed number each answered with their status; nothing is
// sent before the bind or by a receiver, and another account's credential sends for that
// account alone.
func TestSMPPServerSubmits(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_SMPP_SERVER_ADDR": "127.0.0.1:0", "TUMA_RATE_LIMIT_RPS": "0", "TUMA_SIM_OUTCOMES": "delivered=1"})
	a := n.register("smpps@example.com")
	n.credit(a, "100")
	n.approved(a, "ACMEBANK", "all")
	systemID, password := n.smppCredential(a, map[string]any{})

	e := dialESME(t, n.smpp)
	if r := e.call(&smpp.PDU{Header: smpp.Header{ID: smpp.EnquireLink}}); r.ID != smpp.EnquireLinkResp || r.Status != smpp.StatusOK {
		t.Errorf("enquire_link before a bind = %s %s", r.ID, r.Status)
	}
	if st, _ := e.submit("", "0712345678", smpp.CodingDefault, gsm7(t, "hi")); st != smpp.StatusInvBndSts {
		t.Errorf("submit_sm before a bind = %s; want ESME_RINVBNDSTS", st)
	}
	wrong := password[:7] + "x"
	if password[7] == 'x' { // the random password may end in x itself
		wrong = password[:7] + "y"
	}
	if st := e.bind(smpp.BindTransceiver, systemID, wrong); st != smpp.StatusInvPaswd {
		t.Errorf("bind with a wrong password = %s; want ESME_RINVPASWD", st)
	}
	if st := e.bind(smpp.BindTransceiver, systemID, password); st != smpp.StatusOK {
		t.Fatalf("bind = %s", st)
	}
	if st := e.bind(smpp.BindTransceiver, systemID, password); st != smpp.StatusAlyBnd {
		t.Errorf("a second bind on the connection = %s; want ESME_RALYBND", st)
	}
	before := n.balance(a)

	// GSM-7 (with an escaped character) from the approved sender, to a national number.
	text := "Your code is 1234 {ok} @home"
	st, id := e.submit("ACMEBANK", "0712345678", smpp.CodingDefault, gsm7(t, text))
	if st != smpp.StatusOK || id == "" {
		t.Fatalf("submit_sm GSM-7 = %s %q", st, id)
	}
	m := n.smppMessage(a, id)
	if m["message"] != text || m["recipient"] != "+254712345678" || m["sender_id"] != "ACMEBANK" || m["encoding"] != "gsm7" {
		t.Errorf("the GSM-7 submit's message = %v", m)
	}
	smppCost := before - n.balance(a)
	r := n.send(a, map[string]any{"recipients": []string{"0712345679"}, "message": text, "sender_id": "ACMEBANK"})
	if r.Status != 202 {
		t.Fatalf("HTTP send = %d %s", r.Status, r.Body)
	}
	httpCost := r.json(t)["cost_kes"].(float64)
	if smppCost != httpCost || m["cost_kes"] != httpCost || smppCost <= 0 {
		t.Errorf("SMPP debit %v, message cost %v; the HTTP send of the same text costs %v", smppCost, m["cost_kes"], httpCost)
	}

	// UCS-2, from no sender (the account's default: the shared one, with the company prefix).
	uni := "Habari 😀 ✓"
	st, id = e.submit("", "254733000001", smpp.CodingUCS2, carriers.EncodeUCS2(uni))
	if st != smpp.StatusOK {
		t.Fatalf("submit_sm UCS-2 = %s", st)
	}
	m = n.smppMessage(a, id)
	if m["message"] != "Acme Ltd: "+uni || m["encoding"] != "ucs2" || m["network"] != "airtel" || m["cost_kes"].(float64) <= 0 {
		t.Errorf("the UCS-2 submit's message = %v", m)
	}

	// Refusals.
	if st, _ := e.submit("", "0200000000", smpp.CodingDefault, gsm7(t, "hi")); st != smpp.StatusInvDstAdr {
		t.Errorf("submit_sm to a landline = %s; want ESME_RINVDSTADR", st)
	}
	if st, _ := e.submit("NOTMINE", "0712345678", smpp.CodingDefault, gsm7(t, "hi")); st != smpp.StatusInvSrcAdr {
		t.Errorf("submit_sm from an unapproved sender = %s; want ESME_RINVSRCADR", st)
	}
	if r := n.do("POST", "/suppressions", map[string]any{"phone": "0712000111"}, key(a)...); r.Status != 201 {
		t.Fatalf("suppress = %d %s", r.Status, r.Body)
	}
	if st, _ := e.submit("", "0712000111", smpp.CodingDefault, gsm7(t, "hi")); st != 0x400 {
		t.Errorf("submit_sm to a suppressed number = %s; want 0x400", st)
	}
	if st, _ := e.submit("", "0712345678", 0x04, []byte{1, 2}); st != 0x104 {
		t.Errorf("submit_sm of 8-bit data = %s; want 0x104", st)
	}
	if st, _ := e.submit("", "0712345678", smpp.CodingDefault, nil); st != smpp.StatusInvMsgLen {
		t.Errorf("submit_sm of nothing = %s; want ESME_RINVMSGLEN", st)
	}

	// Garbage: an unknown command is answered generic_nack with its sequence number.
	e.raw([]byte{0, 0, 0, 16, 0, 0, 0x09, 0x99, 0, 0, 0, 0, 0, 0, 0x30, 0x39})
	if r := e.read(); r == nil || r.ID != smpp.GenericNack || r.Status != smpp.StatusInvCmdID || r.Seq != 12345 {
		t.Errorf("unknown command answered %+v; want generic_nack ESME_RINVCMDID seq 12345", r)
	}
	if r := e.call(&smpp.PDU{Header: smpp.Header{ID: smpp.EnquireLink}}); r.Status != smpp.StatusOK {
		t.Errorf("enquire_link after garbage = %s", r.Status)
	}

	// A receiver may not submit.
	rx := dialESME(t, n.smpp)
	if st := rx.bind(smpp.BindReceiver, systemID, password); st != smpp.StatusOK {
		t.Fatalf("bind_receiver = %s", st)
	}
	if st, _ := rx.submit("", "0712345678", smpp.CodingDefault, gsm7(t, "hi")); st != smpp.StatusInvBndSts {
		t.Errorf("submit_sm on a receiver = %s; want ESME_RINVBNDSTS", st)
	}

	// Another account's credential: its password does not open the first's system_id, and
	// what it sends is that account's, paid from its (empty) wallet.
	b := n.register("other@example.com")
	otherID, otherPassword := n.smppCredential(b, map[string]any{})
	o := dialESME(t, n.smpp)
	if st := o.bind(smpp.BindTransmitter, systemID, otherPassword); st != smpp.StatusInvPaswd {
		t.Errorf("bind as the first account with the other's password = %s; want ESME_RINVPASWD", st)
	}
	if st := o.bind(smpp.BindTransmitter, otherID, otherPassword); st != smpp.StatusOK {
		t.Fatalf("bind as the other account = %s", st)
	}
	if bal := n.balance(b); bal != 0 {
		t.Fatalf("the other account starts with %v", bal)
	}
	if st, _ := o.submit("ACMEBANK", "0712345678", smpp.CodingDefault, gsm7(t, "hi")); st != smpp.StatusInvSrcAdr {
		t.Errorf("the other account using the first's sender = %s; want ESME_RINVSRCADR", st)
	}
	if st, _ := o.submit("", "0712345678", smpp.CodingDefault, gsm7(t, "hi")); st != smpp.StatusSubmitFail {
		t.Errorf("submit_sm with no balance = %s; want ESME_RSUBMITFAIL", st)
	}
	if total := n.do("GET", "/sms/messages", nil, key(a)...).json(t)["total"]; total != 3.0 {
		t.Errorf("the first account has %v messages; want its 2 SMPP and 1 HTTP", total)
	}

	// unbind is answered, then the connection closes.
	if r := o.call(&smpp.PDU{Header: smpp.Header{ID: smpp.Unbind}}); r.ID != smpp.UnbindResp || r.Status != smpp.StatusOK {
		t.Errorf("unbind = %s %s", r.ID, r.Status)
	}
	if r := o.read(); r != nil {
		t.Errorf("after unbind_resp the server wrote %s", r.ID)
	}

	// Shutting down, the server unbinds the ESMEs still bound.
	n.stop()
	if r := e.read(); r == nil || r.ID != smpp.Unbind {
		t.Errorf("at shutdown the bound ESME got %+v; want unbind", r)
	}
}

// A credential binds at most max_binds times at once, across bind types, and again once a
// bind ends; one whose allow-list leaves out the peer's address does not bind at all.
func TestSMPPServerBindLimits(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_SMPP_SERVER_ADDR": "127.0.0.1:0", "TUMA_RATE_LIMIT_RPS": "0", "TUMA_SIM_OUTCOMES": "delivered=1"})
	a := n.register("smpps-limits@example.com")
	systemID, password := n.smppCredential(a, map[string]any{"max_binds": 2})
	first, second := dialESME(t, n.smpp), dialESME(t, n.smpp)
	if first.bind(smpp.BindTransmitter, systemID, password) != smpp.StatusOK || second.bind(smpp.BindReceiver, systemID, password) != smpp.StatusOK {
		t.Fatal("two binds of a credential allowing 2 refused")
	}
	third := dialESME(t, n.smpp)
	if st := third.bind(smpp.BindTransceiver, systemID, password); st != smpp.StatusBindFail {
		t.Errorf("a third bind = %s; want ESME_RBINDFAIL", st)
	}
	if r := first.call(&smpp.PDU{Header: smpp.Header{ID: smpp.Unbind}}); r.ID != smpp.UnbindResp {
		t.Fatalf("unbind = %s", r.ID)
	}
	first.read() // closed by the server: the bind is released by then
	deadline := time.Now().Add(10 * time.Second)
	for st := third.bind(smpp.BindTransceiver, systemID, password); st != smpp.StatusOK; st = third.bind(smpp.BindTransceiver, systemID, password) {
		if st != smpp.StatusBindFail || time.Now().After(deadline) {
			t.Fatalf("bind after another ended = %s", st)
		}
	}

	fenced, fencedPassword := n.smppCredential(a, map[string]any{"allowed_ips": []string{"192.0.2.0/24"}})
	e := dialESME(t, n.smpp)
	if st := e.bind(smpp.BindTransceiver, fenced, fencedPassword); st != smpp.StatusBindFail {
		t.Errorf("a bind from outside the allow-list = %s; want ESME_RBINDFAIL", st)
	}
	if st := e.bind(smpp.BindTransceiver, "nosuchsystem", fencedPassword); st != smpp.StatusInvPaswd {
		t.Errorf("a bind with an unknown system_id = %s; want ESME_RINVPASWD", st)
	}
}
