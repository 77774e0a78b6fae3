package persistence_test

import (
	"strings"
	"testing"

	"github.com/tuma-sms/tuma/persistence"
)

func TestSearchTerm(t *testing.T) {
	for in, want := range map[string]string{
		"0712 345":       "254712345",
		"+254-712":       "254712",
		"254712":         "254712",
		"712345":         "712345",
		"0":              "0",
		"  Jane  DOE ":   "jane doe",
		"o'brien":        "o'brien",
		"50%":            "50%",
		"":               "",
		"07 12 34 56 78": "254712345678",
	} {
		if got := persistence.SearchTerm(in); got != want {
			t.Errorf("SearchTerm(%q) = %q; want %q", in, got, want)
		}
	}
}

// Whatever is typed, the term is either digits (a phone's, a leading 0 read as 254) or
// lower-case text without runs of spaces.
func FuzzSearchTerm(f *testing.F) {
	for _, s := range []string{"0712", "+254 712", "Jane", "50%_", "\x00", "ÄÖ 07"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := persistence.SearchTerm(in)
		if got != strings.ToLower(got) && strings.Trim(got, "0123456789") != "" {
			t.Fatalf("SearchTerm(%q) = %q is not lower-case", in, got)
		}
		if strings.Contains(got, "  ") || strings.TrimSpace(got) != got {
			t.Fatalf("SearchTerm(%q) = %q has stray spaces", in, got)
		}
		if strings.HasPrefix(got, "0") && len(got) > 1 && strings.Trim(got, "0123456789") == "" {
			t.Fatalf("SearchTerm(%q) = %q kept a leading 0", in, got)
		}
	})
}
