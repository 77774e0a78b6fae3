package drill

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"
)

// hostile is text no field should choke on: SQL, markup, NUL and control characters, header
// splitting, format strings, traversal, 100 KB strings, and Unicode that breaks naive code.
var hostile = []struct{ name, v string }{
	{"sql quote", `' OR '1'='1`},
	{"sql drop", `Robert'); DROP TABLE accounts;--`},
	{"sql sleep", `'||pg_sleep(5)||'`},
	{"sql stacked sleep", `1; SELECT pg_sleep(5)--`},
	{"script", `<script>alert("tuma")</script>`},
	{"markup attribute", `"><img src=x onerror=alert(1)>`},
	{"script address", `<script>alert("tuma")</script>@example.com`},
	{"nul", "nul\x00byte"},
	{"control", "bell\x07\x1b[31mred\x7f"},
	{"header splitting", "line\r\nX-Injected: 1"},
	{"format", `%s%n%x{{.}}${jndi:ldap://127.0.0.1/x}`},
	{"traversal", "../../../../etc/passwd"},
	{"operator", `{"$gt":""}`},
	{"long", strings.Repeat("A", 100_000)},
	{"long unicode", strings.Repeat("💥", 20_000)},
	{"bidi and zero width", "\u202egnp.exe\u200b\u200d\ufeff"},
	{"combining", "Z\u0334\u0321\u032aa\u0337l\u0336g\u0338o\u0335"},
	{"separators", "a\u2028b\u2029c\u0085d"},
	{"lone surrogate", loneSurrogate},
}

// loneSurrogate stands for "\ud800", which a Go string cannot hold: bodies get the JSON escape
// written in, URLs the bytes of its (invalid) UTF-8 encoding.
const loneSurrogate = "LONE-SURROGATE-D800"

// markers are what a page must never show raw from hostile input.
var markers = []string{`<script>alert("tuma")`, `<img src=x onerror=alert(1)>`}

// injection sends hostile text in every text field of every body, every path and query
// parameter and every documented header, then reads everything back.
func (s *secState) injection(ctx context.Context) {
	var text, paths verdict
	var mu sync.Mutex
	codes := map[string]bool{} // checkouts the probes opened, to render afterwards
	keep := func(r reply) {
		var co struct {
			AccessCode string `json:"access_code"`
			Data       struct {
				AccessCode string `json:"access_code"`
			} `json:"data"`
		}
		if r.status == 200 && json.Unmarshal(r.body, &co) == nil {
			mu.Lock()
			codes[co.AccessCode+co.Data.AccessCode] = true
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	var last []*operation
	for _, op := range s.doc.ops {
		if op.id == "changePassword" { // it changes the password the others' bodies use: alone, last
			last = append(last, op)
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			s.inject(ctx, op, &text, &paths, keep)
		})
	}
	wg.Wait()
	for _, op := range last {
		s.inject(ctx, op, &text, &paths, keep)
	}
	text.row(s.rec, "hostile text", "probes with hostile text in a body field, query parameter or header answered without 5xx", "all")
	paths.row(s.rec, "hostile path parameters → 4xx", "probes with hostile text in a path parameter answered 4xx", "all")
	s.readBack(ctx, codes)
}

// inject probes one operation with every hostile text in each place it takes text.
func (s *secState) inject(ctx context.Context, op *operation, text, paths *verdict, keep func(reply)) {
	t := s.inj
	path, _ := s.pathFor(op, t)
	body, ctype, _ := s.sampleBody(op, t)
	send := func(q preq, v *verdict, ok func(reply) bool, want string) {
		q.sleeps = strings.Contains(q.label, "sleep")
		r := s.p.do(ctx, q)
		keep(r)
		v.note(ok(r), func() string { return describe(q, r, want) })
		if op.id == "changePassword" && r.status == 200 { // the hostile text is its password now
			var m map[string]string
			_ = json.Unmarshal(q.body, &m)
			t.password = m["new_password"]
		}
	}
	notServerError := func(r reply) bool { return r.status >= 200 && r.status < 500 }
	for _, h := range hostile {
		switch op.bodyType {
		case "application/json":
			for _, fp := range s.doc.textPaths(op.body, nil, 3) {
				m := s.base(op, t)
				setPath(m, fp, h.v)
				b := hostileJSON(m)
				q := preq{op: op, method: op.method, path: path, body: b, ctype: ctype,
					headers: append(s.creds(op, t), s.signed(op, b)...), label: h.name + " in " + strings.Join(fp, ".")}
				send(q, text, notServerError, "no 5xx")
			}
		case "application/x-www-form-urlencoded":
			b := []byte("action=" + url.QueryEscape(inURL(h.v)))
			q := preq{op: op, method: op.method, path: path, body: b, ctype: ctype, label: h.name + " in the form"}
			send(q, text, notServerError, "no 5xx")
		}
		for _, qp := range op.queryParams {
			q := preq{op: op, method: op.method, path: path + "?" + qp + "=" + url.QueryEscape(inURL(h.v)), body: body, ctype: ctype,
				headers: s.creds(op, t), label: h.name + " in ?" + qp}
			send(q, text, notServerError, "no 5xx")
		}
		for _, hp := range op.headerParams {
			if strings.ContainsFunc(h.v, func(r rune) bool { return r < ' ' || r == 0x7f }) || hp == "X-Paystack-Signature" {
				continue // not a header value HTTP can carry; the signature is probed with the body
			}
			q := preq{op: op, method: op.method, path: path, body: body, ctype: ctype, headers: append(s.creds(op, t), hp, inURL(h.v)),
				label: h.name + " in " + hp}
			send(q, text, notServerError, "no 5xx")
		}
		for _, pp := range op.pathParams {
			vals := map[string]string{}
			for _, p := range op.pathParams {
				vals[p] = s.pathValue(op, p, t)
			}
			hostilePath := fillRaw(op, vals, pp, h.v)
			variants := []string{hostilePath}
			if h.name == "traversal" { // unescaped too: the dots must not climb out of the route
				variants = append(variants, strings.Replace(hostilePath, url.PathEscape(h.v), h.v, 1))
			}
			for i, p := range variants {
				q := preq{op: op, method: op.method, path: p, body: body, ctype: ctype, headers: s.creds(op, t),
					label: h.name + " in {" + pp + "}"}
				if i > 0 {
					q.op = nil // the dots left the route: whatever answers is not this operation
				}
				send(q, paths, func(r reply) bool {
					// Unescaped dots may be cleaned away by a redirect: no file of the host either way.
					lo := 400
					if q.op == nil {
						lo = 300
					}
					return r.status >= lo && r.status < 500 && !bytes.Contains(r.body, []byte("root:"))
				}, "4xx (3xx for unescaped dots), and no file of the host")
			}
		}
	}
}

// textPaths are the paths to the text fields of an object schema, nested objects included.
func (d *apiDoc) textPaths(schema map[string]any, prefix []string, depth int) [][]string {
	var out [][]string
	for _, f := range d.textFields(schema) {
		out = append(out, append(append([]string(nil), prefix...), f.name))
	}
	if depth > 1 {
		for _, f := range d.fields(schema) {
			if _, ok := f.schema["properties"]; ok {
				out = append(out, d.textPaths(f.schema, append(append([]string(nil), prefix...), f.name), depth-1)...)
			}
		}
	}
	return out
}

// setPath sets the field at path in m (copying the objects on the way), as an array of one
// when the field is an array.
func setPath(m map[string]any, path []string, v string) {
	for i, name := range path {
		if i == len(path)-1 {
			if _, isArray := m[name].([]any); isArray {
				m[name] = []any{v}
			} else {
				m[name] = v
			}
			return
		}
		next, _ := m[name].(map[string]any)
		next = clone(next)
		m[name] = next
		m = next
	}
}

// hostileJSON marshals a body, writing the lone surrogate in as its JSON escape.
func hostileJSON(m map[string]any) []byte {
	return bytes.ReplaceAll(mustJSON(m), []byte(loneSurrogate), []byte(`\ud800`))
}

// inURL is a hostile text for a URL or a header: the lone surrogate as its raw (invalid)
// UTF-8 bytes, and the long texts cut to 500 bytes (1.5 KB escaped). A request line or
// header beyond the server's read buffer (4 KB) is refused at the transport, the connection
// closed under the client still writing, before any route sees it: no test of what the
// routes do with the text.
func inURL(v string) string {
	v = strings.ReplaceAll(v, loneSurrogate, "\xed\xa0\x80")
	for len(v) > 500 {
		_, size := utf8.DecodeLastRuneInString(v)
		v = v[:len(v)-size]
	}
	return v
}

// fillRaw fills op's path with vals, parameter p set to hostile text.
func fillRaw(op *operation, vals map[string]string, p, v string) string {
	vals[p] = inURL(v)
	return op.fill(vals)
}

// readBack reads everything back after the hostile input: every read of the injected tenant,
// the operator's reads, the tenant's login, and the checkout pages the probes opened, which
// must show the markup escaped. Text stored through the API comes back as it went in.
func (s *secState) readBack(ctx context.Context, codes map[string]bool) {
	var reads, verbatim, escaped verdict
	t := s.inj
	// The hostile messages are in the tenant's list: read each one by id as well.
	var ids []string
	if r := s.n.c.do(ctx, "GET", "/sms/messages?page_size=100", nil, t.apiKey()...); r.status == 200 {
		var l struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		_ = json.Unmarshal(r.body, &l)
		for _, m := range l.Data {
			ids = append(ids, m.ID)
		}
	}
	for _, op := range s.doc.ops {
		if op.method != "GET" || (op.access != "tenant" && op.access != "admin") {
			continue
		}
		targets := []string{}
		if strings.HasPrefix(op.path, "/sms/messages/{") {
			for _, id := range ids {
				targets = append(targets, op.fill(map[string]string{"id": id}))
			}
		} else if p, missing := s.pathFor(op, t); len(missing) == 0 && op.path != "/debug/pprof/{path}" {
			targets = append(targets, p)
		}
		for _, path := range targets {
			q := preq{op: op, method: "GET", path: path, headers: s.creds(op, t), label: "read back"}
			r := s.p.do(ctx, q)
			reads.note(r.status == 200 && validAs(op.responses[200], r.body), func() string {
				return describe(q, r, "200 with a valid "+orDash(op.responses[200]))
			})
		}
	}
	q := preq{op: s.opAt("POST", "/auth/login"), method: "POST", path: "/auth/login", ctype: "application/json",
		body: mustJSON(map[string]string{"email": t.email, "password": t.password}), label: "login after hostile input"}
	r, ok := s.p.expect(ctx, q, 200)
	reads.note(ok, func() string { return describe(q, r, "200") })

	// Stored as data, returned as it went in: a profile and a notification.
	sqlText, markup := hostile[1].v, hostile[4].v
	q = preq{op: s.opAt("PATCH", "/auth/profile"), method: "PATCH", path: "/auth/profile", ctype: "application/json",
		body: mustJSON(map[string]string{"full_name": sqlText, "company_name": markup}), headers: t.apiKey(), label: "store hostile profile"}
	r, ok = s.p.expect(ctx, q, 200)
	verbatim.note(ok, func() string { return describe(q, r, "200") })
	q = preq{op: s.opAt("GET", "/auth/me"), method: "GET", path: "/auth/me", headers: t.apiKey(), label: "read hostile profile"}
	r = s.p.do(ctx, q)
	var me struct {
		FullName    string `json:"full_name"`
		CompanyName string `json:"company_name"`
	}
	_ = json.Unmarshal(r.body, &me)
	verbatim.note(me.FullName == sqlText && me.CompanyName == markup, func() string {
		return fmt.Sprintf("profile came back as %q, %q", me.FullName, me.CompanyName)
	})
	if _, err := s.n.c.admin(ctx, "POST", "/admin/notifications/promo",
		map[string]any{"title": markup, "message": sqlText, "account_ids": []string{t.id}}, 201); err != nil {
		verbatim.fail(err.Error())
	}
	q = preq{op: s.opAt("GET", "/notifications"), method: "GET", path: "/notifications", headers: t.apiKey(), label: "read hostile notification"}
	r = s.p.do(ctx, q)
	var ns []struct{ Title, Message string }
	_ = json.Unmarshal(r.body, &ns)
	found := false
	for _, n := range ns {
		found = found || n.Title == markup && n.Message == sqlText
	}
	verbatim.note(found, func() string { return "the hostile notification did not come back as sent: " + clip(r.body, 200) })

	// Pages render hostile text escaped.
	for code := range codes {
		if code == "" {
			continue
		}
		q := preq{op: s.opAt("GET", "/checkout/{access_code}"), method: "GET", path: "/checkout/" + url.PathEscape(code), label: "checkout page"}
		r := s.p.do(ctx, q)
		raw := ""
		for _, m := range markers {
			if bytes.Contains(r.body, []byte(m)) {
				raw = m
			}
		}
		escaped.note(r.status == http.StatusOK && raw == "", func() string {
			if raw != "" {
				return fmt.Sprintf("%s shows %s unescaped", q, raw)
			}
			return describe(q, r, "200")
		})
	}
	reads.row(s.rec, "reads after hostile input", "reads of the tenant that took hostile input answered 200 with a valid body of the documented type", "all")
	verbatim.row(s.rec, "stored verbatim", "hostile texts stored through the API came back exactly as sent", "all")
	escaped.row(s.rec, "markup escaped", "checkout pages opened with hostile input rendered it escaped", "all")
}

// validAs reports whether body parses as the media type the document gives: JSON, CSV, a PDF.
func validAs(mediaType string, body []byte) bool {
	switch {
	case strings.HasPrefix(mediaType, "text/csv"):
		_, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
		return err == nil
	case mediaType == "application/pdf":
		return bytes.HasPrefix(body, []byte("%PDF-"))
	}
	return json.Valid(body)
}
