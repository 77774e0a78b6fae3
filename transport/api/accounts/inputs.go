package accounts

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

// Each endpoint's body is decoded and validated by a pure function of the bytes, so the
// fuzzers can drive exactly what the handlers run.

type registration struct {
	account  persistence.NewAccount // without the hashes, which the handler adds
	password string
}

// Registration is what signing up takes: the body of POST /auth/register, or the sign-up
// form's fields.
type Registration struct {
	Email        string `json:"email"`
	Password     string `json:"password"`
	FullName     string `json:"full_name"`
	CompanyName  string `json:"company_name"`
	Phone        string `json:"phone"`
	BusinessType string `json:"business_type"`
	Country      string `json:"country"`
}

func parseRegistration(body []byte, plan *carriers.Plan) (registration, error) {
	var in Registration
	if err := api.ParseJSON(body, &in); err != nil {
		return registration{}, err
	}
	return in.check(plan)
}

// check validates and normalises a registration; errors name the API's fields.
func (in Registration) check(plan *carriers.Plan) (registration, error) {
	var fe api.FieldErrors
	email, ok := api.NormalizeEmail(in.Email)
	if !ok {
		fe.Add("email", "must be a valid email address")
	}
	checkPassword(&fe, "password", in.Password)
	r := registration{password: in.Password, account: persistence.NewAccount{
		Email:        email,
		FullName:     api.CheckText(&fe, "full_name", in.FullName, 1, 100),
		CompanyName:  api.CheckText(&fe, "company_name", in.CompanyName, 1, 60),
		Phone:        normalizePhone(&fe, "phone", in.Phone, plan),
		BusinessType: api.CheckText(&fe, "business_type", in.BusinessType, 0, 60),
		Country:      api.CheckText(&fe, "country", in.Country, 0, 60),
	}}
	return r, fe.Err()
}

type credentials struct {
	email    string // normalised; may be invalid, which simply matches no account
	password string
}

// Credentials are what signing in takes: the body of POST /auth/login, or the sign-in form's
// fields.
type Credentials struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

func parseLogin(body []byte) (credentials, error) {
	var in Credentials
	if err := api.ParseJSON(body, &in); err != nil {
		return credentials{}, err
	}
	return in.check()
}

func (in Credentials) check() (credentials, error) {
	var fe api.FieldErrors
	if in.Email == "" {
		fe.Add("email", "is required")
	}
	if in.Password == "" {
		fe.Add("password", "is required")
	}
	email, ok := api.NormalizeEmail(in.Email)
	if !ok {
		email = in.Email
	}
	return credentials{email: email, password: in.Password}, fe.Err()
}

func parseRefresh(body []byte) (string, error) {
	var in struct {
		RefreshToken string `json:"refresh_token"`
	}
	if err := api.ParseJSON(body, &in); err != nil {
		return "", err
	}
	if in.RefreshToken == "" {
		return "", api.Invalid(api.FieldError{Field: "refresh_token", Message: "is required"})
	}
	return in.RefreshToken, nil
}

// Profile is a change of an account's profile: the body of PATCH /auth/profile, or the
// Settings form's fields. A nil field stays as it is.
type Profile struct {
	FullName, CompanyName, Phone, BusinessType, Country *string
	OptOutText                                          *string // appended to promotional messages
	QuietHours                                          *Quiet  // nil: unchanged
}

// Quiet is quiet hours as asked: none (Off), or from Start to End, "HH:MM" on Nairobi's clock.
type Quiet struct {
	Off        bool
	Start, End *string
}

func parseProfile(body []byte, plan *carriers.Plan) (persistence.ProfileUpdate, error) {
	var in struct {
		Email        json.RawMessage `json:"email"`
		FullName     *string         `json:"full_name"`
		CompanyName  *string         `json:"company_name"`
		Phone        *string         `json:"phone"`
		BusinessType *string         `json:"business_type"`
		Country      *string         `json:"country"`
		OptOutText   *string         `json:"opt_out_text"`
		QuietHours   json.RawMessage `json:"quiet_hours"`
	}
	if err := api.ParseJSON(body, &in); err != nil {
		return persistence.ProfileUpdate{}, err
	}
	var fe api.FieldErrors
	if in.Email != nil {
		fe.Add("email", "cannot be changed through the profile")
	}
	p := Profile{FullName: in.FullName, CompanyName: in.CompanyName, Phone: in.Phone, BusinessType: in.BusinessType,
		Country: in.Country, OptOutText: in.OptOutText}
	if in.QuietHours != nil {
		p.QuietHours = decodeQuiet(&fe, in.QuietHours)
	}
	return p.check(&fe, plan)
}

// check validates and normalises a profile change, adding to fe (errors found while decoding
// it); errors name the API's fields.
func (in Profile) check(fe *api.FieldErrors, plan *carriers.Plan) (persistence.ProfileUpdate, error) {
	text := func(field string, v *string, minLen, maxLen int) *string {
		if v == nil {
			return nil
		}
		s := api.CheckText(fe, field, *v, minLen, maxLen)
		return &s
	}
	u := persistence.ProfileUpdate{
		FullName:     text("full_name", in.FullName, 1, 100),
		CompanyName:  text("company_name", in.CompanyName, 1, 60),
		BusinessType: text("business_type", in.BusinessType, 0, 60),
		Country:      text("country", in.Country, 0, 60),
		OptOutText:   text("opt_out_text", in.OptOutText, 1, 60),
	}
	if in.QuietHours != nil {
		u.SetQuiet = true
		u.Quiet = in.QuietHours.check(fe)
	}
	if in.Phone != nil {
		p := normalizePhone(fe, "phone", *in.Phone, plan)
		u.Phone = &p
	}
	return u, fe.Err()
}

type passwordChange struct {
	current, next string
}

func parsePasswordChange(body []byte) (passwordChange, error) {
	var in struct {
		CurrentPassword string `json:"current_password"`
		NewPassword     string `json:"new_password"`
	}
	if err := api.ParseJSON(body, &in); err != nil {
		return passwordChange{}, err
	}
	pc := passwordChange{current: in.CurrentPassword, next: in.NewPassword}
	return pc, pc.check()
}

// check applies the rules of a password change: a 422 naming the fields that break them.
func (pc passwordChange) check() error {
	var fe api.FieldErrors
	if pc.current == "" {
		fe.Add("current_password", "is required")
	}
	checkPassword(&fe, "new_password", pc.next)
	return fe.Err()
}

// codeBody is the body of POST /auth/verify-code.
type codeBody struct {
	Code string `json:"code"`
}

// parseCode reads {"code": "123456"}: exactly six digits.
func parseCode(body []byte) (string, error) {
	var in codeBody
	if err := api.ParseJSON(body, &in); err != nil {
		return "", err
	}
	return checkCode(in.Code)
}

func checkCode(code string) (string, error) {
	if len(code) != 6 || strings.Trim(code, "0123456789") != "" {
		return "", api.Invalid(api.FieldError{Field: "code", Message: "must be the 6-digit code from the email"})
	}
	return code, nil
}

// emailBody is the body of the endpoints that take an address.
type emailBody struct {
	Email string `json:"email"`
}

// parseEmailBody reads {"email": "…"} and normalises the address.
func parseEmailBody(body []byte) (string, error) {
	var in emailBody
	if err := api.ParseJSON(body, &in); err != nil {
		return "", err
	}
	return checkEmail(in.Email)
}

func checkEmail(raw string) (string, error) {
	email, ok := api.NormalizeEmail(raw)
	if !ok {
		return "", api.Invalid(api.FieldError{Field: "email", Message: "must be a valid email address"})
	}
	return email, nil
}

type reset struct{ token, password string }

// PasswordReset is what choosing a new password with a reset token takes: the body of POST
// /auth/reset-password, or the reset form's fields.
type PasswordReset struct {
	Token       string `json:"token"`
	NewPassword string `json:"new_password"`
}

// parseReset reads {"token": "…", "new_password": "…"}, applying the password policy.
func parseReset(body []byte) (reset, error) {
	var in PasswordReset
	if err := api.ParseJSON(body, &in); err != nil {
		return reset{}, err
	}
	return in.check()
}

func (in PasswordReset) check() (reset, error) {
	var fe api.FieldErrors
	if in.Token == "" {
		fe.Add("token", "is required")
	}
	checkPassword(&fe, "new_password", in.NewPassword)
	return reset{token: in.Token, password: in.NewPassword}, fe.Err()
}

// checkPassword applies the password policy, adding one error per broken rule.
func checkPassword(fe *api.FieldErrors, field, pw string) {
	if utf8.RuneCountInString(pw) < 8 {
		fe.Add(field, "must be at least 8 characters long")
	}
	if len(pw) > 1024 {
		fe.Add(field, "must be at most 1024 bytes long")
	}
	var upper, digit bool
	for _, r := range pw {
		upper = upper || unicode.IsUpper(r)
		digit = digit || unicode.IsDigit(r)
	}
	if !upper {
		fe.Add(field, "must contain at least one uppercase letter")
	}
	if !digit {
		fe.Add(field, "must contain at least one digit")
	}
}

// normalizePhone turns any accepted Kenyan form into E.164 ("" stays "").
func normalizePhone(fe *api.FieldErrors, field, raw string, plan *carriers.Plan) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	n, err := plan.Normalize(raw)
	if err != nil && !errors.Is(err, carriers.ErrUnsupportedNetwork) {
		fe.Add(field, "must be a Kenyan mobile number such as 0712345678 or +254712345678")
		return raw
	}
	return n.E164
}

// decodeQuiet reads {"start":"HH:MM","end":"HH:MM"} (Nairobi's clock), or null: none. A value
// of another shape is an error in fe, and nil.
func decodeQuiet(fe *api.FieldErrors, raw json.RawMessage) *Quiet {
	if string(raw) == "null" {
		return &Quiet{Off: true}
	}
	var in struct {
		Start *string `json:"start"`
		End   *string `json:"end"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		fe.Add("quiet_hours", `must be {"start":"HH:MM","end":"HH:MM"} (Africa/Nairobi), or null to turn them off`)
		return nil
	}
	return &Quiet{Start: in.Start, End: in.End}
}

// check is the window asked for (nil: none), its errors in fe.
func (in Quiet) check(fe *api.FieldErrors) *persistence.QuietHours {
	if in.Off {
		return nil
	}
	clock := func(field string, v *string) int {
		if v == nil {
			fe.Add(field, "is required: a time of day as HH:MM (Africa/Nairobi)")
			return 0
		}
		m, err := persistence.ParseClock(*v)
		if err != nil {
			fe.Add(field, "must be a time of day as HH:MM, 00:00 to 23:59 (Africa/Nairobi)")
		}
		return m
	}
	q := persistence.QuietHours{Start: clock("quiet_hours.start", in.Start), End: clock("quiet_hours.end", in.End)}
	if in.Start != nil && in.End != nil && *in.Start == *in.End {
		fe.Add("quiet_hours.end", "must differ from start; send null to turn quiet hours off")
	}
	return &q
}
