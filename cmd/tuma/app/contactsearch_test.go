package app_test

import (
	"net/url"
	"slices"
	"testing"
)

// Search matches the beginning of the first name, the last name or the whole name (either
// order), case-insensitively in any script; a phone's leading digits in any form or its last
// four or more; totals are exact, a contact whose two names both match counted once.
func TestContactSearchSemantics(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("search@example.com")
	g := n.group(a, "VIP")
	for _, c := range []map[string]any{
		{"phone": "0712345678", "first_name": "Jan", "last_name": "Jansen", "group_id": g}, // both names begin with "jan"
		{"phone": "0722000001", "first_name": "Janet", "last_name": "Otieno"},
		{"phone": "0733000002", "first_name": "Mary Anne", "last_name": "Wanjiru", "group_id": g},
		{"phone": "0110000003", "first_name": "Émile", "last_name": "Kamau"},
		{"phone": "0799995678", "first_name": "Ja_ne", "last_name": "Percent%"},
		{"phone": "0744000004", "first_name": "Janice", "last_name": "Gone"}, // opted out below
	} {
		if r := n.do("POST", "/contacts", c, key(a)...); r.Status != 201 {
			t.Fatalf("create %v = %d %s", c, r.Status, r.Body)
		}
	}
	gone := n.do("GET", "/contacts?search=gone", nil, key(a)...).json(t)["data"].([]any)[0].(map[string]any)["id"].(string)
	n.do("DELETE", "/contacts/"+gone, nil, key(a)...)

	for search, want := range map[string][]string{
		"jan":          {"+254712345678", "+254722000001"}, // Jan Jansen once; Janice opted out
		"JANSEN":       {"+254712345678"},
		"jan jans":     {"+254712345678"},
		"jansen jan":   {"+254712345678"},
		"otieno jan":   {"+254722000001"},
		"janet o":      {"+254722000001"},
		"mary an":      {"+254733000002"},
		"mary":         {"+254733000002"},
		"émile":        {"+254110000003"},
		"ÉMI":          {"+254110000003"},
		"ja_":          {"+254799995678"}, // text, never a pattern
		"j%":           nil,
		"ja%":          nil,
		"percent%":     {"+254799995678"},
		"5678":         {"+254712345678", "+254799995678"}, // last four
		"0003":         {"+254110000003"},                  // last four, a leading 0 among them
		"345678":       {"+254712345678"},
		"0712 345":     {"+254712345678"},
		"+254 722":     {"+254722000001"},
		"254110":       {"+254110000003"},
		"0744":         nil, // opted out
		"jansen mary":  nil,
		"wanjiru mary": {"+254733000002"},
	} {
		phones, total := n.contacts(a, "?search="+url.QueryEscape(search))
		slices.Sort(phones)
		if int(total) != len(want) || !slices.Equal(phones, want) {
			t.Errorf("search %q = %v (total %v); want %v", search, phones, total, want)
		}
	}
	// With a group, the same rules among its members.
	if phones, total := n.contacts(a, "?group_id="+g+"&search=jan"); total != 1 || len(phones) != 1 || phones[0] != "+254712345678" {
		t.Errorf("search jan in the group = %v (total %v)", phones, total)
	}
	// Paging a search: the total is the whole, the page a part.
	if phones, total := n.contacts(a, "?search=jan&page_size=1&page=2"); total != 2 || len(phones) != 1 {
		t.Errorf("second page of jan = %v (total %v)", phones, total)
	}
}
