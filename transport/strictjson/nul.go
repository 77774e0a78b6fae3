package strictjson

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// NulMember finds a string holding U+0000 in the JSON text b and names the member it is in:
// the innermost object member, "body" outside any. Valid JSON carries NUL only as the escape
// \u0000, so text without one is passed at once.
//
// PostgreSQL's text and jsonb refuse U+0000: a NUL that reached a write failed it (a whole
// group commit of sends with it) and one that reached a lookup failed the query, both as 500s.
func NulMember(b []byte) (string, bool) {
	if !bytes.Contains(b, []byte(`\u0000`)) {
		return "", false
	}
	s := newScanner(b)
	for {
		quoted, escaped, isKey, ok := s.next()
		if !ok {
			return "", false
		}
		text := unquote(quoted, escaped)
		if escaped && bytes.IndexByte(text, 0) >= 0 {
			if isKey { // a name with NUL: named by the member holding its object
				return member(s.stack[:len(s.stack)-1]), true
			}
			return member(s.stack), true
		}
		if isKey {
			s.top().key = text
		}
	}
}

// member names the innermost object member of a stack, "body" outside any.
func member(stack []frame) string {
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i].object && len(stack[i].key) > 0 {
			return string(stack[i].key)
		}
	}
	return "body"
}

// Storable reports text PostgreSQL can hold: UTF-8 without NUL.
func Storable(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }
