package app_test

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers/smpp"
)

// startSMSC runs the simulated SMSC of `tuma smsc` for one test.
func startSMSC(t *testing.T, cfg smpp.SMSCConfig) *smpp.SMSC {
	t.Helper()
	cfg.Addr, cfg.SystemID, cfg.Password = "127.0.0.1:0", "tuma", "secret"
	s, err := smpp.NewSMSC(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(context.Background()) }()
	t.Cleanup(s.Close)
	return s
}

// smscs is one simulated SMSC per network, as each network runs its own.
type smscs map[string]*smpp.SMSC

func startSMSCs(t *testing.T, cfg smpp.SMSCConfig) smscs {
	return smscs{"safaricom": startSMSC(t, cfg), "airtel": startSMSC(t, cfg), "telkom": startSMSC(t, cfg)}
}

// env points each network's binds at its SMSC.
func (ss smscs) env(query string) map[string]string {
	env := map[string]string{"TUMA_CARRIERS": "smpp"}
	for n, s := range ss {
		env["TUMA_SMPP_"+strings.ToUpper(n)] = "smpp://tuma:secret@" + s.Addr() + "?reconnect=20ms-200ms&" + query
	}
	return env
}

// stats adds up the SMSCs' counters.
func (ss smscs) stats() smpp.SMSCStats {
	var sum smpp.SMSCStats
	for _, s := range ss {
		st := s.Stats()
		sum.Binds += st.Binds
		sum.Submits += st.Submits
		sum.Receipts += st.Receipts
		sum.Queries += st.Queries
		sum.Throttled += st.Throttled
	}
	return sum
}

func TestSMPPSendDelivers(t *testing.T) {
	s := startSMSCs(t, smpp.SMSCConfig{ReceiptDelay: 20 * time.Millisecond, ReceiptTLVs: true})
	n := startNode(t, s.env("window=50"))
	a := n.register("smpp@example.com")
	n.credit(a, "100")
	if r := n.send(a, map[string]any{"recipients": numbers(20, 0), "message": "Habari {jina}"}); r.Status != 202 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	long := strings.Repeat("ж", 135) // three UCS-2 parts
	if r := n.send(a, map[string]any{"recipients": []string{"0733000001"}, "message": long}); r.Status != 202 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	st := n.waitDone(a, 21)
	if st["delivered"] != 21.0 {
		t.Fatalf("stats %v: want 21 delivered", st)
	}
	if got := s.stats(); got.Submits != 23 || got.Receipts != 23 {
		t.Fatalf("the SMSCs saw %+v: want 23 submits (20 + 3 parts) and 23 receipts", got)
	}
}

// GET /sms/delivery/{id} of a message still en route asks the network with query_sm.
func TestSMPPDeliveryCheckQueries(t *testing.T) {
	s := startSMSCs(t, smpp.SMSCConfig{ReceiptDelay: time.Hour})
	n := startNode(t, s.env(""))
	a := n.register("query@example.com")
	n.credit(a, "10")
	n.send(a, map[string]any{"recipients": numbers(1, 0), "message": "hi"})
	var pid string
	waitFor(t, 10*time.Second, "the message sent", func() bool {
		m := n.do("GET", "/sms/messages", nil, key(a)...).json(t)["data"].([]any)
		if len(m) == 1 && m[0].(map[string]any)["status"] == "sent" {
			pid = m[0].(map[string]any)["provider_message_id"].(string)
		}
		return pid != ""
	})
	m := n.do("GET", "/sms/delivery/"+url.PathEscape(pid), nil, key(a)...).json(t)
	if m["status"] != "sent" || m["provider_status"] != "ENROUTE" || s["safaricom"].Stats().Queries != 1 {
		t.Fatalf("delivery check %v after %d query_sm", m, s["safaricom"].Stats().Queries)
	}
}

func TestSMPPReceiptIDFormsAndEarlyReceipts(t *testing.T) {
	cases := []struct {
		name string
		cfg  smpp.SMSCConfig
		ids  string
	}{
		{"decimal receipt ids, text only", smpp.SMSCConfig{IDForm: smpp.IDHexInRespDecInReceipt}, "hex-dec"},
		{"hex receipt ids, text only", smpp.SMSCConfig{IDForm: smpp.IDDecInRespHexInReceipt}, "dec-hex"},
		{"receipt before its resp", smpp.SMSCConfig{ReceiptsFirst: true, ReceiptTLVs: true}, "same"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := startSMSCs(t, c.cfg)
			n := startNode(t, s.env("ids="+c.ids))
			a := n.register("ids@example.com")
			n.credit(a, "100")
			if r := n.send(a, map[string]any{"recipients": numbers(10, 0), "message": "hi"}); r.Status != 202 {
				t.Fatalf("send = %d %s", r.Status, r.Body)
			}
			if r := n.send(a, map[string]any{"recipients": []string{"0722000001"}, "message": strings.Repeat("b", 200)}); r.Status != 202 {
				t.Fatalf("send = %d %s", r.Status, r.Body)
			}
			if st := n.waitDone(a, 11); st["delivered"] != 11.0 {
				t.Fatalf("stats %v: want all 11 delivered", st)
			}
		})
	}
}

func TestSMPPBindDropLosesNothing(t *testing.T) {
	ss := startSMSCs(t, smpp.SMSCConfig{ReceiptDelay: 50 * time.Millisecond, ReceiptTLVs: true, TPS: 2000})
	s := ss["safaricom"]
	n := startNode(t, ss.env("window=20"))
	a := n.register("drop@example.com")
	n.credit(a, "1000")
	const total = 1500
	if r := n.send(a, map[string]any{"recipients": numbers(total, 0), "message": "drop test"}); r.Status != 202 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	waitFor(t, 20*time.Second, "a third submitted", func() bool { return s.Stats().Submits >= total/3 })
	if s.Drop() == 0 {
		t.Fatal("no session to drop")
	}
	st := n.waitDone(a, total)
	if st["delivered"] != float64(total) {
		t.Fatalf("stats %v: want %d delivered", st, total)
	}
	// Submits awaiting their resp at the drop go again: at most the bind's window.
	if got := s.Stats(); got.Submits > total+20 || got.Binds != 2 {
		t.Fatalf("the SMSC saw %+v", got)
	}
}

// A submit_sm_resp that comes after the response timeout leaves the message sent with an
// unknown outcome, not sent again; the late resp gives it its id, and its receipt settles it.
func TestSMPPLateRespStillCorrelates(t *testing.T) {
	s := startSMSCs(t, smpp.SMSCConfig{ReceiptDelay: 500 * time.Millisecond, ReceiptTLVs: true,
		SlowPrefix: "254712", SlowDelay: 300 * time.Millisecond})
	n := startNode(t, s.env("response_timeout=100ms"))
	a := n.register("late@example.com")
	n.credit(a, "10")
	if r := n.send(a, map[string]any{"recipients": numbers(3, 0), "message": "late"}); r.Status != 202 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	if st := n.waitDone(a, 3); st["delivered"] != 3.0 {
		t.Fatalf("stats %v: want 3 delivered", st)
	}
	if got := s["safaricom"].Stats().Submits; got != 3 {
		t.Fatalf("%d submits for 3 messages: an unanswered submit was sent again", got)
	}
	for _, m := range n.do("GET", "/sms/messages", nil, key(a)...).json(t)["data"].([]any) {
		if m.(map[string]any)["provider_message_id"] == nil {
			t.Fatalf("message without its late id: %v", m)
		}
	}
}
