// Text the store cannot hold: PostgreSQL's text and jsonb refuse U+0000, so a NUL that
// reached a write failed it (a whole group commit of sends with it) and one that reached a
// lookup failed the query, both as 500s. Requests carrying one are refused at the door.

package api

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// nulMember finds a string holding U+0000 in the JSON text b and names the member it is in:
// the innermost object member, "body" outside any. Valid JSON carries NUL only as the escape
// \u0000, so text without one is passed at once.
func nulMember(b []byte) (string, bool) {
	if !bytes.Contains(b, []byte(`\u0000`)) {
		return "", false
	}
	type frame struct {
		object, expectKey bool
		key               string
	}
	stack := make([]frame, 0, 8)
	member := func(frames []frame) string {
		for i := len(frames) - 1; i >= 0; i-- {
			if frames[i].object && frames[i].key != "" {
				return frames[i].key
			}
		}
		return "body"
	}
	for i := 0; i < len(b); i++ {
		switch b[i] {
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
			text := unquote(b[i:end+1], escaped)
			n := len(stack)
			isKey := n > 0 && stack[n-1].object && stack[n-1].expectKey
			if escaped && bytes.IndexByte(text, 0) >= 0 {
				if isKey { // a name with NUL: named by the member holding its object
					return member(stack[:n-1]), true
				}
				return member(stack), true
			}
			if isKey {
				stack[n-1].key = string(text)
			}
			i = end
		}
	}
	return "", false
}

// nulProblem is the 422 of a body with NUL in a member.
func nulProblem(member string) *Problem {
	return invalid(FieldError{Field: member, Message: "must not contain the NUL character (U+0000)"})
}

// storableText reports text PostgreSQL can hold: UTF-8 without NUL.
func storableText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }
