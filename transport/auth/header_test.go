package auth

import (
	"strings"
	"testing"
)

func TestParseBearer(t *testing.T) {
	tests := []struct {
		in, token string
		ok        bool
	}{
		{"Bearer abc.def.ghi", "abc.def.ghi", true},
		{"bearer abc", "abc", true},
		{"BEARER  abc", "abc", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Basic dXNlcjpwYXNz", "", false},
		{"Bearer a b", "", false},
		{"Bearerabc", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		tok, ok := ParseBearer(tt.in)
		if tok != tt.token || ok != tt.ok {
			t.Errorf("ParseBearer(%q) = %q, %v; want %q, %v", tt.in, tok, ok, tt.token, tt.ok)
		}
	}
}

func TestAPIKeyShape(t *testing.T) {
	key, prefix, hash, err := NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	if !ValidAPIKeyShape(key) || !strings.HasPrefix(key, "sk_live_") || prefix != key[:12] || len(hash) != 32 {
		t.Fatalf("NewAPIKey = %q, %q, %d-byte hash; want a valid sk_live_ key, its first 12 chars, a SHA-256", key, prefix, len(hash))
	}
	for _, bad := range []string{"", "sk_live_", key[:len(key)-1], key + "x", "sk_test_" + key[8:], key[:20] + "!" + key[21:]} {
		if ValidAPIKeyShape(bad) {
			t.Errorf("ValidAPIKeyShape(%q) = true; want false", bad)
		}
	}
}

func FuzzParseBearer(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer  x.y.z", "Basic abc", "Bearer a\tb", "", "Bearer \x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		tok, ok := ParseBearer(header)
		if !ok {
			if tok != "" {
				t.Fatalf("ParseBearer(%q) = %q with ok=false", header, tok)
			}
			return
		}
		if tok == "" || strings.ContainsAny(tok, " \t\r\n") || !strings.HasSuffix(header, tok) {
			t.Fatalf("ParseBearer(%q) = %q; want the non-empty token that ends the header", header, tok)
		}
		if !strings.EqualFold(header[:6], "bearer") {
			t.Fatalf("ParseBearer(%q) accepted another scheme", header)
		}
	})
}

func FuzzValidAPIKeyShape(f *testing.F) {
	key, _, _, _ := NewAPIKey()
	for _, s := range []string{key, "sk_live_", "x", key + "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidAPIKeyShape(s) && (len(s) != 51 || !strings.HasPrefix(s, APIKeyPrefix) || strings.ContainsAny(s[8:], "_-+/= \n")) {
			t.Fatalf("ValidAPIKeyShape(%q) = true for a malformed key", s)
		}
	})
}

func TestPasswordsRoundTrip(t *testing.T) {
	p, err := NewPasswords(4)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("Ab1", 40) // > 72 bytes: every byte must count
	h, err := p.Hash(long)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Verify(h, long) {
		t.Error("Verify rejects the right password")
	}
	if p.Verify(h, long[:len(long)-1]+"X") {
		t.Error("Verify accepts a password differing after byte 72")
	}
	if p.Verify("", long) {
		t.Error("Verify accepts against an empty hash")
	}
}

// SMPP passwords fit SMPP 3.4's 8 characters, are letters and digits any ESME's
// configuration holds, and are drawn afresh each time.
func TestNewSMPPPassword(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		p, err := NewSMPPPassword()
		if err != nil {
			t.Fatal(err)
		}
		if len(p) != SMPPPasswordLen || strings.Trim(p, base62) != "" {
			t.Fatalf("NewSMPPPassword() = %q; want %d base62 characters", p, SMPPPasswordLen)
		}
		if seen[p] {
			t.Fatalf("NewSMPPPassword() gave %q twice in 200", p)
		}
		seen[p] = true
	}
}
