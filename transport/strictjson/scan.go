// Package strictjson checks JSON text for what encoding/json lets through silently: a member
// named twice in one object (the decoder keeps the last), and the character U+0000, which
// PostgreSQL's text and jsonb refuse. Both checks run on one scanner of valid JSON text.
package strictjson

import (
	"encoding/json"
)

// frame is one open object or array.
type frame struct {
	object    bool
	expectKey bool                // inside an object, the next string is a member name
	key       []byte              // the current member's name, unescaped (NulMember)
	seen      map[string]struct{} // the member names so far, folded (DuplicateKey)
}

// scanner walks JSON text string by string, keeping the stack of open objects and arrays.
// Everything outside strings is structure: braces, brackets, commas and colons. The text need
// not be valid (the checks run before the decoder finds what is wrong with it): a string left
// open ends the scan.
type scanner struct {
	b     []byte
	i     int
	stack []frame
}

func newScanner(b []byte) *scanner { return &scanner{b: b, stack: make([]frame, 0, 8)} }

// next moves to the next string and returns it quoted, whether it holds an escape, and
// whether it is a member name; ok is false at the end of the text. The stack is as it stands
// at that string.
func (s *scanner) next() (quoted []byte, escaped, isKey, ok bool) {
	for ; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '{':
			s.stack = append(s.stack, frame{object: true, expectKey: true})
		case '[':
			s.stack = append(s.stack, frame{})
		case '}', ']':
			if len(s.stack) > 0 {
				s.stack = s.stack[:len(s.stack)-1]
			}
		case ',':
			if top := s.top(); top != nil && top.object {
				top.expectKey = true
			}
		case ':':
			if top := s.top(); top != nil {
				top.expectKey = false
			}
		case '"':
			start := s.i
			end, esc, closed := stringEnd(s.b, start+1)
			if !closed {
				s.i = len(s.b)
				return nil, false, false, false
			}
			s.i = end + 1
			top := s.top()
			return s.b[start : end+1], esc, top != nil && top.object && top.expectKey, true
		}
	}
	return nil, false, false, false
}

// top is the innermost open object or array, nil outside any.
func (s *scanner) top() *frame {
	if len(s.stack) == 0 {
		return nil
	}
	return &s.stack[len(s.stack)-1]
}

// stringEnd returns the index of the quote closing the string whose contents start at i;
// closed is false when the text ends first.
func stringEnd(b []byte, i int) (end int, escaped, closed bool) {
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i, escaped, true
		}
	}
	return 0, escaped, false
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
