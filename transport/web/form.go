package web

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/api"
)

// Form is a submitted form: its values, and the errors an operation found in them, by the
// API's field names ("email", "recipients[3]").
type Form struct {
	Values  map[string]string
	Errors  map[string][]string
	Message string // a problem with the form as a whole ("the email or password is wrong")
}

// NewForm is an empty form.
func NewForm() *Form {
	return &Form{Values: map[string]string{}, Errors: map[string][]string{}}
}

// ReadForm reads a submitted application/x-www-form-urlencoded (or multipart) form: the
// first value of each field.
func ReadForm(rc *fasthttp.RequestCtx) *Form {
	f := NewForm()
	rc.PostArgs().VisitAll(func(k, v []byte) {
		if _, seen := f.Values[string(k)]; !seen {
			f.Values[string(k)] = string(v)
		}
	})
	if mf, err := rc.MultipartForm(); err == nil {
		for k, vs := range mf.Value {
			if _, seen := f.Values[k]; !seen && len(vs) > 0 {
				f.Values[k] = vs[0]
			}
		}
	}
	delete(f.Values, csrfField)
	return f
}

// Get is a field's value ("" when absent).
func (f *Form) Get(name string) string {
	if f == nil {
		return ""
	}
	return f.Values[name]
}

// Set sets a field's value (to show a form filled in).
func (f *Form) Set(name, value string) { f.Values[name] = value }

// AddError records an error of one field.
func (f *Form) AddError(field, message string) {
	f.Errors[field] = append(f.Errors[field], message)
}

// Fail records a problem in the form: its field errors beside their fields (a field the form
// does not show goes to the message), its detail as the message otherwise.
func (f *Form) Fail(p *api.Problem) {
	for _, e := range p.Errors {
		f.AddError(e.Field, e.Message)
	}
	if len(p.Errors) == 0 {
		f.Message = sentence(p.Detail)
	}
}

// Refused records an operation's refusal in the form when a form can say it (400, 409, 422)
// and returns its status; other errors (404, 5xx) are for the error page. edit, when not nil,
// may move the problem's errors to the fields the form shows before they are recorded.
func (f *Form) Refused(err error, edit func(*api.Problem)) (int, bool) {
	var prob *api.Problem
	if err == nil || !errors.As(err, &prob) {
		return 0, false
	}
	switch prob.Status {
	case http.StatusBadRequest, http.StatusConflict, http.StatusUnprocessableEntity:
		if edit != nil {
			edit(prob)
		}
		f.Fail(prob)
		return prob.Status, true
	}
	return 0, false
}

// HasErrors reports whether any field has an error.
func (f *Form) HasErrors() bool { return f != nil && len(f.Errors) > 0 }

// ErrorsOf are the errors of one field.
func (f *Form) ErrorsOf(name string) []string {
	if f == nil {
		return nil
	}
	return f.Errors[name]
}

// sentence capitalises an API detail for people ("the code is wrong" → "The code is wrong.").
func sentence(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// Banner is a message shown above a page's content.
type Banner struct {
	Kind string // success | info | warning | error
	Text string
}

// Flash keeps a message for the next page the browser shows (after a 303).
func (s *Site) Flash(rc *fasthttp.RequestCtx, kind, text string) {
	s.setCookie(rc, flashCookie, base64.RawURLEncoding.EncodeToString([]byte(kind+"\n"+text)), "/app/",
		fasthttp.CookieSameSiteLaxMode, 0)
}

// takeFlash reads the flash, once.
func (s *Site) takeFlash(rc *fasthttp.RequestCtx) (Banner, bool) {
	c := rc.Request.Header.Cookie(flashCookie)
	if len(c) == 0 {
		return Banner{}, false
	}
	s.clearCookie(rc, flashCookie, "/app/")
	b, err := base64.RawURLEncoding.DecodeString(string(c))
	if err != nil {
		return Banner{}, false
	}
	kind, text, ok := strings.Cut(string(b), "\n")
	switch kind {
	case "success", "info", "warning", "error":
	default:
		ok = false
	}
	return Banner{Kind: kind, Text: text}, ok && text != ""
}

// LandingBanners are the messages of the addresses mail and payments send people back to
// (TUMA_DASHBOARD_URL): ?verified=1|0&reason=…, ?topup=success|failed.
func LandingBanners(rc *fasthttp.RequestCtx) []Banner {
	q := rc.QueryArgs()
	var out []Banner
	switch string(q.Peek("verified")) {
	case "1":
		out = append(out, Banner{"success", "Your email address is confirmed. Thank you! The welcome credit is in your wallet."})
	case "0":
		why := "The link is not valid: it may have been used already, or copied only in part."
		if string(q.Peek("reason")) == "expired" {
			why = "The link has expired."
		}
		out = append(out, Banner{"error", "We could not confirm your email address. " + why + " You can ask for a new link, or confirm with a code instead."})
	}
	switch string(q.Peek("topup")) {
	case "success":
		out = append(out, Banner{"success", "Payment received: your wallet has been topped up."})
	case "failed":
		out = append(out, Banner{"error", "The payment did not go through, and nothing was charged. You can try again from the wallet."})
	}
	return out
}

// encodeToken is a CSRF secret as forms carry it.
func encodeToken(secret []byte) string { return base64.RawURLEncoding.EncodeToString(secret) }

// fieldID is a field's element id ("recipients[3]" → "f-recipients-3").
func fieldID(name string) string {
	var b strings.Builder
	b.WriteString("f-")
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		case r == ']':
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// Field is what the "field" partial draws: a labelled input with its errors.
type Field struct {
	Name, ID, Label, Type, Value, Hint, Autocomplete string
	Required                                         bool
	Errors                                           []string
	Attrs                                            map[string]string // inputmode, maxlength, pattern, minlength, accept
}

// newField builds a Field from the template's call: {{template "field" (field .Form "email"
// "Email" "email" "autocomplete=email" "required")}}. Options are "key=value" or a flag.
func newField(f *Form, name, label, typ string, opts ...string) (Field, error) {
	fd := Field{Name: name, ID: fieldID(name), Label: label, Type: typ, Errors: f.ErrorsOf(name), Attrs: map[string]string{}}
	if typ != "password" {
		fd.Value = f.Get(name)
	}
	for _, o := range opts {
		k, v, _ := strings.Cut(o, "=")
		switch k {
		case "required":
			fd.Required = true
		case "hint":
			fd.Hint = v
		case "autocomplete":
			fd.Autocomplete = v
		case "value":
			if fd.Value == "" {
				fd.Value = v
			}
		case "inputmode", "maxlength", "minlength", "pattern", "placeholder", "accept":
			fd.Attrs[k] = v
		default:
			return Field{}, fmt.Errorf("field %s: unknown option %q", name, o)
		}
	}
	return fd, nil
}

// ListURL is a list page's address with the filter's fields named in keep (those set), and
// one more parameter when key is given: the links of its pages ("Older", "Newest").
func ListURL(path string, filter *Form, keep []string, key, value string) string {
	v := url.Values{}
	for _, k := range keep {
		if s := filter.Get(k); s != "" {
			v.Set(k, s)
		}
	}
	if key != "" {
		v.Set(key, value)
	}
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}
