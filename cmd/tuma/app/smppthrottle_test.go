package app_test

import (
	"testing"

	"github.com/tuma-sms/tuma/carriers/smpp"
)

// TUMA_SMPP_SERVER_TPS limits an account's submits across all its binds: a burst written to
// two binds at once is answered ESME_RTHROTTLED past the bucket, and nothing throttled is
// sent.
func TestSMPPServerThrottlesPerAccount(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_SMPP_SERVER_ADDR": "127.0.0.1:0", "TUMA_RATE_LIMIT_RPS": "0",
		"TUMA_SMPP_SERVER_TPS": "4"})
	a := n.register("smpp-throttle@example.com")
	n.credit(a, "100")
	systemID, password := n.smppCredential(a, map[string]any{})
	binds := []*esme{dialESME(t, n.smpp), dialESME(t, n.smpp)}
	for _, e := range binds {
		if st := e.bind(smpp.BindTransmitter, systemID, password); st != smpp.StatusOK {
			t.Fatalf("bind = %s", st)
		}
	}
	const each = 8
	for _, e := range binds { // written without waiting: all are checked within moments
		for i := 0; i < each; i++ {
			e.write(&smpp.PDU{Header: smpp.Header{ID: smpp.SubmitSM}, Dest: "0712345678", ShortMessage: gsm7(t, "hi")})
		}
	}
	sent, throttled := 0, map[int]int{}
	for b, e := range binds {
		for i := 0; i < each; i++ {
			r := e.read()
			switch {
			case r == nil || r.ID != smpp.SubmitSMResp:
				t.Fatalf("bind %d answered %+v", b, r)
			case r.Status == smpp.StatusOK:
				sent++
			case r.Status == smpp.StatusThrottled:
				throttled[b]++
			default:
				t.Errorf("bind %d: submit_sm = %s", b, r.Status)
			}
		}
	}
	// The account's 4 tokens, and a few more if the burst took most of a second on a slow
	// box; a bucket per bind would have sent 8.
	if sent < 4 || sent > 7 || throttled[0] == 0 || throttled[1] == 0 || throttled[0]+throttled[1] != 2*each-sent {
		t.Errorf("%d sent, %v throttled by bind, of %d; want 4 to 7 sent at 4/s across both binds, the rest throttled",
			sent, throttled, 2*each)
	}
	if total := n.do("GET", "/sms/messages", nil, key(a)...).json(t)["total"]; total != float64(sent) {
		t.Errorf("the account has %v messages; want the %d submits answered ESME_ROK", total, sent)
	}
}
