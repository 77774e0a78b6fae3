package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A send that times out inside the engine may still commit. The client's retry with the same
// Idempotency-Key must get that job, not a second one: the key stays claimed on a timeout.
func TestRetryAfterTimeoutIsChargedOnce(t *testing.T) {
	n := startNode(t, withEnv(fastSims, "TUMA_REQUEST_TIMEOUT", "2s"))
	a := n.register("timeout@example.com")
	n.credit(a, "10")
	body := map[string]any{"recipients": numbers(2, 0), "message": "hi"}

	// Hold the wallet row so the group commit waits past the request's deadline.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, n.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM wallets WHERE account_id = $1 FOR UPDATE`, a.ID); err != nil {
		t.Fatal(err)
	}
	first := n.send(a, body, "Idempotency-Key", "order-7")
	if first.Status != 503 {
		t.Fatalf("send while the wallet is locked = %d %s; want 503 (the engine did not answer in time)", first.Status, first.Body)
	}
	if err := tx.Rollback(ctx); err != nil { // the held-up commit now goes through
		t.Fatal(err)
	}
	// While the first still runs, a retry is 409 (CONTRACT §1); once it is done, the retry
	// gets its outcome.
	var retry response
	deadline := time.Now().Add(20 * time.Second)
	for {
		retry = n.send(a, body, "Idempotency-Key", "order-7")
		if retry.Status != 409 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if retry.Status != 202 {
		t.Fatalf("retry = %d %s; want 202", retry.Status, retry.Body)
	}
	jobs := n.sqlInt(`SELECT count(*) FROM jobs WHERE account_id = $1`, a.ID)
	debits := n.sqlInt(`SELECT count(*) FROM wallet_transactions WHERE account_id = $1 AND type = 'debit'`, a.ID)
	if jobs != 1 || debits != 1 {
		t.Fatalf("%d jobs and %d debits after a timed-out send and its retry; want exactly one of each", jobs, debits)
	}
	if retry.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry not marked as a replay: %v", retry.Header)
	}
	if b := n.balance(a); b != 9.0 {
		t.Errorf("balance %v; want 9.00 (charged once)", b)
	}
}

// Concurrent requests with one key: one runs; the others replay its outcome, or are 409 while
// it still runs (CONTRACT §1); a request after it has its outcome.
func TestConcurrentSameKeyRunsOnce(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("samekey@example.com")
	n.credit(a, "10")
	body := map[string]any{"recipients": numbers(1, 0), "message": "hi"}
	var wg sync.WaitGroup
	jobs := make([]string, 8)
	for i := range jobs {
		wg.Go(func() {
			r := n.send(a, body, "Idempotency-Key", "same")
			switch r.Status {
			case 409:
				r.problem(t, 409, "idempotency_key_in_use")
			case 202:
				jobs[i] = r.json(t)["job_id"].(string)
			default:
				t.Errorf("concurrent send = %d %s; want 202 (run, or the first outcome replayed) or 409", r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	if got := n.sqlInt(`SELECT count(*) FROM jobs WHERE account_id = $1`, a.ID); got != 1 {
		t.Fatalf("%d jobs; want 1", got)
	}
	after := n.send(a, body, "Idempotency-Key", "same")
	if after.Status != 202 {
		t.Fatalf("the key once its request is done = %d %s; want 202", after.Status, after.Body)
	}
	job := after.json(t)["job_id"].(string)
	for _, j := range jobs {
		if j != "" && j != job {
			t.Errorf("replays name different jobs: %v, then %s", jobs, job)
		}
	}
}

// Operator credits take an Idempotency-Key like every other money write.
func TestAdminCreditIsIdempotent(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("credit-once@example.com")
	path := "/admin/accounts/" + a.ID + "/credit"
	hdr := append(adminAuth(), "Idempotency-Key", "credit-1")
	first := n.do("POST", path, `{"amount_kes": 25}`, hdr...)
	again := n.do("POST", path, `{"amount_kes": 25}`, hdr...)
	if first.Status != 200 || again.Status != 200 {
		t.Fatalf("credits = %d %s / %d %s", first.Status, first.Body, again.Status, again.Body)
	}
	if again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
		t.Errorf("repeat = %s (replayed %q); want the first answer %s replayed", again.Body, again.Header.Get("Idempotent-Replayed"), first.Body)
	}
	if b := n.balance(a); b != 25.0 {
		t.Fatalf("balance %v; want 25.00 (credited once)", b)
	}
	n.do("POST", path, `{"amount_kes": 30}`, hdr...).problem(t, 422, "idempotency_key_reused")
}

// A body with a key twice is ambiguous (encoding/json keeps the last), so it is refused
// before anything else looks at it: the duplicate "recipients" once slipped past deduplication.
func TestDuplicateJSONKeysAreRefused(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("dupkeys@example.com")
	n.credit(a, "10")
	for _, body := range []string{
		`{"recipients":["0712000001"],"recipients":["0712000001","0712000001"],"message":"hi"}`,
		`{"recipients":["0712000001"],"message":"hi","Message":"ho"}`,
		`{"recipients":["0712000001"],"message":"hi","sender_id":{"a":1,"a":2}}`,
	} {
		n.send(a, body).problem(t, 400, "duplicate_json_key")
	}
	n.do("PATCH", "/auth/profile", `{"company_name":"A","company_name":"B"}`, key(a)...).problem(t, 400, "duplicate_json_key")
	if got := n.sqlInt(`SELECT count(*) FROM jobs WHERE account_id = $1`, a.ID); got != 0 {
		t.Fatalf("%d jobs written for refused bodies", got)
	}
}

// A profile change reaches the tenant actor before the PATCH answers: the very next send is
// prefixed and priced with the new company name. Run with -count=50.
func TestCompanyNameChangeAppliesToTheNextSend(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("rename@example.com")
	n.credit(a, "100")
	// Warm the tenant actor so it holds the old name.
	if r := n.send(a, map[string]any{"recipients": numbers(1, 0), "message": "warm"}); r.Status != 202 {
		t.Fatalf("warm-up send = %d %s", r.Status, r.Body)
	}
	long := "A Company Whose Name Is Long Enough To Push It Over"
	for i, name := range []string{long, "X"} {
		if r := n.do("PATCH", "/auth/profile", map[string]string{"company_name": name}, key(a)...); r.Status != 200 {
			t.Fatalf("patch = %d %s", r.Status, r.Body)
		}
		msg := fmt.Sprintf("%0110d", i) // 110 digits: one part with "X: ", two with the long name
		r := n.send(a, map[string]any{"recipients": numbers(1, 100+i), "message": msg})
		if r.Status != 202 {
			t.Fatalf("send = %d %s", r.Status, r.Body)
		}
		wantCost := 0.5
		if name == long {
			wantCost = 1.0
		}
		if got := r.json(t)["cost_kes"]; got != wantCost {
			t.Errorf("send right after renaming to %q cost %v; want %v", name, got, wantCost)
		}
		job := r.json(t)["job_id"].(string)
		list := n.do("GET", "/sms/messages?job_id="+job, nil, key(a)...).json(t)["data"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["message"] != name+": "+msg {
			got, _ := json.Marshal(list)
			t.Errorf("message after renaming to %q = %s; want it prefixed %q", name, got, name+": ")
		}
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Operators can take a simulated network down and bring it back; its messages wait meanwhile.
func TestSimulatorControl(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("simctl@example.com")
	n.credit(a, "10")
	if r := n.do("PATCH", "/admin/sim/airtel", `{"down": true}`, adminAuth()...); r.Status != 200 || r.json(t)["down"] != true {
		t.Fatalf("take airtel down = %d %s", r.Status, r.Body)
	}
	n.do("PATCH", "/admin/sim/airtel", `{"failure_rate": 2}`, adminAuth()...).problem(t, 422, "validation_failed")
	n.do("PATCH", "/admin/sim/vodafone", `{"down": true}`, adminAuth()...).problem(t, 404, "not_found")
	if r := n.do("PATCH", "/admin/sim/airtel", `{"down": true}`, key(a)...); r.Status != 401 {
		t.Fatalf("a tenant's key on the admin API = %d; want 401", r.Status)
	}
	r := n.send(a, map[string]any{"recipients": []string{"0733000001"}, "message": "hi"})
	if r.Status != 202 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	waitFor(t, 10*time.Second, "airtel's breaker to open", func() bool {
		return n.sqlInt(`SELECT count(*) FROM messages WHERE status = 'queued'`) == 1
	})
	n.do("PATCH", "/admin/sim/airtel", `{"down": false}`, adminAuth()...)
	n.waitDone(a, 1)
	nets := n.do("GET", "/admin/sim", nil, adminAuth()...).json2(t)
	if len(nets) != 3 || nets[1].(map[string]any)["accepted"] != 1.0 {
		t.Errorf("networks = %v; want three, airtel having accepted the message", nets)
	}
}
