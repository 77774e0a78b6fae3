package app_test

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/bench/npmtest"
	"github.com/tuma-sms/tuma/carriers/smpp"
)

// nodeESME is carriers/smpp/testdata/nodesmsc/esme.js: an ESME on node-smpp, an SMPP
// implementation nobody on this project wrote, bound to a node's SMPP server.
type nodeESME struct {
	t      *testing.T
	stdin  io.WriteCloser
	events chan map[string]any
}

// nodeESMEFixture is carriers/smpp's node-smpp ESME, installed once.
var nodeESMEFixture = &npmtest.Fixture{Src: filepath.Join("..", "..", "..", "carriers", "smpp", "testdata", "nodesmsc"),
	Files: []string{"package.json", "package-lock.json", "esme.js"}}

// installNodeESME installs the fixture's locked packages into a temporary folder, once.
func installNodeESME(t *testing.T) string {
	t.Helper()
	dir, err := nodeESMEFixture.Dir()
	if err != nil {
		t.Fatalf("node-smpp fixture (Node.js and npm are installed by deploy/dev/test-tools.sh): %v", err)
	}
	return dir
}

func startNodeESME(t *testing.T, addr, systemID, password string) *nodeESME {
	t.Helper()
	dir := installNodeESME(t)
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	cmd := exec.Command("node", filepath.Join(dir, "esme.js"), "--port", port, "--system-id", systemID, "--password", password)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := &nodeESME{t: t, stdin: stdin, events: make(chan map[string]any, 1024)}
	go func() {
		defer close(e.events)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				e.events <- ev
			}
		}
	}()
	t.Cleanup(func() {
		_, _ = io.WriteString(stdin, "quit\n")
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	if ev := e.next("bind"); ev["status"] != float64(0) {
		t.Fatalf("node-smpp's bind_transceiver = %v", ev)
	}
	return e
}

// next waits for the next event of kind, keeping the others it reads in order for later.
func (e *nodeESME) next(kind string) map[string]any {
	e.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-e.events:
			if !ok {
				e.t.Fatalf("node-smpp's ESME ended before a %s event", kind)
			}
			if ev["event"] == kind {
				return ev
			}
			if ev["event"] == "error" || ev["event"] == "close" {
				e.t.Fatalf("node-smpp's ESME: %v while waiting for %s", ev, kind)
			}
		case <-deadline:
			e.t.Fatalf("node-smpp's ESME sent no %s event within 20s", kind)
		}
	}
}

func (e *nodeESME) submit(tag, to string, dataCoding, esmClass byte, sm []byte) {
	e.t.Helper()
	b, _ := json.Marshal(map[string]any{"tag": tag, "to": to, "data_coding": dataCoding, "esm_class": esmClass, "hex": hex.EncodeToString(sm)})
	if _, err := e.stdin.Write(append(b, '\n')); err != nil {
		e.t.Fatal(err)
	}
}

// node-smpp as a tenant's client: GSM-7, UCS-2 and a two-part UDH message each answered with a
// message id, billed as the same texts over HTTP, receipted with that id; a message texted to
// the account's number reaches it as deliver_sm.
func TestSMPPServerWithNodeSMPP(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_SMPP_SERVER_ADDR": "127.0.0.1:0", "TUMA_RATE_LIMIT_RPS": "0", "TUMA_SIM_OUTCOMES": "delivered=1"})
	a := n.register("nodesmpp@example.com")
	n.credit(a, "100")
	if r := n.do("POST", "/admin/accounts/"+a.ID+"/inbound-numbers", map[string]any{"number": "22387", "network": "safaricom"}, adminAuth()...); r.Status != 201 {
		t.Fatalf("assign = %d %s", r.Status, r.Body)
	}
	systemID, password := n.smppCredential(a, map[string]any{})
	e := startNodeESME(t, n.smpp, systemID, password)

	long := strings.Repeat("Your parcel 1042 is at the Westlands depot. ", 5) // 220 GSM-7 characters: 2 parts
	texts := map[string]string{"gsm": "Hello from node-smpp", "ucs2": "Habari 😀 karibu", "long": long}
	e.submit("gsm", "0712345678", smpp.CodingDefault, 0, gsm7(t, texts["gsm"]))
	e.submit("ucs2", "0712345679", smpp.CodingUCS2, 0, utf16be(texts["ucs2"]))
	body := gsm7(t, long)
	e.submit("long1", "0712345670", smpp.CodingDefault, smpp.ESMClassUDHI, append([]byte{5, 0, 3, 42, 2, 1}, body[:153]...))
	e.submit("long2", "0712345670", smpp.CodingDefault, smpp.ESMClassUDHI, append([]byte{5, 0, 3, 42, 2, 2}, body[153:]...))
	ids := map[string]string{}
	for range 4 {
		ev := e.next("submit_resp")
		if ev["status"] != float64(0) {
			t.Fatalf("submit_sm_resp %v; want ESME_ROK", ev)
		}
		ids[ev["tag"].(string)] = ev["message_id"].(string)
	}
	// Every part of a long message is answered with the message's id.
	if ids["long1"] != ids["long2"] {
		t.Errorf("the long message's parts were answered %s and %s; want its one id for both", ids["long1"], ids["long2"])
	}
	ids["long"] = ids["long2"]
	to := map[string]string{"gsm": "0712345678", "ucs2": "0712345679", "long": "0712345670"}
	for _, tag := range []string{"gsm", "ucs2", "long"} {
		m := n.smppMessage(a, ids[tag])
		q := n.do("POST", "/sms/quote", map[string]any{"recipients": []string{to[tag]}, "message": texts[tag]}, key(a)...).json(t)
		if !strings.HasSuffix(m["message"].(string), texts[tag]) || m["cost_kes"] != q["cost_kes"] || m["parts"] != q["parts"] {
			t.Errorf("%s: message %q, %v parts, KES %v; want the text as sent, billed as the HTTP quote (%v parts, KES %v)",
				tag, m["message"], m["parts"], m["cost_kes"], q["parts"], q["cost_kes"])
		}
	}
	receipted := map[string]bool{}
	for range 3 {
		ev := e.next("receipt")
		id, _ := ev["receipted_message_id"].(string)
		receipted[strings.TrimRight(id, "\x00")] = true
		if !strings.Contains(ev["short_message"].(string), "id:"+strings.TrimRight(id, "\x00")) {
			t.Errorf("receipt text %q does not name %s", ev["short_message"], id)
		}
	}
	for tag, id := range map[string]string{"gsm": ids["gsm"], "ucs2": ids["ucs2"], "long": ids["long"]} {
		if !receipted[id] {
			t.Errorf("no receipt for the %s message %s; got %v", tag, id, receipted)
		}
	}

	n.mo("0712345678", "22387", "Jambo from a phone")
	ev := e.next("mo")
	sm, _ := hex.DecodeString(ev["short_message_hex"].(string))
	text, err := smpp.DecodeText(byte(ev["data_coding"].(float64)), sm)
	if err != nil || text != "Jambo from a phone" || ev["source_addr"] != "254712345678" || ev["destination_addr"] != "22387" {
		t.Errorf("node-smpp got deliver_sm %v (%q, %v); want the subscriber's text from 254712345678 to 22387", ev, text, err)
	}
}

func utf16be(s string) []byte {
	var b []byte
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			hi, lo := 0xD800+(r>>10), 0xDC00+(r&0x3FF)
			b = append(b, byte(hi>>8), byte(hi), byte(lo>>8), byte(lo))
			continue
		}
		b = append(b, byte(r>>8), byte(r))
	}
	return b
}
