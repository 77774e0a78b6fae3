package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// bodies sends every operation that takes a body one too large (by Content-Length and
// chunked), malformed ones, one with each field of a wrong type, and one labelled as
// something else than it is; and every path a method it does not have.
func (s *secState) bodies(ctx context.Context) {
	var large, malformed, typed, media, methods verdict
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, op := range s.doc.ops {
		if op.bodyType == "" {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			t := s.inj
			path, _ := s.pathFor(op, t)
			body, ctype, extra := s.sampleBody(op, t)
			creds := append(s.creds(op, t), extra...)
			s.oversized(ctx, &large, op, path, ctype, creds)
			if op.bodyType != "application/json" {
				return
			}
			for _, bad := range [][]byte{nil, []byte(`{"a":`), []byte(`{} {}`), []byte(`{"a":1,"a":2}`), []byte(`not json`)} {
				q := preq{op: op, method: op.method, path: path, body: bad, ctype: ctype, label: fmt.Sprintf("malformed body %q", bad)}
				q.headers = append(s.creds(op, t), s.signed(op, bad)...)
				r, ok := s.p.expect(ctx, q, op.expectOr(400))
				malformed.note(ok, func() string { return describe(q, r, wantText(op.expectOr(400))) })
			}
			if op.documented(422) {
				base := s.base(op, t)
				for _, f := range s.doc.fields(op.body) {
					m := clone(base)
					m[f.name] = wrongValue(f.schema)
					b := mustJSON(m)
					q := preq{op: op, method: op.method, path: path, body: b, ctype: ctype, headers: append(s.creds(op, t), s.signed(op, b)...),
						label: "wrong type of " + f.name}
					r, ok := s.p.expect(ctx, q, 422)
					typed.note(ok && namesField(r.body, f.name), func() string { return describe(q, r, "422 naming "+f.name) })
				}
			}
			if op.documented(415) {
				q := preq{op: op, method: op.method, path: path, body: body, ctype: "text/plain", headers: creds, label: "text/plain body"}
				r, ok := s.p.expect(ctx, q, 415)
				media.note(ok, func() string { return describe(q, r, "415") })
			}
		})
	}
	wg.Wait()
	// A method a path does not have: 405 naming the ones it has.
	byPath := map[string][]*operation{}
	for _, op := range s.doc.ops {
		byPath[op.path] = append(byPath[op.path], op)
	}
	for _, ops := range byPath {
		have := map[string]bool{}
		for _, op := range ops {
			have[op.method] = true
		}
		method := "DELETE"
		if have[method] {
			method = "PUT"
		}
		path, _ := s.pathFor(ops[0], s.inj)
		q := preq{method: method, path: path, headers: s.creds(ops[0], s.inj), label: "a method the path has not"}
		r := s.p.do(ctx, q)
		methods.note(r.status == 405 && r.header.Get("Allow") != "", func() string { return describe(q, r, "405 with Allow") })
	}
	large.row(s.rec, "oversized bodies → 413", fmt.Sprintf("bodies over TUMA_MAX_BODY_BYTES (%d), or an upload's own limit, answered 413", probeBodyLimit), "all")
	malformed.row(s.rec, "malformed bodies → 400", "empty, truncated, trailing-data, repeated-member and non-JSON bodies answered 400", "all")
	typed.row(s.rec, "wrong types → 422", "bodies with one field of a wrong type answered 422 naming the field", "all")
	media.row(s.rec, "wrong Content-Type → 415", "JSON bodies labelled text/plain answered 415", "all")
	methods.row(s.rec, "wrong method → 405", "paths asked with a method they lack answered 405 with Allow", "all")
}

// oversized sends a body one byte over the limit, declared up front and chunked.
func (s *secState) oversized(ctx context.Context, v *verdict, op *operation, path, ctype string, creds []string) {
	want := op.expectOr(413)
	n := probeBodyLimit + 1
	if op.maxBody > 0 {
		n = op.maxBody + 1
	}
	// An upload's body is a valid multipart head and one big file part, so its size is what
	// the node refuses (or the file's own size limit first: 422 naming it).
	var prefix []byte
	if _, params, err := mime.ParseMediaType(ctype); err == nil && params["boundary"] != "" {
		prefix = []byte("--" + params["boundary"] + "\r\nContent-Disposition: form-data; name=\"" + firstFileField(op.body) +
			"\"; filename=\"big.csv\"\r\n\r\n")
	}
	head := append([]string{"Content-Type", ctype, "Content-Length", strconv.Itoa(n)}, creds...)
	filler := append(append([]byte{}, prefix...), bytes.Repeat([]byte("a"), n-len(prefix))...)
	for _, chunked := range []bool{false, true} {
		var body io.Reader = bytes.NewReader(filler)
		h, label := head, "oversized body"
		if chunked {
			h = append([]string{"Content-Type", ctype, "Transfer-Encoding", "chunked"}, creds...)
			body, label = &chunks{left: n, prefix: prefix}, "oversized chunked body"
		}
		q := preq{op: op, method: op.method, path: path, label: label}
		r := oversized(ctx, s.n.base, op.method, rawHead(op.method, path, h...), body)
		s.audit.see(q, r)
		// A chunked upload's size is known only as it is read: a refusal that needs none of it
		// (the resource's state, 409) or the file's own limit (422) may come first.
		ok := answered(op, r, want) || prefix != nil && chunked && (answered(op, r, 422) || answered(op, r, 409))
		v.note(ok, func() string { return describe(q, r, wantText(want)) })
	}
}

// creds are the credentials op takes, as t.
func (s *secState) creds(op *operation, t *secTenant) []string {
	switch op.access {
	case "tenant":
		return t.apiKey()
	case "admin":
		return adminAuth()
	case "sandbox":
		return []string{"Authorization", "Bearer " + s.paySecret}
	}
	return nil
}

// namesField reports whether a 422 problem names the field among its errors.
func namesField(body []byte, name string) bool {
	var p struct {
		Errors []struct {
			Field string `json:"field"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &p) != nil {
		return false
	}
	for _, e := range p.Errors {
		if e.Field == name || strings.HasPrefix(e.Field, name+"[") || strings.HasPrefix(e.Field, name+".") {
			return true
		}
	}
	return false
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// firstFileField names the first file property (format binary) of a multipart schema.
func firstFileField(schema map[string]any) string {
	props, _ := schema["properties"].(map[string]any)
	var names []string
	for name, v := range props {
		if p, _ := v.(map[string]any); p["format"] == "binary" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "file"
	}
	return names[0]
}
