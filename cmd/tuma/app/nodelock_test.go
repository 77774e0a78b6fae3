package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/cmd/tuma/app"
)

// A second node started on a database another node runs on refuses to start, saying why and
// naming the node that holds it (two single nodes on one database both dispatch its open jobs:
// messages sent twice), and the first node goes on serving untouched. Once the first stops,
// a node starts on that database at once.
func TestSecondNodeOnOneDatabaseRefused(t *testing.T) {
	first := startNode(t, fastSims)
	a := first.register("one-node@example.com")
	first.credit(a, "100")
	if r := first.send(a, map[string]any{"recipients": numbers(3, 100), "message": "before"}); r.Status != 202 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}

	start := time.Now()
	_, err := bootNode(t, withEnv(fastSims, "TUMA_DATABASE_URL", first.dbURL, "TUMA_NODE_LOCK_WAIT", "1s"))
	if err == nil {
		t.Fatal("a second node started on a database another node runs on")
	}
	firstAddr := strings.TrimPrefix(first.base, "http://")
	for _, want := range []string{"another Tuma node is running on this database", "tuma " + firstAddr + " pid ", "TUMA_DATABASE_URL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("refused after %s; want TUMA_NODE_LOCK_WAIT (1s) of waiting for the holder to go", waited)
	}

	// The first node is untouched: ready, and it sends and delivers.
	if r := first.do("GET", "/readyz", nil); r.Status != 200 {
		t.Errorf("first node /readyz = %d %s", r.Status, r.Body)
	}
	if r := first.send(a, map[string]any{"recipients": numbers(2, 200), "message": "after"}); r.Status != 202 {
		t.Fatalf("send after the refusal = %d %s", r.Status, r.Body)
	}
	first.waitDone(a, 5)

	// Its lock goes with it.
	first.stop()
	second := startNode(t, withEnv(fastSims, "TUMA_DATABASE_URL", first.dbURL, "TUMA_NODE_LOCK_WAIT", "0s"))
	if b := second.balance(a); b != 97.5 {
		t.Errorf("balance on the next node %v; want 97.50", b)
	}
}

// A node the tests ask to share its database (app.WithoutNodeLock) starts beside another.
func TestWithoutNodeLockShares(t *testing.T) {
	first := startNode(t, fastSims)
	startNode(t, withEnv(fastSims, "TUMA_DATABASE_URL", first.dbURL, "TUMA_NODE_LOCK_WAIT", "0s"), app.WithoutNodeLock())
}
