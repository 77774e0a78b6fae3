package app_test

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// pageAll walks a list by cursor and returns the ids it saw, in order.
func (n *node) pageAll(t *testing.T, path string, a account) []string {
	t.Helper()
	var ids []string
	next := path
	for range 1000 {
		r := n.do("GET", next, nil, key(a)...)
		if r.Status != 200 {
			t.Fatalf("GET %s = %d %s", next, r.Status, r.Body)
		}
		m := r.json(t)
		for _, row := range m["data"].([]any) {
			ids = append(ids, row.(map[string]any)["id"].(string))
		}
		c, ok := m["next_cursor"].(string)
		if !ok {
			return ids
		}
		next = path + "&cursor=" + url.QueryEscape(c)
	}
	t.Fatal("the list never ended")
	return nil
}

// Paging the ledger by cursor while refunds are being written sees each row exactly once,
// and every row that existed when paging began.
func TestLedgerCursorSeesEachRowOnceWhileItGrows(t *testing.T) {
	n := startNode(t, withEnv(fastSims, "TUMA_SIM_OUTCOMES", "undeliverable=1", "TUMA_RATE_LIMIT_RPS", "0"))
	a := n.register("ledger-cursor@example.com")
	n.credit(a, "1000")
	send := func(i int) {
		if r := n.send(a, map[string]any{"recipients": numbers(1, i), "message": "fails"}); r.Status != 202 {
			t.Errorf("send = %d %s", r.Status, r.Body)
		}
	}
	for i := range 20 {
		send(i)
	}
	waitFor(t, 20*time.Second, "the first refunds", func() bool {
		return n.sqlInt(`SELECT count(*) FROM wallet_transactions WHERE account_id = $1 AND type = 'refund'`, a.ID) >= 20
	})
	before := n.sqlInt(`SELECT count(*) FROM wallet_transactions WHERE account_id = $1`, a.ID)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // debits and refunds keep arriving while the client pages
		for i := 100; ; i++ {
			select {
			case <-stop:
				return
			default:
				send(i)
			}
		}
	})
	ids := n.pageAll(t, "/wallet/transactions?page_size=3", a)
	close(stop)
	wg.Wait()
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("row %s listed twice while paging by cursor", id)
		}
		seen[id] = true
	}
	if int64(len(ids)) < before {
		t.Fatalf("saw %d rows; want at least the %d that existed when paging began", len(ids), before)
	}
	waitFor(t, 30*time.Second, "every send's refund", func() bool {
		return n.sqlInt(`SELECT count(*) FROM wallet_transactions WHERE account_id = $1 AND type = 'refund'`, a.ID) ==
			n.sqlInt(`SELECT count(*) FROM wallet_transactions WHERE account_id = $1 AND type = 'debit'`, a.ID)
	})
	for _, typ := range []string{"debit", "refund"} {
		ids := n.pageAll(t, "/wallet/transactions?page_size=4&type="+typ, a)
		if want := n.sqlInt(`SELECT count(*) FROM wallet_transactions WHERE account_id = $1 AND type = $2`, a.ID, typ); int64(len(ids)) != want {
			t.Errorf("%s rows by cursor: %d; want %d", typ, len(ids), want)
		}
	}
}

// Cursors cannot be forged, moved to another list, filter or account, or mixed with page;
// malformed query parameters are 400 on every list, well-formed out-of-range ones 422.
func TestListQueryParameters(t *testing.T) {
	n := startNode(t, fastSims)
	a, b := n.register("cursor-a@example.com"), n.register("cursor-b@example.com")
	n.credit(a, "10")
	n.credit(b, "10")
	for i := range 3 {
		n.send(a, map[string]any{"recipients": numbers(1, i), "message": "hi"})
	}
	first := n.do("GET", "/sms/messages?page_size=1", nil, key(a)...).json(t)
	c, ok := first["next_cursor"].(string)
	if !ok || len(first["data"].([]any)) != 1 {
		t.Fatalf("first page %v; want one row and a next_cursor", first)
	}
	ok2 := n.do("GET", "/sms/messages?page_size=1&cursor="+url.QueryEscape(c), nil, key(a)...)
	if ok2.Status != 200 || ok2.json(t)["data"].([]any)[0].(map[string]any)["id"] == first["data"].([]any)[0].(map[string]any)["id"] {
		t.Fatalf("next page = %d %s", ok2.Status, ok2.Body)
	}
	tampered := []byte(c)
	tampered[5] ^= 1
	for _, tc := range []struct {
		who  account
		path string
	}{
		{b, "/sms/messages?cursor=" + url.QueryEscape(c)},                  // another account
		{a, "/sms/messages?status=sent&cursor=" + url.QueryEscape(c)},      // other filters
		{a, "/wallet/transactions?cursor=" + url.QueryEscape(c)},           // another list
		{a, "/sms/messages?cursor=" + url.QueryEscape(string(tampered))},   // altered
		{a, "/sms/messages?cursor=not-a-cursor"},                           // malformed
		{a, "/sms/messages?page=2&cursor=" + url.QueryEscape(c)},           // both
		{a, "/sms/messages?page=abc"}, {a, "/sms/messages?page_size=lots"}, // not integers
		{a, "/sms/messages?job_id=nope"}, {a, "/wallet/transactions?page=x"}, // not a UUID; not an integer
	} {
		n.do("GET", tc.path, nil, key(tc.who)...).problem(t, 400, "malformed_query")
	}
	for _, path := range []string{"/sms/messages?page_size=500", "/sms/messages?page=0", "/sms/messages?status=lost",
		"/wallet/transactions?type=gift", "/wallet/transactions?page_size=0"} {
		n.do("GET", path, nil, key(a)...).problem(t, 422, "validation_failed")
	}
}

// GET /campaigns stays the contract's plain array of all campaigns; with page_size it pages
// by cursor (X-Next-Cursor), and campaigns created while a client pages never make it see
// one twice or miss one that existed when it began.
func TestCampaignListPagesByCursor(t *testing.T) {
	n := startNode(t, fastSims)
	a, b := n.register("campaign-cursor@example.com"), n.register("campaign-cursor-b@example.com")
	n.credit(a, "100")
	g := n.group(a, "Everyone")
	n.contact(a, g, "0712000001", "Jo", "Kamau")
	create := func(name string) string {
		r := n.do("POST", "/campaigns", map[string]any{"name": name, "message": "hello", "group_id": g}, key(a)...)
		if r.Status != 201 {
			t.Fatalf("create campaign = %d %s", r.Status, r.Body)
		}
		return r.json(t)["id"].(string)
	}
	var before []string
	for i := range 5 {
		before = append([]string{create(fmt.Sprint("c", i))}, before...) // newest first
	}
	if all := n.do("GET", "/campaigns", nil, key(a)...).json2(t); len(all) != 5 {
		t.Fatalf("plain list = %d campaigns; want all 5", len(all))
	}
	var seen []string
	path := "/campaigns?page_size=2"
	for page := 0; ; page++ {
		r := n.do("GET", path, nil, key(a)...)
		if r.Status != 200 {
			t.Fatalf("GET %s = %d %s", path, r.Status, r.Body)
		}
		for _, c := range r.json2(t) {
			seen = append(seen, c.(map[string]any)["id"].(string))
		}
		create(fmt.Sprint("during", page)) // the list grows at its head while the client pages
		next := r.Header.Get("X-Next-Cursor")
		if next == "" {
			break
		}
		if page == 0 {
			n.do("GET", "/campaigns?page_size=2&cursor="+url.QueryEscape(next), nil, key(b)...).problem(t, 400, "malformed_query")
		}
		path = "/campaigns?page_size=2&cursor=" + url.QueryEscape(next)
	}
	if strings.Join(seen, ",") != strings.Join(before, ",") {
		t.Fatalf("paged %v; want exactly the campaigns that existed, newest first: %v", seen, before)
	}
	n.do("GET", "/campaigns?page_size=2&page=2", nil, key(a)...).problem(t, 400, "malformed_query")
	n.do("GET", "/campaigns?page_size=500", nil, key(a)...).problem(t, 422, "validation_failed")
}
