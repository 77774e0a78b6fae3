package app_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// queryParam is a query parameter of a GET operation, as /openapi.json declares it.
type queryParam struct {
	path, name, kind string // kind: integer, uuid or cursor
	min, max         *float64
}

// queryParams reads every typed query parameter of the GET operations in /openapi.json.
func queryParams(t *testing.T) []queryParam {
	t.Helper()
	raw, err := os.ReadFile("../../../transport/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage
		Components struct{ Parameters map[string]json.RawMessage }
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	type param struct {
		Ref    string `json:"$ref"`
		Name   string
		In     string
		Schema struct {
			Type, Format string
			Minimum      *float64
			Maximum      *float64
			Enum         []any
		}
	}
	var out []queryParam
	for path, ops := range doc.Paths {
		get, ok := ops["get"]
		if !ok || strings.Contains(path, "{") {
			continue
		}
		var op struct{ Parameters []param }
		if err := json.Unmarshal(get, &op); err != nil {
			t.Fatal(err)
		}
		for _, p := range op.Parameters {
			if p.Ref != "" {
				if err := json.Unmarshal(doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")], &p); err != nil {
					t.Fatal(err)
				}
			}
			if p.In != "query" {
				continue
			}
			q := queryParam{path: path, name: p.Name}
			switch {
			case p.Name == "cursor":
				q.kind = "cursor"
			case p.Schema.Type == "integer":
				q.kind = "integer"
				if len(p.Schema.Enum) == 0 {
					q.min, q.max = p.Schema.Minimum, p.Schema.Maximum
				}
			case p.Schema.Format == "uuid":
				q.kind = "uuid"
			default:
				continue
			}
			out = append(out, q)
		}
	}
	slices.SortFunc(out, func(a, b queryParam) int { return strings.Compare(a.path+" "+a.name, b.path+" "+b.name) })
	return out
}

// A query parameter that is not of its kind at all is a 400 on every list the API has, and a
// well-formed one out of its range a 422 (CONTRACT.md §1): every typed parameter of every GET
// operation in /openapi.json, tried both ways.
func TestMalformedQueryParameters(t *testing.T) {
	params := queryParams(t)
	covered := map[string]bool{}
	for _, p := range params {
		covered[p.path] = true
	}
	for _, list := range []string{"/sms/messages", "/wallet/transactions", "/contacts", "/contacts/export", "/campaigns", "/admin/senders", "/reports/spend-trend"} {
		if !covered[list] {
			t.Errorf("/openapi.json declares no typed query parameter of GET %s", list)
		}
	}
	n := startNode(t, nil)
	a := n.register("query-params@example.com")
	auth := func(path string) []string {
		if strings.HasPrefix(path, "/admin/") {
			return adminAuth()
		}
		return key(a)
	}
	malformed := map[string][]string{
		"integer": {"abc", "1.5", "lots", "0x10", "%00"},
		"uuid":    {"nope", "1234", "0190c3a0-0000-7000-8000-00000000000g"},
		"cursor":  {"not-a-cursor", "%FF%FE"},
	}
	for _, p := range params {
		for _, v := range malformed[p.kind] {
			n.do("GET", p.path+"?"+p.name+"="+v, nil, auth(p.path)...).problem(t, 400, "malformed_query")
		}
		if p.max != nil {
			n.do("GET", p.path+"?"+p.name+"="+formatInt(*p.max+1), nil, auth(p.path)...).problem(t, 422, "validation_failed")
		}
		if p.min != nil {
			n.do("GET", p.path+"?"+p.name+"="+formatInt(*p.min-1), nil, auth(p.path)...).problem(t, 422, "validation_failed")
		}
	}
}

func formatInt(f float64) string {
	b, _ := json.Marshal(int64(f))
	return string(b)
}
