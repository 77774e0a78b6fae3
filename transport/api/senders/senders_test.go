package senders

import (
	"strings"
	"testing"
)

func TestNormaliseSenderName(t *testing.T) {
	tests := []struct{ in, want, problem string }{
		{"acme", "ACME", ""},
		{" Acme  Shop ", "ACMESHOP", ""},
		{"ab", "AB", ""},
		{"ABCDEFGHIJK", "ABCDEFGHIJK", ""},
		{"a", "", "2 to 11"},
		{"   ", "", "2 to 11"},
		{"ABCDEFGHIJKL", "", "2 to 11"},
		{"ACME-SHOP", "", "letters and digits"},
		{"ÄCME", "", "letters and digits"},
		{"ACME\x00", "", "letters and digits"},
		{"123", "123", ""},
	}
	for _, tt := range tests {
		got, msg := normaliseSenderName(tt.in)
		if got != tt.want || (tt.problem == "") != (msg == "") || !strings.Contains(msg, tt.problem) {
			t.Errorf("normaliseSenderName(%q) = %q, %q; want %q and a problem with %q", tt.in, got, msg, tt.want, tt.problem)
		}
	}
}

// Whatever comes in, a name that passes is 2 to 11 upper-case letters and digits.
func FuzzNormaliseSenderName(f *testing.F) {
	for _, s := range []string{"acme", " Acme  Shop ", "a", "ÄCME", "ACME-SHOP", "\x00\xff", strings.Repeat("a ", 20)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		name, msg := normaliseSenderName(in)
		if msg != "" {
			if name != "" {
				t.Fatalf("%q refused (%s) but named %q", in, msg, name)
			}
			return
		}
		if len(name) < 2 || len(name) > 11 || strings.Trim(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
			t.Fatalf("%q gave %q", in, name)
		}
	})
}

func TestDocumentTypeByContent(t *testing.T) {
	for head, want := range map[string]string{
		"%PDF-1.7\n":            "application/pdf",
		"\x89PNG\r\n\x1a\n\x00": "image/png",
		"\xFF\xD8\xFF\xE1":      "image/jpeg",
		"GIF89a":                "",
		"%PD":                   "",
		"hello.pdf":             "",
		"":                      "",
	} {
		if got := documentType([]byte(head)); got != want {
			t.Errorf("documentType(%q) = %q; want %q", head, got, want)
		}
	}
}
