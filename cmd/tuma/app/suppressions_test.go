package app_test

import (
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// noRateLimit lets a test make many calls in a row without 429s.
var noRateLimit = map[string]string{"TUMA_RATE_LIMIT_RPS": "0"}

// suppressed counts an account's stored suppressions.
func (n *node) suppressed(a account) int64 {
	n.t.Helper()
	return n.sqlInt(`SELECT count(*) FROM suppressions WHERE account_id = $1`, a.ID)
}

// namesField fails the test unless the 422 problem p names field.
func namesField(t *testing.T, p map[string]any, field string) {
	t.Helper()
	if !strings.Contains(string(mustJSON(t, p["errors"])), `"field":"`+field+`"`) {
		t.Errorf("errors %v do not name %s", p["errors"], field)
	}
}

// A number is suppressed once in whichever accepted form it comes: the first add is a 201,
// the others a 200 with the suppression as it was. Bad input is a 422 naming the field and
// stores nothing.
func TestSuppressionAdd(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("suppress@example.com")
	access, _ := n.login(a)

	r := n.do("POST", "/suppressions", map[string]any{"phone": "0712345678", "reason": "  asked by phone  "}, key(a)...)
	if r.Status != 201 {
		t.Fatalf("add = %d %s", r.Status, r.Body)
	}
	first := r.json(t)
	if first["phone"] != "+254712345678" || first["source"] != "api" || first["reason"] != "asked by phone" || first["created_at"] == nil {
		t.Errorf("added %v", first)
	}
	for _, c := range []struct {
		phone string
		auth  []string
	}{{"254712345678", key(a)}, {"+254 712 345 678", bearer(access)}} {
		r := n.do("POST", "/suppressions", map[string]any{"phone": c.phone, "reason": "another reason"}, c.auth...)
		if r.Status != 200 || !reflect.DeepEqual(r.json(t), first) {
			t.Errorf("add of %q again = %d %s; want 200 %v", c.phone, r.Status, r.Body, first)
		}
	}
	if got := n.suppressed(a); got != 1 {
		t.Fatalf("%d suppressions stored; want 1", got)
	}

	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"phone": "12345"}, "phone"},
		{map[string]any{"phone": "0812345678"}, "phone"},
		{map[string]any{"phone": "+1 202 555 0100"}, "phone"},
		{map[string]any{"phone": ""}, "phone"},
		{map[string]any{"reason": "no phone"}, "phone"},
		{map[string]any{"phone": 712345678}, "phone"},
		{map[string]any{"phone": "0722000000", "reason": strings.Repeat("é", 201)}, "reason"},
		{map[string]any{"phone": "0722000000", "reason": 7}, "reason"},
	} {
		p := n.do("POST", "/suppressions", c.body, key(a)...).problem(t, 422, "validation_failed")
		namesField(t, p, c.field)
	}
	n.do("POST", "/suppressions", "{", key(a)...).problem(t, 400, "malformed_json")
	n.do("POST", "/suppressions", map[string]any{"phone": "0722000000"}).problem(t, 401, "unauthenticated")
	if got := n.suppressed(a); got != 1 {
		t.Errorf("%d suppressions stored after the refusals; want 1", got)
	}

	// A reason of exactly 200 characters is taken; a number of a network Tuma does not reach
	// is still a Kenyan number, and can be suppressed.
	if r := n.do("POST", "/suppressions", map[string]any{"phone": "0722000000", "reason": strings.Repeat("é", 200)}, key(a)...); r.Status != 201 {
		t.Errorf("reason of 200 characters = %d %s", r.Status, r.Body)
	}
	r = n.do("POST", "/suppressions", map[string]any{"phone": "0744123456"}, key(a)...)
	if r.Status != 201 || r.json(t)["phone"] != "+254744123456" || r.json(t)["reason"] != "" {
		t.Errorf("number of an unsupported network = %d %s", r.Status, r.Body)
	}
}

// pageSuppressions walks the list by cursor and returns the phones in order.
func (n *node) pageSuppressions(t *testing.T, query string, a account) []string {
	t.Helper()
	var phones []string
	next := "/suppressions?" + query
	for range 100 {
		r := n.do("GET", next, nil, key(a)...)
		if r.Status != 200 {
			t.Fatalf("GET %s = %d %s", next, r.Status, r.Body)
		}
		m := r.json(t)
		for _, row := range m["data"].([]any) {
			phones = append(phones, row.(map[string]any)["phone"].(string))
		}
		c, ok := m["next_cursor"].(string)
		if !ok {
			return phones
		}
		next = "/suppressions?" + query + "&cursor=" + url.QueryEscape(c)
	}
	t.Fatal("the list never ended")
	return nil
}

// The list runs newest first; search selects the numbers that begin with the digits given
// in any accepted form; paging by cursor shows each one exactly once.
func TestSuppressionList(t *testing.T) {
	n := startNode(t, noRateLimit)
	a := n.register("suppress-list@example.com")
	if r := n.do("GET", "/suppressions", nil, key(a)...); r.Status != 200 || string(r.Body) != `{"data":[],"next_cursor":null}` {
		t.Errorf("empty list = %d %s", r.Status, r.Body)
	}
	var want []string // 0712 numbers, newest first
	for i := range 25 {
		phone := fmt.Sprintf("+254712000%03d", 100+i) // rising, so newest first is also highest first
		if r := n.do("POST", "/suppressions", map[string]any{"phone": phone}, key(a)...); r.Status != 201 {
			t.Fatalf("add %s = %d %s", phone, r.Status, r.Body)
		}
		want = append([]string{phone}, want...)
	}
	others := []string{"+254733000001", "+254110000001", "+254722000001"}
	for _, phone := range others {
		if r := n.do("POST", "/suppressions", map[string]any{"phone": phone}, key(a)...); r.Status != 201 {
			t.Fatalf("add %s = %d %s", phone, r.Status, r.Body)
		}
	}

	all := n.pageSuppressions(t, "page_size=10", a)
	wantAll := append(slices.Clone(others), want...)
	slices.Reverse(wantAll[:len(others)])
	if !slices.Equal(all, wantAll) {
		t.Errorf("whole list, newest first, by pages of 10:\n got %v\nwant %v", all, wantAll)
	}
	for _, search := range []string{"0712", "254712", "+254 712", "712", "0712 000"} {
		got := n.pageSuppressions(t, "page_size=10&search="+url.QueryEscape(search), a)
		if !slices.Equal(got, want) {
			t.Errorf("search %q:\n got %v\nwant %v", search, got, want)
		}
	}
	if got := n.pageSuppressions(t, "search=0712000105", a); !slices.Equal(got, []string{"+254712000105"}) {
		t.Errorf("search of a whole number = %v", got)
	}
	if got := n.pageSuppressions(t, "search=011", a); !slices.Equal(got, []string{"+254110000001"}) {
		t.Errorf("search 011 = %v", got)
	}
	if got := n.pageSuppressions(t, "search=0799", a); len(got) != 0 {
		t.Errorf("search 0799 = %v; want none", got)
	}

	page := n.do("GET", "/suppressions?page_size=10&search=0712", nil, key(a)...).json(t)
	if rows := page["data"].([]any); len(rows) != 10 || rows[0].(map[string]any)["source"] != "api" {
		t.Errorf("first page = %v", page)
	}
	cursor := url.QueryEscape(page["next_cursor"].(string))
	// A cursor is bound to its search and its account.
	n.do("GET", "/suppressions?page_size=10&search=0733&cursor="+cursor, nil, key(a)...).problem(t, 400, "malformed_query")
	b := n.register("suppress-other@example.com")
	n.do("GET", "/suppressions?page_size=10&search=0712&cursor="+cursor, nil, key(b)...).problem(t, 400, "malformed_query")

	for _, search := range []string{"abc", "0812", "+0712", "2567", "07123456789"} {
		p := n.do("GET", "/suppressions?search="+url.QueryEscape(search), nil, key(a)...).problem(t, 422, "validation_failed")
		namesField(t, p, "search")
	}
	n.do("GET", "/suppressions?page_size=101", nil, key(a)...).problem(t, 422, "validation_failed")
	n.do("GET", "/suppressions?page_size=x", nil, key(a)...).problem(t, 400, "malformed_query")
	n.do("GET", "/suppressions?page=2", nil, key(a)...).problem(t, 400, "malformed_query")
	n.do("GET", "/suppressions", nil).problem(t, 401, "unauthenticated")
}

// A suppression is lifted by its number in any accepted form, once; another tenant neither
// sees it nor can lift it, and has a list of its own.
func TestSuppressionDeleteAndTenants(t *testing.T) {
	n := startNode(t, nil)
	a, b := n.register("suppress-a@example.com"), n.register("suppress-b@example.com")
	if r := n.do("POST", "/suppressions", map[string]any{"phone": "0712345678", "reason": "a's"}, key(a)...); r.Status != 201 {
		t.Fatalf("add = %d %s", r.Status, r.Body)
	}
	if r := n.do("POST", "/suppressions", map[string]any{"phone": "0733111222"}, key(a)...); r.Status != 201 {
		t.Fatalf("add = %d %s", r.Status, r.Body)
	}

	if r := n.do("GET", "/suppressions", nil, key(b)...); r.Status != 200 || string(r.Body) != `{"data":[],"next_cursor":null}` {
		t.Errorf("b's list = %d %s; want it empty", r.Status, r.Body)
	}
	if r := n.do("GET", "/suppressions?search=0712", nil, key(b)...); string(r.Body) != `{"data":[],"next_cursor":null}` {
		t.Errorf("b's search = %d %s; want it empty", r.Status, r.Body)
	}
	n.do("DELETE", "/suppressions/0712345678", nil, key(b)...).problem(t, 404, "not_found")
	if got := n.suppressed(a); got != 2 {
		t.Fatalf("after b's delete a has %d suppressions; want 2", got)
	}
	// b's own suppression of the same number is its own: new, and of its reason.
	r := n.do("POST", "/suppressions", map[string]any{"phone": "+254712345678", "reason": "b's"}, key(b)...)
	if r.Status != 201 || r.json(t)["reason"] != "b's" {
		t.Errorf("b's add = %d %s; want 201 with its own reason", r.Status, r.Body)
	}

	n.do("DELETE", "/suppressions/not-a-number", nil, key(a)...).problem(t, 422, "validation_failed")
	namesField(t, n.do("DELETE", "/suppressions/0812345678", nil, key(a)...).problem(t, 422, "validation_failed"), "phone")
	n.do("DELETE", "/suppressions/0712345678", nil).problem(t, 401, "unauthenticated")

	for _, path := range []string{"/suppressions/" + url.PathEscape("+254 712 345 678"), "/suppressions/%2B254733111222"} {
		if r := n.do("DELETE", path, nil, key(a)...); r.Status != 204 || len(r.Body) != 0 {
			t.Errorf("DELETE %s = %d %s; want 204", path, r.Status, r.Body)
		}
	}
	n.do("DELETE", "/suppressions/254712345678", nil, key(a)...).problem(t, 404, "not_found")
	n.do("DELETE", "/suppressions/0733111222", nil, key(a)...).problem(t, 404, "not_found")
	if got := n.pageSuppressions(t, "", a); len(got) != 0 {
		t.Errorf("a's list after deleting = %v; want it empty", got)
	}
	if got := n.pageSuppressions(t, "", b); !slices.Equal(got, []string{"+254712345678"}) {
		t.Errorf("b's list after a's deletes = %v; want its own", got)
	}
	// Lifted, the number can be suppressed again, anew.
	if r := n.do("POST", "/suppressions", map[string]any{"phone": "0712345678"}, key(a)...); r.Status != 201 || r.json(t)["reason"] != "" {
		t.Errorf("add after delete = %d %s; want 201, anew", r.Status, r.Body)
	}
}
