package strictjson

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestNulMember(t *testing.T) {
	for _, c := range []struct {
		body, member string
		found        bool
	}{
		{`{"a":"x"}`, "", false},
		{`{"a":"x\\u0000"}`, "", false}, // a backslash and "u0000": text, no NUL
		{`{"a":"x\u0000y"}`, "a", true},
		{`{"a":1,"b":"\u0000"}`, "b", true},
		{`{"recipients":["0712345678","07\u0000"]}`, "recipients", true},
		{`{"data":{"customer":{"email":"a\u0000@b.c"}},"event":"x"}`, "email", true},
		{`{"data":{"ok":"y"},"meta":{"k\u0000":1}}`, "meta", true},
		{`"\u0000"`, "body", true},
		{`{"a":"\u0000`, "", false}, // an open string: the decoder refuses the text
		{`\u0000"`, "", false},
	} {
		member, found := NulMember([]byte(c.body))
		if found != c.found || member != c.member {
			t.Errorf("NulMember(%s) = %q, %v; want %q, %v", c.body, member, found, c.member, c.found)
		}
	}
}

// FuzzNulMember holds the scanner to encoding/json's tokens: a NUL is found exactly when some
// name or string of the text holds one.
func FuzzNulMember(f *testing.F) {
	for _, s := range []string{`{"a":"x\u0000y"}`, `{"a":"x\\u0000"}`, `[{"k\u0000":1}]`, `"\u0000"`, `{"a":["b",{"c":"\u0000"}]}`,
		`{"a":"\u0000","a":"x"}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, got := NulMember(b) // any text: no panic
		if !json.Valid(b) {
			return
		}
		if got != tokenHoldsNul(t, b) {
			t.Fatalf("NulMember(%q) found %v; the tokens say %v", b, got, !got)
		}
	})
}

func tokenHoldsNul(t *testing.T, b []byte) bool {
	return anyToken(t, b, func(tok json.Token) bool {
		s, ok := tok.(string)
		return ok && strings.ContainsRune(s, 0)
	})
}
