package app_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// kannelCalls are what Kannel's smsbox asked of the test's web server: delivery reports by
// tag, and the messages texted in (sms-service).
type kannelCalls struct {
	mu   sync.Mutex
	dlrs map[string][]string // tag → the %d values reported
	mos  []url.Values
}

func (k *kannelCalls) dlr(tag string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.dlrs[tag]...)
}

func (k *kannelCalls) moCount() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.mos)
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Kannel's bearerbox as a tenant's ESME (Debian's kannel 1.4.5, which nobody on this project
// wrote), binding a transceiver to Tuma's SMPP server: GSM-7, UCS-2 and concatenated messages
// sent through its sendsms interface are accepted, billed like HTTP sends and reported delivered
// to Kannel (its dlr-url fires with 1); a message texted to the account's number reaches
// Kannel's sms-service.
func TestSMPPServerWithKannel(t *testing.T) {
	bearerbox, err1 := kannelBin("bearerbox")
	smsbox, err2 := kannelBin("smsbox")
	if err1 != nil || err2 != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("Kannel is not installed (CI is set, so this fails): deploy/dev/test-tools.sh installs it")
		}
		t.Skip("Kannel is not installed (apt-get install kannel; deploy/dev/test-tools.sh installs it)")
	}
	n := startNode(t, map[string]string{"TUMA_SMPP_SERVER_ADDR": "127.0.0.1:0", "TUMA_RATE_LIMIT_RPS": "0", "TUMA_SIM_OUTCOMES": "delivered=1"})
	a := n.register("kannel@example.com")
	n.credit(a, "100")
	n.approveDefaultSender(a, "ACMESHOP", "safaricom")
	if r := n.do("POST", "/admin/accounts/"+a.ID+"/inbound-numbers", map[string]any{"number": "22388", "network": "safaricom"}, adminAuth()...); r.Status != 201 {
		t.Fatalf("assign = %d %s", r.Status, r.Body)
	}
	systemID, password := n.smppCredential(a, map[string]any{})

	calls := &kannelCalls{dlrs: map[string][]string{}}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.mu.Lock()
		defer calls.mu.Unlock()
		q := r.URL.Query()
		switch r.URL.Path {
		case "/dlr":
			calls.dlrs[q.Get("tag")] = append(calls.dlrs[q.Get("tag")], q.Get("status"))
		case "/mo":
			calls.mos = append(calls.mos, q)
		}
	}))
	defer web.Close()

	dir := t.TempDir()
	admin, boxPort, sendPort := freeTCPPort(t), freeTCPPort(t), freeTCPPort(t)
	host, port, _ := net.SplitHostPort(n.smpp)
	conf := fmt.Sprintf(`group = core
admin-port = %d
admin-password = kannel
smsbox-port = %d
box-allow-ip = "127.0.0.1"
log-file = "%[4]s/bearerbox.log"
log-level = 1
dlr-storage = internal

group = smsc
smsc = smpp
smsc-id = tuma
host = %[5]s
port = %[6]s
transceiver-mode = true
smsc-username = %[7]s
smsc-password = %[8]s
system-type = ""
max-pending-submits = 10

group = smsbox
bearerbox-host = 127.0.0.1
sendsms-port = %[3]d
log-file = "%[4]s/smsbox.log"
log-level = 1

group = sendsms-user
username = tuma
password = kannel
max-messages = 10
concatenation = true

group = sms-service
keyword = default
catch-all = true
max-messages = 0
get-url = "%[9]s/mo?from=%%p&to=%%P&text=%%a"
`, admin, boxPort, sendPort, dir, host, port, systemID, password, web.URL)
	path := filepath.Join(dir, "kannel.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(bin string) {
		t.Helper()
		cmd := exec.Command(bin, path)
		out, err := os.Create(filepath.Join(dir, filepath.Base(bin)+".out"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			out.Close()
		})
	}
	logs := func() string {
		var b strings.Builder
		for _, f := range []string{"bearerbox.log", "smsbox.log", "bearerbox.out", "smsbox.out"} {
			raw, _ := os.ReadFile(filepath.Join(dir, f))
			fmt.Fprintf(&b, "--- %s\n%s\n", f, clipTail(string(raw), 4000))
		}
		return b.String()
	}
	waitFor := func(what string, d time.Duration, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(d); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s\n%s", what, d, logs())
			}
		}
	}
	start(bearerbox)
	waitFor("bearerbox taking boxes", 30*time.Second, func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", boxPort))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	start(smsbox)
	waitFor("Kannel bound to Tuma", 30*time.Second, func() bool {
		return strings.Contains(string(n.do("GET", "/metrics", nil).Body), `tuma_smpp_server_binds{type="transceiver"} 1`)
	})
	waitFor("Kannel's sendsms listening", 30*time.Second, func() bool {
		r, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", sendPort))
		if err == nil {
			r.Body.Close()
		}
		return err == nil
	})

	long := strings.Repeat("Your parcel 1042 is at the Westlands depot. ", 5) // 220 characters: 2 parts
	sends := []struct{ tag, to, text, extra string }{
		{"gsm", "0712345678", "Hello from Kannel", ""},
		{"ucs2", "0712345679", "Habari 😀 karibu", "&coding=2&charset=UTF-8"},
		{"long", "0712345670", long, ""},
	}
	for _, s := range sends {
		dlr := web.URL + "/dlr?tag=" + s.tag + "&status=%d"
		u := fmt.Sprintf("http://127.0.0.1:%d/cgi-bin/sendsms?username=tuma&password=kannel&from=ACMESHOP&to=%s&text=%s&dlr-mask=3&dlr-url=%s%s",
			sendPort, s.to, url.QueryEscape(s.text), url.QueryEscape(dlr), s.extra)
		r, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != 202 {
			t.Fatalf("Kannel's sendsms for %s = %d\n%s", s.tag, r.StatusCode, logs())
		}
	}
	for _, s := range sends {
		waitFor("Kannel told "+s.tag+" was delivered", 60*time.Second, func() bool {
			for _, st := range calls.dlr(s.tag) {
				if st == "1" {
					return true
				}
			}
			return false
		})
	}
	// What Tuma sent and billed: the same as the HTTP quote of each text.
	msgs := n.do("GET", "/sms/messages?page_size=10", nil, key(a)...).json(t)["data"].([]any)
	if len(msgs) != len(sends) {
		t.Fatalf("the account has %d messages; want %d", len(msgs), len(sends))
	}
	for _, s := range sends {
		var m map[string]any
		for _, x := range msgs {
			if x.(map[string]any)["message"] == s.text {
				m = x.(map[string]any)
			}
		}
		q := n.do("POST", "/sms/quote", map[string]any{"recipients": []string{s.to}, "message": s.text, "sender_id": "ACMESHOP"}, key(a)...).json(t)
		if m == nil || m["source"] != "smpp" || m["sender_id"] != "ACMESHOP" || m["parts"] != q["parts"] || m["cost_kes"] != q["cost_kes"] {
			t.Errorf("%s: message %v; want the text as sent from ACMESHOP over smpp, billed as the quote (%v parts, KES %v)",
				s.tag, m, q["parts"], q["cost_kes"])
		}
	}

	n.mo("0712345678", "22388", "Jambo Kannel")
	waitFor("Kannel's sms-service got the inbound message", 30*time.Second, func() bool { return calls.moCount() > 0 })
	calls.mu.Lock()
	mo := calls.mos[0]
	calls.mu.Unlock()
	if mo.Get("text") != "Jambo Kannel" || !strings.HasSuffix(mo.Get("from"), "254712345678") || mo.Get("to") != "22388" {
		t.Errorf("Kannel's sms-service got %v; want Jambo Kannel from 254712345678 to 22388", mo)
	}
}

// kannelBin finds one of Kannel's programs: on PATH, or where Debian puts them (/usr/sbin,
// not on every user's PATH).
func kannelBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return exec.LookPath(filepath.Join("/usr/sbin", name))
}

func clipTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
