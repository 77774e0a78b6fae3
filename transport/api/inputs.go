package api

import (
	"encoding/json"
	"strings"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// Each endpoint's body is decoded and validated by a pure function of the bytes, so the
// fuzzers can drive exactly what the handlers run.

type registration struct {
	account  persistence.NewAccount // without the hashes, which the handler adds
	password string
}

func parseRegistration(body []byte, plan *carriers.Plan) (registration, error) {
	var in struct {
		Email        string `json:"email"`
		Password     string `json:"password"`
		FullName     string `json:"full_name"`
		CompanyName  string `json:"company_name"`
		Phone        string `json:"phone"`
		BusinessType string `json:"business_type"`
		Country      string `json:"country"`
	}
	if err := decodeJSONBytes(body, &in); err != nil {
		return registration{}, err
	}
	var fe fieldErrors
	email, ok := normalizeEmail(in.Email)
	if !ok {
		fe.add("email", "must be a valid email address")
	}
	checkPassword(&fe, "password", in.Password)
	r := registration{password: in.Password, account: persistence.NewAccount{
		Email:        email,
		FullName:     checkText(&fe, "full_name", in.FullName, 1, 100),
		CompanyName:  checkText(&fe, "company_name", in.CompanyName, 1, 60),
		Phone:        normalizePhone(&fe, "phone", in.Phone, plan),
		BusinessType: checkText(&fe, "business_type", in.BusinessType, 0, 60),
		Country:      checkText(&fe, "country", in.Country, 0, 60),
	}}
	return r, fe.err()
}

type credentials struct {
	email    string // normalised; may be invalid, which simply matches no account
	password string
}

func parseLogin(body []byte) (credentials, error) {
	var in struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := decodeJSONBytes(body, &in); err != nil {
		return credentials{}, err
	}
	var fe fieldErrors
	if in.Email == "" {
		fe.add("email", "is required")
	}
	if in.Password == "" {
		fe.add("password", "is required")
	}
	email, ok := normalizeEmail(in.Email)
	if !ok {
		email = in.Email
	}
	return credentials{email: email, password: in.Password}, fe.err()
}

func parseRefresh(body []byte) (string, error) {
	var in struct {
		RefreshToken string `json:"refresh_token"`
	}
	if err := decodeJSONBytes(body, &in); err != nil {
		return "", err
	}
	if in.RefreshToken == "" {
		return "", invalid(FieldError{Field: "refresh_token", Message: "is required"})
	}
	return in.RefreshToken, nil
}

func parseProfile(body []byte, plan *carriers.Plan) (persistence.ProfileUpdate, error) {
	var in struct {
		Email        json.RawMessage `json:"email"`
		FullName     *string         `json:"full_name"`
		CompanyName  *string         `json:"company_name"`
		Phone        *string         `json:"phone"`
		BusinessType *string         `json:"business_type"`
		Country      *string         `json:"country"`
	}
	if err := decodeJSONBytes(body, &in); err != nil {
		return persistence.ProfileUpdate{}, err
	}
	var fe fieldErrors
	if in.Email != nil {
		fe.add("email", "cannot be changed through the profile")
	}
	text := func(field string, v *string, minLen, maxLen int) *string {
		if v == nil {
			return nil
		}
		s := checkText(&fe, field, *v, minLen, maxLen)
		return &s
	}
	u := persistence.ProfileUpdate{
		FullName:     text("full_name", in.FullName, 1, 100),
		CompanyName:  text("company_name", in.CompanyName, 1, 60),
		BusinessType: text("business_type", in.BusinessType, 0, 60),
		Country:      text("country", in.Country, 0, 60),
	}
	if in.Phone != nil {
		p := normalizePhone(&fe, "phone", *in.Phone, plan)
		u.Phone = &p
	}
	return u, fe.err()
}

type passwordChange struct {
	current, next string
}

func parsePasswordChange(body []byte) (passwordChange, error) {
	var in struct {
		CurrentPassword string `json:"current_password"`
		NewPassword     string `json:"new_password"`
	}
	if err := decodeJSONBytes(body, &in); err != nil {
		return passwordChange{}, err
	}
	var fe fieldErrors
	if in.CurrentPassword == "" {
		fe.add("current_password", "is required")
	}
	checkPassword(&fe, "new_password", in.NewPassword)
	return passwordChange{current: in.CurrentPassword, next: in.NewPassword}, fe.err()
}

// parseCode reads {"code": "123456"}: exactly six digits.
func parseCode(body []byte) (string, error) {
	var in struct {
		Code string `json:"code"`
	}
	if err := decodeJSONBytes(body, &in); err != nil {
		return "", err
	}
	if len(in.Code) != 6 || strings.Trim(in.Code, "0123456789") != "" {
		return "", invalid(FieldError{Field: "code", Message: "must be the 6-digit code from the email"})
	}
	return in.Code, nil
}

// parseEmailBody reads {"email": "…"} and normalises the address.
func parseEmailBody(body []byte) (string, error) {
	var in struct {
		Email string `json:"email"`
	}
	if err := decodeJSONBytes(body, &in); err != nil {
		return "", err
	}
	email, ok := normalizeEmail(in.Email)
	if !ok {
		return "", invalid(FieldError{Field: "email", Message: "must be a valid email address"})
	}
	return email, nil
}

type reset struct{ token, password string }

// parseReset reads {"token": "…", "new_password": "…"}, applying the password policy.
func parseReset(body []byte) (reset, error) {
	var in struct {
		Token       string `json:"token"`
		NewPassword string `json:"new_password"`
	}
	if err := decodeJSONBytes(body, &in); err != nil {
		return reset{}, err
	}
	var fe fieldErrors
	if in.Token == "" {
		fe.add("token", "is required")
	}
	checkPassword(&fe, "new_password", in.NewPassword)
	return reset{token: in.Token, password: in.NewPassword}, fe.err()
}
