package payments

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseEvent(t *testing.T) {
	ev, err := ParseEvent([]byte(`{"event":"charge.success","data":{"id":302961,"domain":"live","status":"success",
		"reference":"TUMA-06H0708MP5RGH9Y6GZ1MW9Z3A8","amount":150000,"currency":"KES","channel":"mobile_money",
		"paid_at":"2026-11-22T13:45:22Z","customer":{"email":"a@b.co"},"authorization":{"channel":"mobile_money"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Event != EventChargeSuccess || ev.Data.Reference != "TUMA-06H0708MP5RGH9Y6GZ1MW9Z3A8" || ev.Data.Amount != 150000 ||
		ev.Data.Currency != "KES" || ev.Data.Customer.Email != "a@b.co" {
		t.Errorf("event %+v", ev)
	}
	for _, bad := range []string{
		``, `null`, `[]`, `{}`, `{"event":""}`, `{"event":"charge.success"}`, `{"event":"charge.success","data":{"reference":""}}`,
		`{"event":"charge.success","data":{"reference":"R"}} {}`, `{"event":5}`, `{"event":"charge.success","data":{"amount":"x","reference":"R"}}`,
		`{"event":"charge.success","data":{"reference":"` + strings.Repeat("R", 101) + `"}}`,
	} {
		if _, err := ParseEvent([]byte(bad)); !errors.Is(err, ErrMalformedEvent) {
			t.Errorf("ParseEvent(%q) = %v; want ErrMalformedEvent", bad, err)
		}
	}
	// Other events need no reference.
	if ev, err := ParseEvent([]byte(`{"event":"transfer.success","data":{}}`)); err != nil || ev.Event != "transfer.success" {
		t.Errorf("transfer event: %+v %v", ev, err)
	}
}

func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{
		`{"event":"charge.success","data":{"reference":"TUMA-1","amount":5000,"currency":"KES","status":"success"}}`,
		`{"event":"charge.success","data":{"reference":"TUMA-1","paid_at":null,"metadata":{"a":1}}}`,
		`{"event":"subscription.create","data":{}}`, `{"event":"charge.success","data":{"reference":" "}}`,
		`{"event":"charge.success","data":{"reference":"\u0000"}}`, `{"event":"x","data":[]}`, `{"event":"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := ParseEvent(body)
		if err != nil {
			if !errors.Is(err, ErrMalformedEvent) {
				t.Fatalf("error %v does not wrap ErrMalformedEvent", err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if ev.Event == "" || !utf8.ValidString(ev.Event) || !utf8.ValidString(ev.Data.Reference) || len(ev.Data.Reference) > maxReference {
			t.Fatalf("accepted event %+v", ev)
		}
		if ev.Event == EventChargeSuccess && ev.Data.Reference == "" {
			t.Fatalf("accepted a charge without a reference: %q", body)
		}
		if ev.Data.Reference != strings.TrimSpace(ev.Data.Reference) {
			t.Fatalf("reference %q not trimmed", ev.Data.Reference)
		}
	})
}

func FuzzPaystackSignature(f *testing.F) {
	f.Add([]byte(`{"event":"charge.success"}`), "00")
	f.Add([]byte(``), "")
	s := PaystackHMAC{Secret: []byte("k")}
	f.Fuzz(func(t *testing.T, body []byte, sig string) {
		hdr := func(string) string { return sig }
		ok := s.Valid(hdr, body)
		if ok != (strings.EqualFold(strings.TrimSpace(sig), s.Sign(body))) {
			t.Fatalf("Valid(%q) = %v for body %q", sig, ok, body)
		}
		if !s.Valid(func(string) string { return s.Sign(body) }, body) {
			t.Fatal("own signature refused")
		}
	})
}
