package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// checkInputError asserts that a rejected body gets a client error with a problem, never a 500.
func checkInputError(t *testing.T, body []byte, err error) {
	t.Helper()
	var p *Problem
	if !errors.As(err, &p) {
		t.Fatalf("body %q: error %v is not a problem", body, err)
	}
	if p.Status != http.StatusBadRequest && p.Status != http.StatusUnprocessableEntity {
		t.Fatalf("body %q: status %d; want 400 or 422", body, p.Status)
	}
	if p.Status == http.StatusUnprocessableEntity && len(p.Errors) == 0 {
		t.Fatalf("body %q: 422 without field errors", body)
	}
}

func FuzzParseRegistration(f *testing.F) {
	for _, s := range []string{
		`{"email":"jane@example.com","password":"Secret123","full_name":"Jane","company_name":"Acme","phone":"0712345678"}`,
		`{"email":"JANE@EXAMPLE.COM","password":"Secret123","full_name":" Jane ","company_name":"Acme","country":"KE"}`,
		`{"email":5}`, `{"password":null}`, `[]`, `{`, `{"phone":"+254 (0) 7"}`, `{"full_name":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	plan := carriers.DefaultPlan()
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseRegistration(body, plan)
		if err != nil {
			checkInputError(t, body, err)
			return
		}
		a := r.account
		if a.Email != strings.ToLower(a.Email) || !strings.Contains(a.Email, "@") {
			t.Fatalf("accepted email %q", a.Email)
		}
		if n := utf8.RuneCountInString(a.CompanyName); n < 1 || n > 60 {
			t.Fatalf("accepted company_name of %d characters", n)
		}
		if a.FullName == "" || a.FullName != strings.TrimSpace(a.FullName) {
			t.Fatalf("accepted full_name %q", a.FullName)
		}
		if a.Phone != "" && (len(a.Phone) != 13 || !strings.HasPrefix(a.Phone, "+254")) {
			t.Fatalf("accepted phone %q; want E.164", a.Phone)
		}
		var fe fieldErrors
		checkPassword(&fe, "password", r.password)
		if len(fe) != 0 {
			t.Fatalf("accepted password breaking the policy: %v", fe)
		}
	})
}

func FuzzParseAccountBodies(f *testing.F) {
	for _, s := range []string{
		`{"email":"a@b.co","password":"x"}`, `{"refresh_token":"rt_abc"}`,
		`{"full_name":"Jane","phone":null}`, `{"email":"x@y.z"}`, `{"current_password":"a","new_password":"Secret123"}`,
		`{"phone":"07"}`, `null`, `"str"`, `{"company_name":""}`,
		`{"code":"123456"}`, `{"code":"12345a"}`, `{"code":123456}`, `{"token":"pr_x","new_password":"Secret123"}`,
		`{"email":" A@B.CO "}`,
	} {
		f.Add([]byte(s))
	}
	plan := carriers.DefaultPlan()
	f.Fuzz(func(t *testing.T, body []byte) {
		if c, err := parseLogin(body); err != nil {
			checkInputError(t, body, err)
		} else if c.email == "" || c.password == "" {
			t.Fatalf("login accepted without email or password: %+v", c)
		}
		if tok, err := parseRefresh(body); err != nil {
			checkInputError(t, body, err)
		} else if tok == "" {
			t.Fatal("refresh accepted an empty token")
		}
		if u, err := parseProfile(body, plan); err != nil {
			checkInputError(t, body, err)
		} else if u.CompanyName != nil && *u.CompanyName == "" {
			t.Fatal("profile accepted an empty company_name")
		}
		if code, err := parseCode(body); err != nil {
			checkInputError(t, body, err)
		} else if len(code) != 6 || strings.Trim(code, "0123456789") != "" {
			t.Fatalf("accepted code %q", code)
		}
		if email, err := parseEmailBody(body); err != nil {
			checkInputError(t, body, err)
		} else if email != strings.ToLower(email) || !strings.Contains(email, "@") {
			t.Fatalf("accepted email %q", email)
		}
		if r, err := parseReset(body); err != nil {
			checkInputError(t, body, err)
		} else {
			var fe fieldErrors
			checkPassword(&fe, "new_password", r.password)
			if len(fe) != 0 || r.token == "" {
				t.Fatalf("reset accepted: %+v", r)
			}
		}
		if pc, err := parsePasswordChange(body); err != nil {
			checkInputError(t, body, err)
		} else {
			var fe fieldErrors
			checkPassword(&fe, "new_password", pc.next)
			if len(fe) != 0 || pc.current == "" {
				t.Fatalf("password change accepted: %+v", pc)
			}
		}
	})
}

func FuzzParseSend(f *testing.F) {
	for _, s := range []string{
		`{"recipients":["0712345678","+254712345678","254733123456"],"message":"Hello"}`,
		`{"recipients":["0747123456"],"message":"x"}`,
		`{"recipients":["nope"],"message":"x","sender_id":"ACME"}`,
		`{"recipients":[],"message":""}`, `{"recipients":null}`, `{"message":"😀"}`,
		`{"recipients":[7],"message":"x"}`, `{"recipients":"0712345678"}`, `{"recipients":["0712345678"],"message":"x","sender_id":null}`,
	} {
		f.Add([]byte(s))
	}
	plan := carriers.DefaultPlan()
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := parseSend(body, plan)
		if err != nil {
			checkInputError(t, body, err)
			return
		}
		if n := len(in.recipients); n < 1 || n > maxRecipients {
			t.Fatalf("accepted %d recipients", n)
		}
		seen := map[uint32]bool{}
		for _, r := range in.recipients {
			if seen[r.NSN] {
				t.Fatalf("recipient %d twice", r.NSN)
			}
			seen[r.NSN] = true
			if r.Network < carriers.Safaricom || r.Network > carriers.Telkom {
				t.Fatalf("recipient %d on network %v", r.NSN, r.Network)
			}
			if n, err := plan.Normalize(r.E164()); err != nil || n.Network != r.Network {
				t.Fatalf("accepted recipient %s does not normalise back: %v", r.E164(), err)
			}
		}
		if n := utf8.RuneCountInString(in.message); n < 1 || n > maxMessageRunes || !utf8.ValidString(in.message) {
			t.Fatalf("accepted message of %d characters", n)
		}
		// Differential: the streaming recipients decoder must agree with the standard one.
		var ref struct {
			Recipients []string `json:"recipients"`
		}
		if err := json.Unmarshal(body, &ref); err != nil {
			t.Fatalf("fast path accepted %q, which encoding/json rejects: %v", body, err)
		}
		var want []uint32
		unique := map[uint32]bool{}
		for _, r := range ref.Recipients {
			n, err := plan.Normalize(r)
			if err != nil {
				t.Fatalf("fast path accepted %q, but %q does not normalise: %v", body, r, err)
			}
			nsn, _ := persistence.ParseE164(n.E164)
			if !unique[nsn] {
				unique[nsn] = true
				want = append(want, nsn)
			}
		}
		if len(want) != len(in.recipients) {
			t.Fatalf("body %q: %d recipients; encoding/json + Normalize give %d", body, len(in.recipients), len(want))
		}
		for i, r := range in.recipients {
			if r.NSN != want[i] {
				t.Fatalf("body %q: recipient %d = %d; want %d", body, i, r.NSN, want[i])
			}
		}
	})
}
