package app_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func (n *node) quote(a account, body any, headers ...string) response {
	n.t.Helper()
	return n.do("POST", "/sms/quote", body, append(key(a), headers...)...)
}

// quoteOf is a 200 quote's body (or fails the test).
func (n *node) quoteOf(a account, body any) map[string]any {
	n.t.Helper()
	r := n.quote(a, body)
	if r.Status != 200 {
		n.t.Fatalf("quote = %d %s", r.Status, r.Body)
	}
	return r.json(n.t)
}

// A quote lists what a send would refuse, counts what it would send by network, shows the
// text as sent (prefix included) and prices it against the balance, writing nothing.
func TestQuote(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("quote@example.com") // company "Acme Ltd", no sender ID: the shared sender with the prefix
	n.credit(a, "10")
	q := n.quoteOf(a, map[string]any{"message": "hi", "recipients": []string{
		"0712345678", "12345", "+254712345678", "0733123456", "0747123456", "0770000001", "254 733 123 456"}})
	inv := q["invalid_recipients"].([]any)
	if len(inv) != 2 || inv[0].(map[string]any)["index"] != 1.0 || inv[0].(map[string]any)["value"] != "12345" ||
		inv[0].(map[string]any)["reason"] != "not a valid Kenyan mobile number" ||
		inv[1].(map[string]any)["index"] != 4.0 || inv[1].(map[string]any)["value"] != "0747123456" ||
		!strings.Contains(inv[1].(map[string]any)["reason"].(string), "network Tuma does not reach") {
		t.Errorf("invalid_recipients = %v; want 12345 at 1 and the Equitel number at 4", inv)
	}
	nets := q["by_network"].(map[string]any)
	if q["recipients_count"] != 3.0 || q["duplicates_removed"] != 2.0 || q["suppressed_count"] != 0.0 ||
		nets["safaricom"] != 1.0 || nets["airtel"] != 1.0 || nets["telkom"] != 1.0 {
		t.Errorf("quote counts = %v", q)
	}
	if q["message_as_sent"] != "Acme Ltd: hi" || q["encoding"] != "gsm7" || q["characters"] != 12.0 || q["parts"] != 1.0 ||
		q["cost_kes"] != 1.5 || q["balance_kes"] != 10.0 || q["sufficient"] != true || q["suggestion"] != nil {
		t.Errorf("quote = %v; want Acme Ltd: hi, 1 GSM-7 part, 1.50 of 10.00", q)
	}

	// Curly quotes and an ellipsis make the text UCS-2: the suggestion replaces them, and a
	// send of its message costs what it says.
	curly := "It’s “ready”… " + strings.Repeat("x", 110) // 124 characters, 134 with the prefix: 2 UCS-2 parts
	three := []string{"0712000001", "0712000002", "0712000003"}
	q = n.quoteOf(a, map[string]any{"recipients": three, "message": curly})
	s, _ := q["suggestion"].(map[string]any)
	if q["encoding"] != "ucs2" || q["parts"] != 2.0 || q["cost_kes"] != 3.0 || s == nil {
		t.Fatalf("quote of curly quotes = %v; want ucs2, 2 parts, 3.00, a suggestion", q)
	}
	plain := `It's "ready"... ` + strings.Repeat("x", 110)
	reps := s["replacements"].([]any)
	if s["message"] != plain || s["encoding"] != "gsm7" || s["parts"] != 1.0 || s["cost_kes"] != 1.5 || len(reps) != 4 ||
		reps[0].(map[string]any)["from"] != "’" || reps[0].(map[string]any)["to"] != "'" || reps[0].(map[string]any)["count"] != 1.0 ||
		reps[3].(map[string]any)["from"] != "…" || reps[3].(map[string]any)["to"] != "..." {
		t.Errorf("suggestion = %v; want %q, 1 GSM-7 part, 1.50, ’ “ ” … replaced", s, plain)
	}
	// No suggestion a send would refuse: 917 characters and an ellipsis become 920, and
	// invisible characters alone become nothing.
	for _, m := range []string{"…" + strings.Repeat("a", 917), "\u200b\u200b"} {
		if q := n.quoteOf(a, map[string]any{"recipients": three, "message": m}); q["encoding"] != "ucs2" || q["suggestion"] != nil {
			t.Errorf("quote of %.12q… = %v; want ucs2 and no suggestion", m, q)
		}
	}
	if jobs := n.sqlInt(`SELECT count(*) FROM jobs`); jobs != 0 || n.balance(a) != 10 {
		t.Fatalf("quotes wrote %d jobs, balance %v; want nothing written", jobs, n.balance(a))
	}
	r := n.send(a, map[string]any{"recipients": three, "message": s["message"]})
	if r.Status != 202 || r.json(t)["cost_kes"] != 1.5 || r.json(t)["sms_count"] != 3.0 {
		t.Errorf("send of the suggestion = %d %s; want 1.50 for 3 SMS", r.Status, r.Body)
	}

	// More than the balance: the quote says so, where the send is 402.
	q = n.quoteOf(a, map[string]any{"recipients": numbers(30, 100), "message": "hi"})
	if q["cost_kes"] != 15.0 || q["balance_kes"] != 8.5 || q["sufficient"] != false {
		t.Errorf("quote over the balance = %v; want 15.00 against 8.50, insufficient", q)
	}
	// A person types the message first: no recipients is a quote of nothing.
	for _, body := range []any{map[string]any{"recipients": []string{}, "message": "hi"}, `{"message":"hi"}`} {
		if q := n.quoteOf(a, body); q["recipients_count"] != 0.0 || q["cost_kes"] != 0.0 || q["parts"] != 1.0 ||
			q["message_as_sent"] != "Acme Ltd: hi" || len(q["invalid_recipients"].([]any)) != 0 {
			t.Errorf("quote without recipients = %v", q)
		}
	}
	// It takes no Idempotency-Key: the same key with other bodies quotes each.
	for _, msg := range []string{"one", "two"} {
		if r := n.quote(a, map[string]any{"recipients": three, "message": msg}, "Idempotency-Key", "k-1"); r.Status != 200 ||
			r.Header.Get("Idempotent-Replayed") != "" {
			t.Errorf("quote with an Idempotency-Key = %d %s", r.Status, r.Body)
		}
	}

	// Refused as a send refuses them.
	n.quote(a, map[string]any{"recipients": three, "message": "hi", "sender_id": "NOTMINE"}).problem(t, 422, "sender_not_approved")
	n.quote(a, map[string]any{"recipients": three}).problem(t, 422, "validation_failed")
	n.quote(a, `{"recipients": "0712345678", "message": "hi"}`).problem(t, 422, "validation_failed")
	n.quote(a, `{"recipients": ["0712345678"], "message": 5}`).problem(t, 422, "validation_failed")
	n.quote(a, `{"recipients": ["0712345678"], "message": "hi"`).problem(t, 400, "malformed_json")
	n.quote(a, map[string]any{"recipients": numbers(10_001, 0), "message": "hi"}).problem(t, 422, "validation_failed")
	if p := n.quote(a, map[string]any{"recipients": three, "message": "hi", "reference": strings.Repeat("r", 65)}).
		problem(t, 422, "validation_failed"); p["errors"].([]any)[0].(map[string]any)["field"] != "reference" {
		t.Errorf("quote with a 65-character reference = %v; want the reference named", p)
	}
	r = n.do("POST", "/sms/quote", "message=hi", append(key(a), "Content-Type", "text/plain")...)
	r.problem(t, 415, "unsupported_media_type")
	n.do("POST", "/sms/quote", map[string]any{"recipients": three, "message": "hi"}).problem(t, 401, "unauthenticated")
	if jobs := n.sqlInt(`SELECT count(*) FROM jobs`); jobs != 1 {
		t.Errorf("%d jobs; want only the one send", jobs)
	}
}

// An explicit sender_id is resolved as a send resolves it: no prefix through an approved one.
func TestQuoteWithSenderID(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("quote-sender@example.com")
	n.approveDefaultSender(a, "ACME", "all")
	q := n.quoteOf(a, map[string]any{"recipients": []string{"0712345678"}, "message": "hi", "sender_id": "ACME"})
	if q["message_as_sent"] != "hi" || q["cost_kes"] != 0.5 || q["balance_kes"] != 0.0 || q["sufficient"] != false {
		t.Errorf("quote through ACME = %v; want the text unprefixed, 0.50 against 0.00", q)
	}
}

// The quote counts against the account's rate limit, as every authenticated call does.
func TestQuoteIsRateLimited(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_RATE_LIMIT_RPS": "1", "TUMA_RATE_LIMIT_BURST": "2"})
	a := n.register("quote-limited@example.com")
	body := map[string]any{"recipients": []string{"0712345678"}, "message": "hi"}
	for range 2 {
		if r := n.quote(a, body); r.Status != 200 {
			t.Fatalf("within the burst = %d %s", r.Status, r.Body)
		}
	}
	n.quote(a, body).problem(t, 429, "rate_limited")
}

// Issue 31, defect 6: 918 characters is the limit of the tenant's own text. Through the shared
// sender the company prefix comes on top and is billed: 918 GSM-7 characters from Acme Ltd are
// 928 as sent, 7 parts. The 202 says so in sms_count (and again on a replay), the quote in
// parts and message_as_sent, and 919 characters are refused saying how the limit counts.
func TestMessageLimitIsTheTenantsText(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("limit918@example.com")
	n.credit(a, "100")
	text := strings.Repeat("a", 918)
	body := map[string]any{"recipients": []string{"0712000001", "0733000001"}, "message": text}

	q := n.quoteOf(a, body)
	if q["parts"] != 7.0 || !strings.HasPrefix(q["message_as_sent"].(string), "Acme Ltd: ") || q["characters"] != 928.0 ||
		q["cost_kes"] != 7.0 {
		t.Errorf("quote of 918 characters = parts %v, characters %v, cost %v, as sent %.20q…; want 7, 928, 7.00, Acme Ltd: …",
			q["parts"], q["characters"], q["cost_kes"], q["message_as_sent"])
	}
	r := n.send(a, body, "Idempotency-Key", "limit-918")
	job := r.json(t)
	if r.Status != 202 || job["sms_count"] != 14.0 || job["cost_kes"] != 7.0 || job["recipients_count"] != 2.0 {
		t.Fatalf("send of 918 characters = %d %s; want 202, sms_count 14 (7 × 2), 7.00", r.Status, r.Body)
	}
	again := n.send(a, body, "Idempotency-Key", "limit-918")
	if again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(r.Body) {
		t.Errorf("replay = %s; want the first body %s", again.Body, r.Body)
	}
	for _, m := range n.do("GET", "/sms/messages?job_id="+job["job_id"].(string), nil, key(a)...).json(t)["data"].([]any) {
		if m := m.(map[string]any); m["parts"] != 7.0 || m["message"] != "Acme Ltd: "+text || m["cost_kes"] != 3.5 {
			t.Errorf("message = parts %v, cost %v; want 7 parts, 3.50, the prefixed text", m["parts"], m["cost_kes"])
		}
	}
	if units := n.sqlInt(`SELECT sms_count FROM wallet_transactions WHERE job_id = $1 AND type = 'debit'`, job["job_id"]); units != 14 {
		t.Errorf("ledger debit sms_count = %d; want 14", units)
	}
	for _, path := range []string{"/sms/send", "/sms/quote"} {
		p := n.do("POST", path, map[string]any{"recipients": []string{"0712000001"}, "message": text + "a"}, key(a)...).
			problem(t, 422, "validation_failed")
		fe := p["errors"].([]any)[0].(map[string]any)
		if fe["field"] != "message" || !strings.HasPrefix(fe["message"].(string), "must be at most 918 characters (your text; "+
			"through the shared sender ID the company prefix is added on top and counted in parts and cost)") {
			t.Errorf("%s of 919 characters: %v", path, fe)
		}
	}

	// An internal account pays nothing, and its sends still count the parts they went as.
	n.do("PUT", "/admin/accounts/"+a.ID+"/pricing", map[string]any{"tier": nil, "is_internal": true}, adminAuth()...)
	r = n.send(a, body)
	if job := r.json(t); job["sms_count"] != 14.0 || job["cost_kes"] != 0.0 ||
		n.sqlInt(`SELECT sms_units FROM jobs WHERE id = $1`, job["job_id"]) != 14 {
		t.Errorf("internal send = %s; want sms_count 14 (jobs.sms_units too), free", r.Body)
	}
}

// quoteSendRound is one quote of a body, then its send, as the client saw them.
type quoteSendRound struct {
	quote, job map[string]any
	stable     bool // nothing changed the account between the quote and the send
}

// What a quote says is what a send of the same body stores and debits: its cost, its parts
// and its text as sent equal the 202's, the stored messages' and the ledger's, while the
// company name (so the prefix: shorter, longer, UCS-2) and the account's pricing change under
// it. A change is only allowed between them when one ran between the quote and the send; the
// test sees every round that no change overlapped agree exactly, and every round consistent.
func TestQuoteEqualsSend(t *testing.T) {
	n := startNode(t, withEnv(fastSims, "TUMA_RATE_LIMIT_RPS", "0"))
	a := n.register("quote-equals-send@example.com")
	n.credit(a, "5000")
	// 150 GSM-7 characters: "Co: " keeps them in 1 part, the long name makes 2, "Zoë Ltd: " 3 (ë needs UCS-2).
	text := strings.Repeat("b", 150)
	companies := []string{"Co", "Anything But A Short Company Name Ltd", "Zoë Ltd"}
	pricings := []map[string]any{{"tier": "enterprise", "is_internal": false}, {"tier": nil, "is_internal": true},
		{"tier": "basic", "is_internal": false}, {"tier": nil, "is_internal": false}}

	var changes atomic.Int64 // odd while a change is in flight (a sequence lock)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			changes.Add(1)
			var r response
			if i%2 == 0 {
				r = n.do("PATCH", "/auth/profile", map[string]any{"company_name": companies[i/2%len(companies)]}, key(a)...)
			} else {
				r = n.do("PUT", "/admin/accounts/"+a.ID+"/pricing", pricings[i/2%len(pricings)], adminAuth()...)
			}
			changes.Add(1)
			if r.Status != 200 {
				t.Errorf("change %d = %d %s", i, r.Status, r.Body)
				return
			}
			// Bursts of changes, then a pause: rounds overlap changes, and some run alone.
			pause := time.Duration(rand.IntN(5)) * time.Millisecond
			if i%4 == 3 {
				pause = time.Duration(50+rand.IntN(100)) * time.Millisecond
			}
			time.Sleep(pause)
		}
	})
	body := map[string]any{"recipients": []string{"0712000001", "0733000001", "0770000001"}, "message": text}
	var rounds []quoteSendRound
	stable := 0
	seen := map[string]bool{} // the states (text as sent, cost) the stable rounds met
	deadline := time.Now().Add(45 * time.Second)
	for (stable < 8 || len(seen) < 3 || len(rounds) < 20) && time.Now().Before(deadline) {
		before := changes.Load()
		q := n.quoteOf(a, body)
		r := n.send(a, body)
		after := changes.Load()
		if r.Status != 202 {
			t.Fatalf("send = %d %s", r.Status, r.Body)
		}
		round := quoteSendRound{quote: q, job: r.json(t), stable: before == after && before%2 == 0}
		if round.stable {
			stable++
			seen[fmt.Sprint(q["message_as_sent"], q["cost_kes"])] = true
		}
		rounds = append(rounds, round)
	}
	close(stop)
	wg.Wait()
	if stable < 8 || len(seen) < 3 {
		t.Fatalf("%d of %d rounds ran without a change overlapping them, in %d states; want 8 in 3", stable, len(rounds), len(seen))
	}
	t.Logf("%d rounds, %d without a change overlapping them, in %d states", len(rounds), stable, len(seen))
	for i, rd := range rounds {
		n.checkQuoteAgainstSend(t, a, i, rd)
	}
}

// checkQuoteAgainstSend compares a round's 202 with the messages and the ledger entry it
// stored, and, when nothing changed the account in between, with its quote.
func (n *node) checkQuoteAgainstSend(t *testing.T, a account, i int, rd quoteSendRound) {
	t.Helper()
	jobID := rd.job["job_id"].(string)
	msgs := n.do("GET", "/sms/messages?job_id="+jobID, nil, key(a)...).json(t)["data"].([]any)
	parts, cost := 0.0, 0.0
	texts := map[string]bool{}
	for _, m := range msgs {
		m := m.(map[string]any)
		parts += m["parts"].(float64)
		cost += m["cost_kes"].(float64)
		texts[m["message"].(string)] = true
	}
	smsCount, costKES := rd.job["sms_count"].(float64), rd.job["cost_kes"].(float64)
	debit := n.sqlInt(`SELECT amount_cents FROM wallet_transactions WHERE job_id = $1 AND type = 'debit'`, jobID)
	units := n.sqlInt(`SELECT sms_count FROM wallet_transactions WHERE job_id = $1 AND type = 'debit'`, jobID)
	if len(msgs) != 3 || len(texts) != 1 || parts != smsCount || !sameKES(cost, costKES) || float64(units) != smsCount ||
		!sameKES(float64(abs(debit))/100, costKES) {
		t.Errorf("round %d: 202 %v; messages %d, %v parts, %.2f KES, texts %v; ledger %d cents for %d SMS",
			i, rd.job, len(msgs), parts, cost, texts, debit, units)
	}
	if !rd.stable {
		return
	}
	q := rd.quote
	if !sameKES(q["cost_kes"].(float64), costKES) || q["parts"].(float64)*3 != smsCount || !texts[q["message_as_sent"].(string)] ||
		q["recipients_count"] != rd.job["recipients_count"] {
		t.Errorf("round %d: quote cost %v, parts %v, as sent %.30q; send cost %v, sms_count %v, texts %v",
			i, q["cost_kes"], q["parts"], q["message_as_sent"], costKES, smsCount, texts)
	}
}

func sameKES(a, b float64) bool { return int64(a*100+0.5) == int64(b*100+0.5) }

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
