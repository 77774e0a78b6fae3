// Validation: field errors collected in order, and the checks several groups share.

package api

import (
	"net/mail"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tuma-sms/tuma/transport/strictjson"
)

// FieldErrors collects validation failures in the order the fields were checked.
type FieldErrors []FieldError

// Add records that field is invalid, and why.
func (f *FieldErrors) Add(field, msg string) { *f = append(*f, FieldError{Field: field, Message: msg}) }

// Err is the 422 naming every invalid field, nil when there is none.
func (f FieldErrors) Err() error {
	if len(f) == 0 {
		return nil
	}
	return Invalid(f...)
}

// NormalizeEmail lower-cases and checks an address; ok is false when it is not one.
func NormalizeEmail(raw string) (string, bool) {
	e := strings.ToLower(strings.TrimSpace(raw))
	if e == "" || len(e) > 254 {
		return "", false
	}
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || a.Name != "" {
		return "", false
	}
	_, domain, _ := strings.Cut(e, "@")
	if !strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") {
		return "", false
	}
	return e, true
}

// CheckText trims a free-text field and checks its length in characters.
func CheckText(fe *FieldErrors, field, v string, minLen, maxLen int) string {
	v = strings.TrimSpace(v)
	n := utf8.RuneCountInString(v)
	switch {
	case !strictjson.Storable(v):
		fe.Add(field, "must be UTF-8 text without NUL characters")
	case n < minLen && minLen == 1:
		fe.Add(field, "is required")
	case n < minLen:
		fe.Add(field, "is too short")
	case n > maxLen:
		fe.Add(field, "must be at most "+strconv.Itoa(maxLen)+" characters")
	}
	return v
}
