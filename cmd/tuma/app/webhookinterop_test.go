package app_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tuma-sms/tuma/bench/npmtest"
)

// The deliveries of a real node, message events of real sends and test events, before,
// during and after a secret roll, are accepted by an implementation nobody on this project
// wrote: the npm standardwebhooks package. A wrong secret is refused, so the check can fail.
func TestWebhookStandardWebhooksInterop(t *testing.T) {
	verifier := installVerifier(t) // first: without Node.js under CI=1 this fails, never skips
	n := startNode(t, hookEnv())
	rc := newReceiver(t, ok204)
	a := n.register("interop@example.com")
	n.credit(a, "100")
	id, first := n.hook(a, rc.srv.URL+"/main", "message.sent", "message.delivered")
	_, stranger := n.hook(a, rc.srv.URL+"/other", "wallet.low_balance") // only its secret is used

	r := n.do("POST", "/sms/send", map[string]any{"recipients": []string{"0712000001", "0733000002"}, "message": "Interop"}, key(a)...)
	if r.Status != 202 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	main := func(ds []delivery) (out []delivery) { // the other endpoint's (low balance) are not these
		for _, d := range ds {
			if d.Path == "/main" {
				out = append(out, d)
			}
		}
		return out
	}
	events := func(ds []delivery) (k int) {
		for _, d := range main(ds) {
			k += len(d.Events)
		}
		return k
	}
	before := main(rc.waitFor("4 message events", func(ds []delivery) bool { return events(ds) >= 4 }))

	r = n.do("POST", "/webhooks/"+id+"/roll-secret", map[string]any{"expires_in_seconds": 600}, key(a)...)
	if r.Status != 200 {
		t.Fatalf("roll = %d %s", r.Status, r.Body)
	}
	second := r.json(t)["secret"].(string)
	did := n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...).json(t)["delivery_id"].(string)
	during := ofID(rc.waitFor("the test event", func(ds []delivery) bool { return len(ofID(ds, did)) > 0 }), did)[0]

	var checks []verification
	for _, d := range before {
		checks = append(checks, verification{first, d, true}, verification{second, d, false}, verification{stranger, d, false})
	}
	checks = append(checks, verification{second, during, true}, verification{first, during, true}, verification{stranger, during, false})
	// A body changed on the way is refused.
	tampered := during
	tampered.Body = []byte(strings.Replace(string(during.Body), "webhook.test", "webhook.tost", 1))
	checks = append(checks, verification{second, tampered, false})
	verifyWithStandardWebhooks(t, verifier, checks)
}

// verification asks whether the package accepts delivery d with secret; want is the answer.
type verification struct {
	secret string
	d      delivery
	want   bool
}

// verifierFixture is transport/webhooks' verifier (standardwebhooks, locked).
var verifierFixture = &npmtest.Fixture{Src: filepath.Join("..", "..", "..", "transport", "webhooks", "testdata", "verifier"),
	Files: []string{"package.json", "package-lock.json", "verify.js"}}

// installVerifier installs the verifier fixture into a temporary folder, once. Without
// Node.js or npm it skips, except under CI=1.
func installVerifier(t *testing.T) string {
	t.Helper()
	dir, err := verifierFixture.Dir()
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("standardwebhooks verifier not installed (Node.js and npm come from deploy/dev/test-tools.sh): %v", err)
		}
		t.Fatalf("standardwebhooks verifier (Node.js and npm are installed by deploy/dev/test-tools.sh): %v", err)
	}
	return dir
}

// verifyWithStandardWebhooks has the package's Webhook.verify judge each check.
func verifyWithStandardWebhooks(t *testing.T, dir string, checks []verification) {
	t.Helper()
	var in strings.Builder
	for _, c := range checks {
		b, _ := json.Marshal(map[string]string{"secret": c.secret, "id": c.d.ID, "timestamp": c.d.Stamp,
			"signature": c.d.Signature, "body": string(c.d.Body)})
		in.Write(append(b, '\n'))
	}
	cmd := exec.Command("node", filepath.Join(dir, "verify.js"))
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node verify.js: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	i := 0
	for ; sc.Scan(); i++ {
		var r struct {
			OK    bool
			Error string
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if c := checks[i]; r.OK != c.want {
			t.Errorf("standardwebhooks on delivery %s (signature %q), check %d: ok %v (%s); want %v", c.d.ID, c.d.Signature, i, r.OK, r.Error, c.want)
		}
	}
	if i != len(checks) {
		t.Fatalf("the verifier answered %d of %d checks", i, len(checks))
	}
}
