package drill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// apiDoc is the node's own /openapi.json, read over HTTP: the security drill probes every
// operation it lists, so an endpoint added to the API is probed without touching the drill.
type apiDoc struct {
	raw map[string]any
	ops []*operation
}

// operation is one method and path of the document.
type operation struct {
	method, path, id string
	access           string   // public, tenant, admin, sandbox; or the unknown scheme's name
	pathParams       []string // in path order
	queryParams      []string
	headerParams     []string
	bodyType         string         // the request body's media type ("" for none)
	body             map[string]any // its schema, $refs resolved at the top
	responses        map[int]string // status → documented media type ("" for none)
	maxBody          int            // x-max-body-bytes: an upload's own limit (0: TUMA_MAX_BODY_BYTES)
}

func (o *operation) String() string { return o.method + " " + o.path }

// documented reports whether the document lists status for the operation.
func (o *operation) documented(status int) bool {
	_, ok := o.responses[status]
	return ok
}

// expectOr is want when the operation documents it, else 0 (any documented 4xx will do).
func (o *operation) expectOr(want int) int {
	if o.documented(want) {
		return want
	}
	return 0
}

// fill renders the path with values for its parameters (path-escaped).
func (o *operation) fill(values map[string]string) string {
	p := o.path
	for _, name := range o.pathParams {
		p = strings.Replace(p, "{"+name+"}", url.PathEscape(values[name]), 1)
	}
	return p
}

func loadAPIDoc(ctx context.Context, c *client) (*apiDoc, error) {
	r := c.do(ctx, "GET", "/openapi.json", nil)
	if err := r.expect(200); err != nil {
		return nil, fmt.Errorf("read /openapi.json: %w", err)
	}
	d := &apiDoc{}
	if err := json.Unmarshal(r.body, &d.raw); err != nil {
		return nil, fmt.Errorf("decode /openapi.json: %w", err)
	}
	global := schemeOf(d.raw["security"], "tenant")
	paths, _ := d.raw["paths"].(map[string]any)
	keys := make([]string, 0, len(paths))
	for k := range paths {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, path := range keys {
		item, _ := paths[path].(map[string]any)
		for _, method := range []string{"get", "post", "put", "patch", "delete"} {
			raw, ok := item[method].(map[string]any)
			if !ok {
				continue
			}
			op := &operation{method: strings.ToUpper(method), path: path, responses: map[int]string{}}
			op.id, _ = raw["operationId"].(string)
			op.access = global
			if sec, ok := raw["security"]; ok {
				op.access = schemeOf(sec, "public")
			}
			if mb, ok := raw["x-max-body-bytes"].(float64); ok {
				op.maxBody = int(mb)
			}
			for _, p := range append(asList(item["parameters"]), asList(raw["parameters"])...) {
				pm := d.resolve(p)
				name, _ := pm["name"].(string)
				switch pm["in"] {
				case "path":
					op.pathParams = append(op.pathParams, name)
				case "query":
					op.queryParams = append(op.queryParams, name)
				case "header":
					op.headerParams = append(op.headerParams, name)
				}
			}
			if rb := d.resolve(raw["requestBody"]); rb != nil {
				content, _ := rb["content"].(map[string]any)
				for mt, v := range content {
					op.bodyType = mt
					vm, _ := v.(map[string]any)
					op.body = d.resolve(vm["schema"])
				}
			}
			responses, _ := raw["responses"].(map[string]any)
			for code, v := range responses {
				status, err := strconv.Atoi(code)
				if err != nil {
					continue
				}
				content, _ := d.resolve(v)["content"].(map[string]any)
				op.responses[status] = ""
				for mt := range content {
					op.responses[status] = mt
				}
			}
			d.ops = append(d.ops, op)
		}
	}
	if len(d.ops) == 0 {
		return nil, errors.New("/openapi.json lists no operation")
	}
	return d, nil
}

// summary counts the operations by who may call them.
func (d *apiDoc) summary() string {
	by := map[string]int{}
	for _, op := range d.ops {
		by[op.access]++
	}
	var parts []string
	for _, k := range []string{"public", "tenant", "admin", "sandbox"} {
		parts = append(parts, fmt.Sprintf("%d %s", by[k], k))
		delete(by, k)
	}
	for k, n := range by {
		parts = append(parts, fmt.Sprintf("%d %s (unknown scheme)", n, k))
	}
	return fmt.Sprintf("%d operations in /openapi.json: %s", len(d.ops), strings.Join(parts, ", "))
}

// schemeOf names who may call an operation from its security requirement: [] is public, and
// so is one that lists {} (credentials optional); the document's API key and bearer schemes
// are a tenant's; AdminAuth the operator's.
func schemeOf(sec any, empty string) string {
	reqs := asList(sec)
	if len(reqs) == 0 {
		return empty
	}
	for _, r := range reqs {
		if m, _ := r.(map[string]any); len(m) == 0 {
			return "public"
		}
	}
	for _, r := range reqs {
		m, _ := r.(map[string]any)
		for name := range m {
			switch name {
			case "ApiKeyAuth", "BearerAuth":
				return "tenant"
			case "AdminAuth":
				return "admin"
			case "SandboxSecret":
				return "sandbox"
			default:
				return name
			}
		}
	}
	return empty
}

func asList(v any) []any { l, _ := v.([]any); return l }

// resolve follows a local $ref ("#/components/…"); anything else is returned as it is.
func (d *apiDoc) resolve(v any) map[string]any {
	m, _ := v.(map[string]any)
	for i := 0; m != nil && i < 10; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		var cur any = d.raw
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cm, _ := cur.(map[string]any)
			cur = cm[part]
		}
		m, _ = cur.(map[string]any)
	}
	return m
}

// fields are a body schema's properties, sorted, with their resolved schemas.
func (d *apiDoc) fields(schema map[string]any) []field {
	props, _ := schema["properties"].(map[string]any)
	var out []field
	for name, s := range props {
		out = append(out, field{name: name, schema: d.resolve(s)})
	}
	slices.SortFunc(out, func(a, b field) int { return strings.Compare(a.name, b.name) })
	return out
}

type field struct {
	name   string
	schema map[string]any
}

// types are the JSON types a schema allows.
func types(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, v := range t {
			if str, ok := v.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	if _, ok := s["properties"]; ok {
		return []string{"object"}
	}
	return nil
}

func required(s map[string]any) []string {
	var out []string
	for _, v := range asList(s["required"]) {
		if str, ok := v.(string); ok {
			out = append(out, str)
		}
	}
	return out
}

// sampler makes valid-looking values from schemas; emails are unique per call, so a body
// made twice registers two accounts.
type sampler struct {
	d      *apiDoc
	prefix string
	seq    func() int
}

// body is an object with every required property of schema.
func (g sampler) body(schema map[string]any) map[string]any {
	out := map[string]any{}
	for _, name := range required(schema) {
		props, _ := schema["properties"].(map[string]any)
		out[name] = g.value(name, g.d.resolve(props[name]))
	}
	return out
}

// value is a sample for one property.
func (g sampler) value(name string, s map[string]any) any {
	if ex := asList(s["examples"]); len(ex) > 0 {
		return ex[0]
	}
	if def, ok := s["default"]; ok {
		return def
	}
	for _, e := range asList(s["enum"]) {
		if e != nil {
			return e
		}
	}
	ts := types(s)
	t := ""
	for _, c := range ts {
		if c != "null" {
			t = c
			break
		}
	}
	switch t {
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return false
	case "array":
		return []any{g.value(name, g.d.resolve(s["items"]))}
	case "object":
		return g.body(s)
	}
	format, _ := s["format"].(string)
	switch {
	case format == "email" || strings.Contains(name, "email"):
		return fmt.Sprintf("drill-%s-%d@example.com", g.prefix, g.seq())
	case format == "uuid":
		return uuid.NewString()
	case format == "uri":
		return "http://127.0.0.1/drill"
	case s["pattern"] == "^[0-9]{6}$":
		return "123456"
	}
	return "Drill1234" // passes every length, password and reference rule of the API
}

// wrongValue is a JSON value of a type the schema does not allow.
func wrongValue(s map[string]any) any {
	ts := types(s)
	switch {
	case !slices.Contains(ts, "string"):
		return "not-of-this-type"
	case !slices.Contains(ts, "object"):
		return map[string]any{"not": "a string"}
	}
	return true
}

// textFields are the properties of schema that take text (enumerations too): strings, and
// arrays of strings.
func (d *apiDoc) textFields(schema map[string]any) []field {
	var out []field
	for _, f := range d.fields(schema) {
		ts := types(f.schema)
		if slices.Contains(ts, "string") ||
			slices.Contains(ts, "array") && slices.Contains(types(d.resolve(f.schema["items"])), "string") {
			out = append(out, f)
		}
	}
	return out
}
