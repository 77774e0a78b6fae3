package bench

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// The Standard Webhooks specification's own example verifies, so the receiver checks
// signatures as the specification says, not as the server happens to compute them.
func TestHookSignatureVerifiesTheSpecificationsExample(t *testing.T) {
	key, err := base64.StdEncoding.DecodeString("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", "v1,bm9ldHUjKzFob2VudXRob2VodW9lYXJjaGs= v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	body := []byte(`{"test": 2432232314}`)
	if !verified(key, h, body) {
		t.Fatal("the specification's example does not verify")
	}
	if verified(key, h, append(body, ' ')) {
		t.Fatal("a changed body verifies")
	}
	h.Set("webhook-signature", "v1,bm9ldHUjKzFob2VudXRob2VodW9lYXJjaGs=")
	if verified(key, h, body) {
		t.Fatal("a wrong signature verifies")
	}
}

// The receiver counts duplicates, a final event before message.sent, and bad signatures.
func TestHookReceiverCounts(t *testing.T) {
	rcv, err := startHookReceiver("127.0.0.1:0", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rcv.stop(); err != nil {
			t.Error(err)
		}
	})
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	if err := rcv.setSecret(0, secret); err != nil {
		t.Fatal(err)
	}
	key, _ := base64.StdEncoding.DecodeString(secret[len("whsec_"):])
	post := func(body string, sign bool) int {
		t.Helper()
		req, err := http.NewRequest("POST", rcv.url("", 0), bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		m := hmac.New(sha256.New, key)
		fmt.Fprintf(m, "msg_1.%s.%s", ts, body)
		sig := base64.StdEncoding.EncodeToString(m.Sum(nil))
		if !sign {
			sig = base64.StdEncoding.EncodeToString(make([]byte, 32))
		}
		req.Header.Set("webhook-id", "msg_1")
		req.Header.Set("webhook-timestamp", ts)
		req.Header.Set("webhook-signature", "v1,"+sig)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	ev := func(id, typ, msg string) string {
		return fmt.Sprintf(`{"id":%q,"type":%q,"created_at":%q,"data":{"message_id":%q}}`, id, typ, now, msg)
	}
	const m1, m2 = "0b0e7a36-4f6f-4c55-9d0e-6c2f8a1d0001", "0b0e7a36-4f6f-4c55-9d0e-6c2f8a1d0002"
	if got := post(`{"events":[`+ev("evt_1", "message.sent", m1)+","+ev("evt_2", "message.delivered", m1)+`]}`, true); got != 204 {
		t.Fatalf("a signed delivery: %d", got)
	}
	if got := post(`{"events":[`+ev("evt_2", "message.delivered", m1)+`]}`, true); got != 204 { // a retry
		t.Fatalf("a repeated delivery: %d", got)
	}
	if got := post(`{"events":[`+ev("evt_3", "message.delivered", m2)+`]}`, true); got != 204 {
		t.Fatalf("an early final event: %d", got)
	}
	if got := post(`{"events":[`+ev("evt_4", "message.sent", m2)+`]}`, false); got != 401 {
		t.Fatalf("a bad signature: %d, want 401", got)
	}
	for _, bad := range []string{`{"events":[{"id":1}]}`, `{"events":[]}`, `{"events":[` + ev("evt_5", "message.sent", "not-a-uuid") + `]}`,
		`{"events":[{"id":"evt_6","type":"message.sent","created_at":"yesterday"}]}`, `{"events":[` + ev("evt_7", "message.sent", m2) + `]`} {
		if got := post(bad, true); got != 400 {
			t.Errorf("body %s: %d, want 400", bad, got)
		}
	}
	c := rcv.counts()
	if c.Deliveries != 3 || c.Events != 4 || c.Unique != 3 || c.Duplicates != 1 || c.OutOfOrder != 1 || c.BadSignatures != 1 || c.BadBodies != 5 {
		t.Fatalf("counts %+v", c)
	}
	sent, delivered, orphans := rcv.tally()
	if sent != 1 || delivered != 2 || orphans != 1 {
		t.Fatalf("tally: sent %d delivered %d delivered-without-sent %d", sent, delivered, orphans)
	}
}
