package app_test

import (
	"fmt"
	"testing"
)

// assertContactCounts checks the kept counters (migration 019) against the contacts
// themselves, and the API's totals against both.
func (n *node) assertContactCounts(a account, groups ...string) {
	n.t.Helper()
	if c := n.sqlInt(`SELECT count(*) FROM (
			SELECT group_id, active FROM contact_counts WHERE account_id = $1 AND active <> 0
			EXCEPT
			SELECT coalesce(group_id, '00000000-0000-0000-0000-000000000000'), count(*) FROM contacts
			WHERE account_id = $1 AND opted_out_at IS NULL GROUP BY 1) x`, a.ID); c != 0 {
		n.t.Errorf("%d counters differ from the contacts", c)
	}
	if c := n.sqlInt(`SELECT count(*) FROM (
			SELECT coalesce(group_id, '00000000-0000-0000-0000-000000000000'), count(*) FROM contacts
			WHERE account_id = $1 AND opted_out_at IS NULL GROUP BY 1
			EXCEPT
			SELECT group_id, active FROM contact_counts WHERE account_id = $1) x`, a.ID); c != 0 {
		n.t.Errorf("%d groups of contacts have no right counter", c)
	}
	active := n.sqlInt(`SELECT count(*) FROM contacts WHERE account_id = $1 AND opted_out_at IS NULL`, a.ID)
	if _, total := n.contacts(a, ""); int64(total) != active {
		n.t.Errorf("GET /contacts total = %v; %d contacts are active", total, active)
	}
	for _, g := range groups {
		want := n.sqlInt(`SELECT count(*) FROM contacts WHERE account_id = $1 AND group_id = $2 AND opted_out_at IS NULL`, a.ID, g)
		if _, total := n.contacts(a, "?group_id="+g); int64(total) != want {
			n.t.Errorf("GET /contacts?group_id=%s total = %v; want %d", g, total, want)
		}
	}
}

// The contact list's totals and the groups' counts come from counters the writes keep: an
// import (new rows and merged ones), a single add, a removal and a deleted group each leave
// them equal to counting the contacts, for this account only.
func TestContactCountsFollowEveryWrite(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("counts@example.com")
	other := n.register("counts-other@example.com")
	g1, g2 := n.group(a, "One"), n.group(a, "Two")
	n.assertContactCounts(a, g1, g2)

	if r := n.importCSV(a, bigCSV(500, nil, nil), g1, ""); r.Status != 200 {
		t.Fatalf("import = %d %s", r.Status, r.Body)
	}
	if r := n.importCSV(other, bigCSV(40, nil, nil), "", ""); r.Status != 200 {
		t.Fatalf("other import = %d %s", r.Status, r.Body)
	}
	n.assertContactCounts(a, g1, g2)

	// The same rows again, into the second group, with new ones: merged and added.
	if r := n.importCSV(a, bigCSV(700, nil, nil), g2, ""); r.Status != 200 {
		t.Fatalf("second import = %d %s", r.Status, r.Body)
	}
	n.assertContactCounts(a, g1, g2)

	var ids []string
	for i := range 3 {
		r := n.do("POST", "/contacts", map[string]any{"phone": fmt.Sprintf("071200000%d", i), "group_id": g1}, key(a)...)
		if r.Status != 201 {
			t.Fatalf("add = %d %s", r.Status, r.Body)
		}
		ids = append(ids, r.json(t)["id"].(string))
	}
	if r := n.do("POST", "/contacts", map[string]any{"phone": "0712000009"}, key(a)...); r.Status != 201 {
		t.Fatalf("add without a group = %d %s", r.Status, r.Body)
	}
	if r := n.do("DELETE", "/contacts/"+ids[0], nil, key(a)...); r.Status != 204 {
		t.Fatalf("remove = %d %s", r.Status, r.Body)
	}
	n.assertContactCounts(a, g1, g2)

	if r := n.do("DELETE", "/contacts/groups/"+g2, nil, key(a)...); r.Status != 204 {
		t.Fatalf("delete group = %d %s", r.Status, r.Body)
	}
	n.assertContactCounts(a, g1)
	n.assertContactCounts(other)

	r := n.do("GET", "/contacts/groups", nil, key(a)...)
	want := n.sqlInt(`SELECT count(*) FROM contacts WHERE account_id = $1 AND group_id = $2 AND opted_out_at IS NULL`, a.ID, g1)
	if list := r.json2(t); len(list) != 1 || list[0].(map[string]any)["contact_count"] != float64(want) {
		t.Errorf("GET /contacts/groups = %s; want one group of %d", r.Body, want)
	}
}
