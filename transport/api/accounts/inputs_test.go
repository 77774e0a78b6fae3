package accounts

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/api/apitest"
)

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
			apitest.CheckInputError(t, body, err)
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
		var fe api.FieldErrors
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
			apitest.CheckInputError(t, body, err)
		} else if c.email == "" || c.password == "" {
			t.Fatalf("login accepted without email or password: %+v", c)
		}
		if tok, err := parseRefresh(body); err != nil {
			apitest.CheckInputError(t, body, err)
		} else if tok == "" {
			t.Fatal("refresh accepted an empty token")
		}
		if u, err := parseProfile(body, plan); err != nil {
			apitest.CheckInputError(t, body, err)
		} else if u.CompanyName != nil && *u.CompanyName == "" {
			t.Fatal("profile accepted an empty company_name")
		}
		if code, err := parseCode(body); err != nil {
			apitest.CheckInputError(t, body, err)
		} else if len(code) != 6 || strings.Trim(code, "0123456789") != "" {
			t.Fatalf("accepted code %q", code)
		}
		if email, err := parseEmailBody(body); err != nil {
			apitest.CheckInputError(t, body, err)
		} else if email != strings.ToLower(email) || !strings.Contains(email, "@") {
			t.Fatalf("accepted email %q", email)
		}
		if r, err := parseReset(body); err != nil {
			apitest.CheckInputError(t, body, err)
		} else {
			var fe api.FieldErrors
			checkPassword(&fe, "new_password", r.password)
			if len(fe) != 0 || r.token == "" {
				t.Fatalf("reset accepted: %+v", r)
			}
		}
		if pc, err := parsePasswordChange(body); err != nil {
			apitest.CheckInputError(t, body, err)
		} else {
			var fe api.FieldErrors
			checkPassword(&fe, "new_password", pc.next)
			if len(fe) != 0 || pc.current == "" {
				t.Fatalf("password change accepted: %+v", pc)
			}
		}
	})
}

func TestPasswordPolicy(t *testing.T) {
	tests := []struct {
		pw   string
		want []string
	}{
		{"Secret123", nil},
		{"Sh0rt", []string{"must be at least 8 characters long"}},
		{"lowercase1", []string{"must contain at least one uppercase letter"}},
		{"NoDigitsHere", []string{"must contain at least one digit"}},
		{"short", []string{"must be at least 8 characters long", "must contain at least one uppercase letter", "must contain at least one digit"}},
	}
	for _, tt := range tests {
		var fe api.FieldErrors
		checkPassword(&fe, "password", tt.pw)
		var got []string
		for _, e := range fe {
			if e.Field != "password" {
				t.Errorf("checkPassword(%q) names field %q; want password", tt.pw, e.Field)
			}
			got = append(got, e.Message)
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("checkPassword(%q) = %q; want %q", tt.pw, got, tt.want)
		}
	}
}

// PostgreSQL cannot store U+0000: every body that carries one is a 422 naming the field,
// before anything reaches the store (it was a 500).
func TestNulInABodyIsRefused(t *testing.T) {
	plan := carriers.DefaultPlan()
	apitest.CheckNulRefused(t, map[string]func() error{
		"register": func() error {
			_, err := parseRegistration([]byte(`{"email":"a@b.co","password":"Secret123","full_name":"J\u0000","company_name":"A"}`), plan)
			return err
		},
		"login": func() error {
			_, err := parseLogin([]byte(`{"email":"a\u0000@b.co","password":"x"}`))
			return err
		},
		"profile": func() error {
			_, err := parseProfile([]byte(`{"country":"K\u0000E"}`), plan)
			return err
		},
	})
}
