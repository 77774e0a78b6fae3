package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

func TestDuplicateKey(t *testing.T) {
	for _, tc := range []struct {
		body string
		dup  string // "" when none
	}{
		{`{"a":1,"b":2}`, ""},
		{`{"a":1,"a":2}`, "a"},
		{`{"recipients":["x"],"Recipients":["y"]}`, "Recipients"},
		{`{"a":1,"\u0061":2}`, "a"},
		{`{"K":1,"\u212a":2}`, "\u212a"}, // KELVIN SIGN folds to k, as encoding/json matches it
		{`{"a":{"b":1},"b":{"a":1}}`, ""},
		{`{"a":{"b":1,"b":2}}`, "b"},
		{`[{"a":1},{"a":1}]`, ""},
		{`{"a":"\"a\":","b":1}`, ""},
		{`{"a":[{"x":1}],"c":{"x":[1,{"x":2}]}}`, ""},
		{`{"s":"}","s":"{"}`, "s"},
		// Not JSON: whatever it reads, it never fails.
		{`{"`, ""}, {`{"a":1,"a`, ""}, {`"`, ""}, {`{"a\`, ""}, {`{"a":1,"a":`, "a"},
	} {
		name, dup := DuplicateKey([]byte(tc.body))
		if dup != (tc.dup != "") || name != tc.dup {
			t.Errorf("DuplicateKey(%s) = %q, %v; want %q", tc.body, name, dup, tc.dup)
		}
	}
}

// FuzzDuplicateKey holds the byte scanner to a reference built on encoding/json's tokens.
func FuzzDuplicateKey(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[1,{"c":"d"}]},"e":null}`, `[1,"a",{"A":1,"a":2}]`,
		`{"\u00e9":1,"\u00c9":2}`, `{"x":"\\"}`, `"str"`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, got := DuplicateKey(b) // any text: no panic
		if !json.Valid(b) {
			return
		}
		want := referenceDuplicate(t, b)
		if got != want {
			t.Fatalf("DuplicateKey(%q) = %v; reference says %v", b, got, want)
		}
	})
}

// referenceDuplicate is DuplicateKey on encoding/json's tokens of valid JSON text b.
func referenceDuplicate(t *testing.T, b []byte) bool {
	type frame struct {
		object bool
		key    bool
		seen   []string
	}
	var stack []frame
	return anyToken(t, b, func(tok json.Token) bool {
		top := len(stack) - 1
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				if top >= 0 && stack[top].object {
					stack[top].key = true
				}
				stack = append(stack, frame{object: v == '{', key: true})
			} else {
				stack = stack[:top]
			}
			return false
		case string:
			if top >= 0 && stack[top].object && stack[top].key {
				for _, s := range stack[top].seen {
					if bytes.EqualFold([]byte(s), []byte(v)) {
						return true
					}
				}
				stack[top].seen = append(stack[top].seen, v)
				stack[top].key = false
				return false
			}
		}
		if top >= 0 && stack[top].object {
			stack[top].key = true
		}
		return false
	})
}

// anyToken reports whether f holds for a token of valid JSON text b, read in order.
func anyToken(t *testing.T, b []byte, f func(tok json.Token) bool) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // 1e700 is valid JSON, out of a float64's range
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return false
		}
		if err != nil {
			t.Fatalf("token: %v", err)
		}
		if f(tok) {
			return true
		}
	}
}
