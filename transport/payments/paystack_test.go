package payments

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// paystackStub answers like Paystack's API; handle decides per request.
func paystackStub(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, body map[string]any)) *Paystack {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if r.Body != nil {
			b, _ := io.ReadAll(r.Body)
			if len(b) > 0 {
				if err := json.Unmarshal(b, &body); err != nil {
					t.Errorf("request body %q is not JSON: %v", b, err)
				}
			}
		}
		handle(w, r, body)
	}))
	t.Cleanup(srv.Close)
	return NewPaystack("paystack", srv.URL+"/", "sk_test_secret", &http.Client{Timeout: 2 * time.Second})
}

func TestInitializeSpeaksPaystack(t *testing.T) {
	p := paystackStub(t, func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		if r.Method != "POST" || r.URL.Path != "/transaction/initialize" {
			t.Errorf("%s %s; want POST /transaction/initialize", r.Method, r.URL.Path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer sk_test_secret" {
			t.Errorf("Authorization %q", got)
		}
		// Amounts go in the KES subunit, as a JSON integer.
		if body["amount"] != 150000.0 || body["currency"] != "KES" || body["email"] != "a@b.co" ||
			body["reference"] != "TUMA-ABC" || body["callback_url"] != "https://api.example.com/wallet/callback" {
			t.Errorf("initialize body %v", body)
		}
		if md, _ := body["metadata"].(map[string]any); md["purpose"] != "wallet_topup" {
			t.Errorf("metadata %v", body["metadata"])
		}
		w.Write([]byte(`{"status":true,"message":"Authorization URL created","data":{"authorization_url":"https://checkout.paystack.com/0peioxfhpn","access_code":"0peioxfhpn","reference":"TUMA-ABC"}}`))
	})
	co, err := p.Initialize(context.Background(), Init{AmountCents: 150000, Currency: "KES", Email: "a@b.co", Reference: "TUMA-ABC",
		CallbackURL: "https://api.example.com/wallet/callback", Metadata: map[string]string{"purpose": "wallet_topup"}})
	if err != nil {
		t.Fatal(err)
	}
	if co.AuthorizationURL != "https://checkout.paystack.com/0peioxfhpn" || co.AccessCode != "0peioxfhpn" {
		t.Errorf("checkout %+v", co)
	}
}

func TestProviderFailuresAreTyped(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		want   error
	}{
		{"server error", 502, `<html>bad gateway</html>`, ErrUnavailable},
		{"rate limited", 429, `{"status":false,"message":"slow down"}`, ErrUnavailable},
		{"unreadable 200", 200, `not json`, ErrUnavailable},
		{"status false", 200, `{"status":false,"message":"Invalid key"}`, new(RejectedError)},
		{"refused", 401, `{"status":false,"message":"Invalid key"}`, new(RejectedError)},
		{"no access code", 200, `{"status":true,"message":"ok","data":{}}`, ErrUnavailable},
	}
	for _, c := range cases {
		p := paystackStub(t, func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			w.WriteHeader(c.status)
			w.Write([]byte(c.body))
		})
		_, err := p.Initialize(context.Background(), Init{AmountCents: 5000, Currency: "KES", Email: "a@b.co", Reference: "TUMA-X"})
		var rej *RejectedError
		switch want := c.want.(type) {
		case *RejectedError:
			if !errors.As(err, &rej) || rej.Message != "Invalid key" {
				t.Errorf("%s: err %v; want a rejection saying Invalid key", c.name, err)
			}
		default:
			if !errors.Is(err, want) {
				t.Errorf("%s: err %v; want %v", c.name, err, want)
			}
		}
	}
	// Nothing listening at all.
	p := NewPaystack("paystack", "http://127.0.0.1:1", "k", &http.Client{Timeout: time.Second})
	if _, err := p.Verify(context.Background(), "TUMA-X"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("unreachable provider: %v; want ErrUnavailable", err)
	}
}

func TestVerify(t *testing.T) {
	p := paystackStub(t, func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		switch r.URL.EscapedPath() {
		case "/transaction/verify/TUMA-OK":
			w.Write([]byte(`{"status":true,"message":"Verification successful","data":{"id":4099260516,"status":"success",
				"reference":"TUMA-OK","amount":40333,"requested_amount":30050,"currency":"KES","paid_at":"2024-08-22T09:15:02.000Z",
				"gateway_response":"Successful","customer":{"email":"a@b.co"}}}`))
		case "/transaction/verify/TUMA-NONE":
			w.WriteHeader(400)
			w.Write([]byte(`{"status":false,"message":"Transaction reference not found"}`))
		default:
			t.Errorf("unexpected path %s", r.URL.EscapedPath())
			w.WriteHeader(500)
		}
	})
	tx, err := p.Verify(context.Background(), "TUMA-OK")
	if err != nil {
		t.Fatal(err)
	}
	if tx.Status != "success" || tx.Amount != 40333 || tx.RequestedAmount != 30050 || tx.Currency != "KES" || tx.Customer.Email != "a@b.co" {
		t.Errorf("transaction %+v", tx)
	}
	if at := tx.PaidTime(time.Time{}); !at.Equal(time.Date(2024, 8, 22, 9, 15, 2, 0, time.UTC)) {
		t.Errorf("paid at %v", at)
	}
	if _, err := p.Verify(context.Background(), "TUMA-NONE"); !errors.Is(err, ErrUnknownReference) {
		t.Errorf("unknown reference: %v", err)
	}
}

func TestPaystackSignature(t *testing.T) {
	body := []byte(`{"event":"charge.success","data":{"reference":"TUMA-1"}}`)
	s := PaystackHMAC{Secret: []byte("sk_test_secret")}
	// hex(HMAC-SHA512(body, key)), computed independently:
	// printf '%s' "$body" | openssl dgst -sha512 -hmac sk_test_secret
	const want = "ed4a476941c6501e414d4720e78aa41e1485358ea7e01c08708997ad820db2cffd6eea87b100f2925214ba0ab4239c4bcd5a3aa37ebff32e3806d8242c061277"
	sig := s.Sign(body)
	if sig != want {
		t.Fatalf("signature %s; want %s", sig, want)
	}
	schemes := Schemes{s}
	hdr := func(v string) func(string) string {
		return func(name string) string {
			if strings.EqualFold(name, PaystackSignatureHeader) {
				return v
			}
			return ""
		}
	}
	if name, err := schemes.Verify(hdr(sig), body); err != nil || name != "paystack-hmac-sha512" {
		t.Errorf("good signature: %q %v", name, err)
	}
	if _, err := schemes.Verify(hdr(strings.ToUpper(sig)), body); err != nil {
		t.Errorf("upper-case hex refused: %v", err)
	}
	bad := []struct{ name, sig string }{
		{"missing", ""}, {"not hex", "zz"}, {"other body", s.Sign([]byte(`{}`))}, {"truncated", sig[:64]},
		{"other key", PaystackHMAC{Secret: []byte("other")}.Sign(body)},
	}
	for _, b := range bad {
		if _, err := schemes.Verify(hdr(b.sig), body); err == nil {
			t.Errorf("%s signature accepted", b.name)
		}
	}
	if _, err := schemes.Verify(hdr(sig), append(body, ' ')); err == nil {
		t.Error("a changed body passed")
	}
}

func TestValidReference(t *testing.T) {
	for ref, want := range map[string]bool{
		"TUMA-ABC234": true, "SBX-abc.1=": true, strings.Repeat("A", 100): true,
		"": false, strings.Repeat("A", 101): false, "a b": false, "a\x00b": false, "\xed\xa0\x80": false, "TUMA_X": false,
	} {
		if got := ValidReference(ref); got != want {
			t.Errorf("ValidReference(%q) = %v; want %v", ref, got, want)
		}
	}
}
