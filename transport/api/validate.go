package api

import (
	"errors"
	"net/mail"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tuma-sms/tuma/carriers"
)

// fieldErrors collects validation failures in the order the fields were checked.
type fieldErrors []FieldError

func (f *fieldErrors) add(field, msg string) { *f = append(*f, FieldError{Field: field, Message: msg}) }

func (f fieldErrors) err() error {
	if len(f) == 0 {
		return nil
	}
	return invalid(f...)
}

// normalizeEmail lower-cases and checks an address; ok is false when it is not one.
func normalizeEmail(raw string) (string, bool) {
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

// checkPassword applies the password policy, adding one error per broken rule.
func checkPassword(fe *fieldErrors, field, pw string) {
	if utf8.RuneCountInString(pw) < 8 {
		fe.add(field, "must be at least 8 characters long")
	}
	if len(pw) > 1024 {
		fe.add(field, "must be at most 1024 bytes long")
	}
	var upper, digit bool
	for _, r := range pw {
		upper = upper || unicode.IsUpper(r)
		digit = digit || unicode.IsDigit(r)
	}
	if !upper {
		fe.add(field, "must contain at least one uppercase letter")
	}
	if !digit {
		fe.add(field, "must contain at least one digit")
	}
}

// checkText trims a free-text field and checks its length in characters.
func checkText(fe *fieldErrors, field, v string, minLen, maxLen int) string {
	v = strings.TrimSpace(v)
	n := utf8.RuneCountInString(v)
	switch {
	case !utf8.ValidString(v):
		fe.add(field, "must be valid UTF-8")
	case n < minLen && minLen == 1:
		fe.add(field, "is required")
	case n < minLen:
		fe.add(field, "is too short")
	case n > maxLen:
		fe.add(field, "must be at most "+strconv.Itoa(maxLen)+" characters")
	}
	return v
}

// normalizePhone turns any accepted Kenyan form into E.164 ("" stays "").
func normalizePhone(fe *fieldErrors, field, raw string, plan *carriers.Plan) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	n, err := plan.Normalize(raw)
	if err != nil && !errors.Is(err, carriers.ErrUnsupportedNetwork) {
		fe.add(field, "must be a Kenyan mobile number such as 0712345678 or +254712345678")
		return raw
	}
	return n.E164
}
