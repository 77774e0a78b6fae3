package api

import (
	"encoding/json"
	"unicode"
	"unicode/utf8"
)

// duplicateKey returns the first member name that occurs twice in one object of the JSON
// text b, comparing names the way encoding/json matches them to struct fields (unescaped,
// case-insensitively), so no spelling of a repeated field slips through. b must be valid JSON.
//
// encoding/json silently keeps the last of repeated names; a body like
// {"recipients":[…],"recipients":[…]} would otherwise mean whatever the decoder's order makes it.
func duplicateKey(b []byte) (string, bool) {
	type frame struct {
		object    bool
		expectKey bool
		seen      map[string]struct{}
	}
	stack := make([]frame, 0, 8)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '{':
			stack = append(stack, frame{object: true, expectKey: true})
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].expectKey = true
			}
		case ':':
			if n := len(stack); n > 0 {
				stack[n-1].expectKey = false
			}
		case '"':
			end, escaped := stringEnd(b, i+1)
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
				f := &stack[n-1]
				name := foldName(b[i:end+1], escaped)
				if _, dup := f.seen[name]; dup {
					return string(unquote(b[i:end+1], escaped)), true
				}
				if f.seen == nil {
					f.seen = make(map[string]struct{}, 4)
				}
				f.seen[name] = struct{}{}
			}
			i = end
		}
	}
	return "", false
}

// stringEnd returns the index of the quote closing the string whose contents start at i.
func stringEnd(b []byte, i int) (end int, escaped bool) {
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i, escaped
		}
	}
	return len(b) - 1, escaped
}

// foldName is a quoted name's case-folded text: equal for two names exactly when
// encoding/json would match both to the same field (bytes.EqualFold of the unescaped names).
func foldName(quoted []byte, escaped bool) string {
	raw := unquote(quoted, escaped)
	out := make([]byte, 0, len(raw))
	for len(raw) > 0 {
		c := raw[0]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' { // the orbit's least member: K for k and the Kelvin sign
				c -= 'a' - 'A'
			}
			out = append(out, c)
			raw = raw[1:]
			continue
		}
		r, size := utf8.DecodeRune(raw)
		raw = raw[size:]
		out = utf8.AppendRune(out, smallestFold(r))
	}
	return string(out)
}

// unquote is a quoted JSON string's text.
func unquote(quoted []byte, escaped bool) []byte {
	if escaped {
		var s string
		if err := json.Unmarshal(quoted, &s); err == nil {
			return []byte(s)
		}
	}
	return quoted[1 : len(quoted)-1]
}

// smallestFold is the least rune of r's simple case-folding orbit, one representative for
// every rune that folds to the same.
func smallestFold(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}
