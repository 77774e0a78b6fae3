package strictjson

import (
	"unicode"
	"unicode/utf8"
)

// DuplicateKey returns the first member name that occurs twice in one object of the JSON
// text b, comparing names the way encoding/json matches them to struct fields (unescaped,
// case-insensitively), so no spelling of a repeated field slips through. It runs before the
// decoder, on any text: what it cannot read it leaves to the decoder to refuse.
//
// encoding/json silently keeps the last of repeated names; a body like
// {"recipients":[…],"recipients":[…]} would otherwise mean whatever the decoder's order makes it.
func DuplicateKey(b []byte) (string, bool) {
	s := newScanner(b)
	for {
		quoted, escaped, isKey, ok := s.next()
		if !ok {
			return "", false
		}
		if !isKey {
			continue
		}
		f := s.top()
		name := foldName(quoted, escaped)
		if _, dup := f.seen[name]; dup {
			return string(unquote(quoted, escaped)), true
		}
		if f.seen == nil {
			f.seen = make(map[string]struct{}, 4)
		}
		f.seen[name] = struct{}{}
	}
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

// smallestFold is the least rune of r's simple case-folding orbit, one representative for
// every rune that folds to the same.
func smallestFold(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}
