package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const paystackSecret = "sk_test_fake_paystack_secret"

// fakePaystack is a stand-in for Paystack's transaction API, with the state of each
// transaction under the test's control.
type fakePaystack struct {
	t    *testing.T
	srv  *httptest.Server
	mu   sync.Mutex
	txs  map[string]map[string]any // reference → verify data
	down atomic.Bool
}

func startPaystack(t *testing.T) *fakePaystack {
	f := &fakePaystack{t: t, txs: map[string]map[string]any{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakePaystack) reply(w http.ResponseWriter, status int, ok bool, msg string, data any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"status": ok, "message": msg, "data": data})
}

func (f *fakePaystack) serve(w http.ResponseWriter, r *http.Request) {
	if f.down.Load() {
		http.Error(w, "upstream connect error", http.StatusServiceUnavailable)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+paystackSecret {
		f.reply(w, 401, false, "Invalid key", nil)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == "POST" && r.URL.Path == "/transaction/initialize":
		var in struct {
			Email     string `json:"email"`
			Amount    int64  `json:"amount"`
			Currency  string `json:"currency"`
			Reference string `json:"reference"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Amount <= 0 || in.Reference == "" {
			f.reply(w, 400, false, "Invalid request", nil)
			return
		}
		if _, dup := f.txs[in.Reference]; dup {
			f.reply(w, 400, false, "Duplicate Transaction Reference", nil)
			return
		}
		// Paystack reports an unpaid checkout as abandoned.
		f.txs[in.Reference] = map[string]any{"id": len(f.txs) + 1, "status": "abandoned", "reference": in.Reference,
			"amount": in.Amount, "requested_amount": in.Amount, "currency": in.Currency, "paid_at": nil,
			"customer": map[string]any{"email": in.Email}}
		code := fmt.Sprintf("ac%06d", len(f.txs))
		f.reply(w, 200, true, "Authorization URL created", map[string]any{
			"authorization_url": "https://checkout.paystack.test/" + code, "access_code": code, "reference": in.Reference})
	case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/transaction/verify/"):
		tx, ok := f.txs[strings.TrimPrefix(r.URL.Path, "/transaction/verify/")]
		if !ok {
			f.reply(w, 400, false, "Transaction reference not found", nil)
			return
		}
		f.reply(w, 200, true, "Verification successful", tx)
	default:
		f.reply(w, 404, false, "not found", nil)
	}
}

// settle changes a transaction at the provider (the payer paid, or something odd happened).
func (f *fakePaystack) settle(ref string, fields map[string]any) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	tx := f.txs[ref]
	if tx == nil {
		f.t.Fatalf("the provider never heard of %s", ref)
	}
	tx["status"], tx["paid_at"] = "success", time.Now().UTC().Format(time.RFC3339)
	for k, v := range fields {
		tx[k] = v
	}
	out := map[string]any{}
	for k, v := range tx {
		out[k] = v
	}
	return out
}

func paystackNode(t *testing.T, env map[string]string) (*node, *fakePaystack) {
	t.Helper()
	f := startPaystack(t)
	vars := map[string]string{"TUMA_PAYMENT_PROVIDER": "paystack", "TUMA_PAYSTACK_BASE_URL": f.srv.URL,
		"TUMA_PAYMENT_SECRET_KEY": paystackSecret}
	for k, v := range env {
		vars[k] = v
	}
	return startNode(t, vars), f
}

// webhook posts a charge event signed with secret.
func (n *node) webhook(event string, data map[string]any, secret string) response {
	n.t.Helper()
	body, err := json.Marshal(map[string]any{"event": event, "data": data})
	if err != nil {
		n.t.Fatal(err)
	}
	m := hmac.New(sha512.New, []byte(secret))
	m.Write(body)
	return n.do("POST", "/payments/webhook", string(body), "X-Paystack-Signature", hex.EncodeToString(m.Sum(nil)))
}

func (n *node) topup(a account, body any, headers ...string) response {
	n.t.Helper()
	return n.do("POST", "/wallet/topup", body, append(key(a), headers...)...)
}

// startTopup starts a top-up of kes and returns its reference.
func (n *node) startTopup(a account, kes float64) (ref, authURL string) {
	n.t.Helper()
	r := n.topup(a, map[string]any{"amount_kes": kes, "email": a.Email})
	if r.Status != 200 {
		n.t.Fatalf("topup = %d %s", r.Status, r.Body)
	}
	m := r.json(n.t)
	ref, _ = m["reference"].(string)
	authURL, _ = m["authorization_url"].(string)
	if !strings.HasPrefix(ref, "TUMA-") || authURL == "" || m["access_code"] == "" || m["message"] == "" {
		n.t.Fatalf("topup answer %v", m)
	}
	return ref, authURL
}

func (n *node) callback(ref string) string {
	n.t.Helper()
	resp := n.noRedirect("/wallet/callback?trxref=" + url.QueryEscape(ref) + "&reference=" + url.QueryEscape(ref))
	if resp.StatusCode != 303 {
		n.t.Fatalf("callback = %d; want 303", resp.StatusCode)
	}
	return resp.Header.Get("Location")
}

func (n *node) sqlString(q string, args ...any) string {
	n.t.Helper()
	conn, err := pgx.Connect(context.Background(), n.dbURL)
	if err != nil {
		n.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var v string
	if err := conn.QueryRow(context.Background(), q, args...).Scan(&v); err != nil {
		n.t.Fatalf("%s: %v", q, err)
	}
	return v
}

// assertCredited checks the account holds want KES in all, and the reference one topup entry.
func (n *node) assertCredited(a account, ref string, want float64) {
	n.t.Helper()
	if b := n.balance(a); b != want {
		n.t.Errorf("balance %v; want %v", b, want)
	}
	if c := n.sqlInt(`SELECT count(*) FROM wallet_transactions WHERE reference = $1`, ref); c != 1 {
		n.t.Errorf("%d ledger entries for %s; want 1", c, ref)
	}
	if s := n.sqlString(`SELECT status FROM payments WHERE reference = $1`, ref); s != "paid" {
		n.t.Errorf("payment %s is %s; want paid", ref, s)
	}
}

func TestTopupValidation(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("valid@example.com")
	for _, c := range []struct {
		body  string
		field string
	}{
		{`{"amount_kes": 49.99}`, "amount_kes"},
		{`{"amount_kes": 1000000.01}`, "amount_kes"},
		{`{"amount_kes": "500"}`, "amount_kes"},
		{`{"amount_kes": 50.001}`, "amount_kes"},
		{`{}`, "amount_kes"},
		{`{"amount_kes": 500, "email": "not-an-email"}`, "email"},
	} {
		p := n.topup(a, c.body).problem(t, 422, "validation_failed")
		if errs, _ := p["errors"].([]any); len(errs) == 0 || errs[0].(map[string]any)["field"] != c.field {
			t.Errorf("%s: errors %v; want %s named", c.body, p["errors"], c.field)
		}
	}
	n.topup(a, `{"amount_kes": 500`).problem(t, 400, "malformed_json")
	n.do("POST", "/wallet/topup", `{"amount_kes": 500}`).problem(t, 401, "unauthenticated")
	if c := n.sqlInt(`SELECT count(*) FROM payments`); c != 0 {
		t.Errorf("%d payments stored by invalid requests", c)
	}
	// The email may be left out: the account's is used.
	ref, _ := n.startTopup(a, 50)
	if e := n.sqlString(`SELECT email FROM payments WHERE reference = $1`, ref); e != a.Email {
		t.Errorf("payment email %q; want %q", e, a.Email)
	}
}

func TestSandboxCheckoutPay(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("sandbox@example.com")
	ref, authURL := n.startTopup(a, 1500)
	if !strings.HasPrefix(authURL, n.base+"/checkout/") {
		t.Fatalf("authorization_url %q; want this node's /checkout page", authURL)
	}
	page := n.do("GET", strings.TrimPrefix(authURL, n.base), nil)
	if page.Status != 200 || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") ||
		!bytes.Contains(page.Body, []byte("KES 1,500.00")) || !bytes.Contains(page.Body, []byte(ref)) ||
		!bytes.Contains(page.Body, []byte(`value="pay"`)) || !bytes.Contains(page.Body, []byte(`value="cancel"`)) {
		t.Fatalf("checkout page = %d %s", page.Status, page.Body)
	}
	// Pay, as the page's form does (no JavaScript).
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(authURL, url.Values{"action": {"pay"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back := resp.Header.Get("Location")
	if resp.StatusCode != 303 || !strings.HasPrefix(back, n.base+"/wallet/callback?") || !strings.Contains(back, "reference="+ref) {
		t.Fatalf("pay = %d → %q; want 303 to /wallet/callback?reference=", resp.StatusCode, back)
	}
	loc := n.noRedirect(strings.TrimPrefix(back, n.base)).Header.Get("Location")
	if !strings.HasPrefix(loc, n.base+"/app/?") || !strings.Contains(loc, "topup=success") {
		t.Fatalf("callback → %q; want the dashboard with topup=success", loc)
	}
	n.assertCredited(a, ref, 1500)
	// The sandbox's signed webhook arrives on its own too, and credits nothing more.
	deadline := time.Now().Add(10 * time.Second)
	for n.sqlInt(`SELECT count(*) FROM payment_webhooks WHERE reference = $1`, ref) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the sandbox's webhook never arrived")
		}
		time.Sleep(20 * time.Millisecond)
	}
	n.assertCredited(a, ref, 1500)
	notes := 0
	for _, x := range n.do("GET", "/notifications", nil, key(a)...).json2(t) {
		if m := x.(map[string]any); m["type"] == "topup_success" {
			notes++
			if !strings.Contains(m["title"].(string), "1,500.00") {
				t.Errorf("notification %v does not name the amount", m)
			}
		}
	}
	if notes != 1 {
		t.Errorf("%d topup_success notifications; want 1", notes)
	}
	// The page now says it is paid, and paying again changes nothing.
	if p := n.do("GET", strings.TrimPrefix(authURL, n.base), nil); !bytes.Contains(p.Body, []byte("Payment received")) ||
		bytes.Contains(p.Body, []byte(`value="pay"`)) {
		t.Errorf("paid checkout page offers to pay again: %s", p.Body)
	}
	resp, err = c.PostForm(authURL, url.Values{"action": {"pay"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	n.callback(ref)
	n.assertCredited(a, ref, 1500)
	if r := n.do("GET", "/checkout/nosuchcode", nil); r.Status != 404 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		t.Errorf("unknown checkout = %d %s", r.Status, r.Header.Get("Content-Type"))
	}
}

func TestSandboxCheckoutCancel(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("cancel@example.com")
	ref, authURL := n.startTopup(a, 500)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(authURL, url.Values{"action": {"cancel"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back := resp.Header.Get("Location")
	if resp.StatusCode != 303 || !strings.Contains(back, "/wallet/callback?") {
		t.Fatalf("cancel = %d → %q", resp.StatusCode, back)
	}
	loc := n.noRedirect(strings.TrimPrefix(back, n.base)).Header.Get("Location")
	if !strings.Contains(loc, "topup=failed") || !strings.Contains(loc, "reason=cancelled") {
		t.Errorf("callback after cancel → %q; want topup=failed, reason=cancelled", loc)
	}
	if b := n.balance(a); b != 0 {
		t.Errorf("balance %v after a cancelled top-up", b)
	}
	if s := n.sqlString(`SELECT status FROM payments WHERE reference = $1`, ref); s != "abandoned" {
		t.Errorf("payment is %s; want abandoned", s)
	}
	if c := n.sqlInt(`SELECT count(*) FROM wallet_transactions WHERE reference = $1`, ref); c != 0 {
		t.Errorf("%d ledger entries for a cancelled top-up", c)
	}
	if r := n.do("POST", strings.TrimPrefix(authURL, n.base), "action=steal", "Content-Type", "application/x-www-form-urlencoded"); r.Status != 400 {
		t.Errorf("unknown action = %d", r.Status)
	}
}

func TestPaystackConfirmationsCreditOnce(t *testing.T) {
	n, f := paystackNode(t, nil)
	a := n.register("orders@example.com")
	total := 0.0

	// Webhook first, then the payer's return.
	ref, authURL := n.startTopup(a, 500)
	if !strings.HasPrefix(authURL, "https://checkout.paystack.test/") {
		t.Fatalf("authorization_url %q is not the provider's", authURL)
	}
	data := f.settle(ref, nil)
	if r := n.webhook("charge.success", data, paystackSecret); r.Status != 200 {
		t.Fatalf("webhook = %d %s", r.Status, r.Body)
	}
	total += 500
	n.assertCredited(a, ref, total)
	if loc := n.callback(ref); !strings.Contains(loc, "topup=success") {
		t.Errorf("callback after webhook → %q", loc)
	}
	n.assertCredited(a, ref, total)

	// The payer's return first, then the webhook.
	ref, _ = n.startTopup(a, 750.25)
	data = f.settle(ref, nil)
	if loc := n.callback(ref); !strings.Contains(loc, "topup=success") {
		t.Errorf("callback → %q", loc)
	}
	total += 750.25
	n.assertCredited(a, ref, total)
	if r := n.webhook("charge.success", data, paystackSecret); r.Status != 200 {
		t.Fatalf("webhook = %d %s", r.Status, r.Body)
	}
	n.assertCredited(a, ref, total)

	// The same webhook five times at once.
	ref, _ = n.startTopup(a, 1000)
	data = f.settle(ref, nil)
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if r := n.webhook("charge.success", data, paystackSecret); r.Status != 200 {
				t.Errorf("webhook = %d %s", r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	total += 1000
	n.assertCredited(a, ref, total)
	if c := n.sqlInt(`SELECT count(*) FROM payment_webhooks WHERE reference = $1`, ref); c != 5 {
		t.Errorf("%d webhooks recorded; want all 5", c)
	}

	// A return before the payment went through credits nothing, and says so.
	ref, _ = n.startTopup(a, 60)
	if loc := n.callback(ref); !strings.Contains(loc, "topup=failed") {
		t.Errorf("callback of an unpaid checkout → %q", loc)
	}
	if b := n.balance(a); b != total {
		t.Errorf("balance %v; want %v", b, total)
	}
}

func TestPaystackWebhookRefusals(t *testing.T) {
	n, f := paystackNode(t, nil)
	a := n.register("refuse@example.com")

	ref, _ := n.startTopup(a, 500)
	data := f.settle(ref, nil)
	n.webhook("charge.success", data, "sk_test_wrong").problem(t, 401, "invalid_signature")
	n.do("POST", "/payments/webhook", `{"event":"charge.success","data":{"reference":"`+ref+`"}}`).problem(t, 401, "invalid_signature")
	if b := n.balance(a); b != 0 {
		t.Fatalf("balance %v after forged webhooks", b)
	}
	if c := n.sqlInt(`SELECT count(*) FROM payment_webhooks`); c != 0 {
		t.Errorf("%d forged webhooks recorded", c)
	}

	// Paid less than we priced: not credited, and logged.
	ref, _ = n.startTopup(a, 500)
	data = f.settle(ref, map[string]any{"amount": 49_900, "requested_amount": 49_900})
	if r := n.webhook("charge.success", data, paystackSecret); r.Status != 200 || r.json(t)["status"] != "failed" {
		t.Errorf("short payment webhook = %d %s", r.Status, r.Body)
	}
	// Paid in another currency: not credited, and logged.
	ref2, _ := n.startTopup(a, 500)
	data = f.settle(ref2, map[string]any{"currency": "NGN"})
	if r := n.webhook("charge.success", data, paystackSecret); r.Status != 200 {
		t.Errorf("foreign currency webhook = %d %s", r.Status, r.Body)
	}
	if b := n.balance(a); b != 0 {
		t.Errorf("balance %v after mismatched payments", b)
	}
	for _, r := range []string{ref, ref2} {
		if s := n.sqlString(`SELECT status || ':' || failure_reason FROM payments WHERE reference = $1`, r); !strings.HasPrefix(s, "failed:") {
			t.Errorf("payment %s is %s; want failed", r, s)
		}
	}
	logs := n.logs.String()
	for _, want := range []string{"amount_mismatch", "currency_mismatch", "reference=" + ref, "reference=" + ref2} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log does not mention %s", want)
		}
	}

	// Unknown references and other events are acknowledged and ignored.
	if r := n.webhook("charge.success", map[string]any{"reference": "TUMA-NOBODYSREFERENCE", "amount": 100, "currency": "KES"},
		paystackSecret); r.Status != 200 || r.json(t)["status"] != "ignored" {
		t.Errorf("unknown reference = %d %s", r.Status, r.Body)
	}
	if r := n.webhook("transfer.success", map[string]any{"reference": ref}, paystackSecret); r.Status != 200 || r.json(t)["status"] != "ignored" {
		t.Errorf("other event = %d %s", r.Status, r.Body)
	}
	// A signed body that is not an event.
	m := hmac.New(sha512.New, []byte(paystackSecret))
	m.Write([]byte(`{"event":`))
	n.do("POST", "/payments/webhook", `{"event":`, "X-Paystack-Signature", hex.EncodeToString(m.Sum(nil))).problem(t, 400, "malformed_webhook")
	if b := n.balance(a); b != 0 {
		t.Errorf("balance %v", b)
	}
}

func TestProviderDownAtInitialize(t *testing.T) {
	n, f := paystackNode(t, nil)
	a := n.register("down@example.com")
	f.down.Store(true)
	p := n.topup(a, map[string]any{"amount_kes": 500}, "Idempotency-Key", "topup-1").problem(t, 503, "payment_provider_unavailable")
	if p["detail"] == "" {
		t.Error("no detail")
	}
	if c := n.sqlInt(`SELECT count(*) FROM payments WHERE status IN ('pending', 'abandoned')`); c != 0 {
		t.Errorf("%d payments left open", c)
	}
	if s := n.sqlString(`SELECT status || ':' || failure_reason FROM payments`); s != "failed:provider_unavailable" {
		t.Errorf("the failed attempt is recorded as %q", s)
	}
	// The provider is back: the same key may be used again, and starts a fresh checkout.
	f.down.Store(false)
	r := n.topup(a, map[string]any{"amount_kes": 500}, "Idempotency-Key", "topup-1")
	if r.Status != 200 {
		t.Fatalf("retry = %d %s", r.Status, r.Body)
	}
	if c := n.sqlInt(`SELECT count(*) FROM payments WHERE status = 'pending'`); c != 1 {
		t.Errorf("%d pending payments after the retry; want 1", c)
	}
}

func TestTopupIdempotencyKey(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("idem@example.com")
	first := n.topup(a, map[string]any{"amount_kes": 250}, "Idempotency-Key", "k-250")
	again := n.topup(a, map[string]any{"amount_kes": 250}, "Idempotency-Key", "k-250")
	if first.Status != 200 || again.Status != 200 || !bytes.Equal(first.Body, again.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay = %d %s (%q); first %d %s", again.Status, again.Body, again.Header.Get("Idempotent-Replayed"), first.Status, first.Body)
	}
	n.topup(a, map[string]any{"amount_kes": 300}, "Idempotency-Key", "k-250").problem(t, 422, "idempotency_key_reused")
	if c := n.sqlInt(`SELECT count(*) FROM payments`); c != 1 {
		t.Errorf("%d payments; want 1", c)
	}
}

func TestLowBalanceNotifiesOncePerCrossing(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_LOW_BALANCE_KES": "10", "TUMA_SIM_OUTCOMES": "delivered=1"})
	a := n.register("thrifty@example.com")
	n.credit(a, "12")
	sendN := func(count, offset int) {
		t.Helper()
		if r := n.send(a, map[string]any{"recipients": numbers(count, offset), "message": "hi"}); r.Status != 202 {
			t.Fatalf("send = %d %s", r.Status, r.Body)
		}
	}
	lowNotes := func() int64 {
		return n.sqlInt(`SELECT count(*) FROM notifications WHERE account_id = $1 AND type = 'low_balance'`, a.ID)
	}
	waitNotes := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for lowNotes() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%d low_balance notifications; want %d", lowNotes(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	sendN(3, 0) // 12.00 → 10.50: not under 10
	sendN(2, 3) // → 9.50: crossed
	waitNotes(1)
	sendN(1, 5) // → 9.00: still under, no second notification
	n.credit(a, "5")
	sendN(10, 6) // 14.00 → 9.00: crossed again after recovering
	waitNotes(2)
	n.stop() // every notification the engine had in hand is written
	if c := lowNotes(); c != 2 {
		t.Errorf("%d low_balance notifications; want 2 (one per crossing)", c)
	}
	title := n.sqlString(`SELECT title FROM notifications WHERE account_id = $1 AND type = 'low_balance' ORDER BY id LIMIT 1`, a.ID)
	if title != "Low balance: KES 9.50 left" {
		t.Errorf("title %q", title)
	}
}
