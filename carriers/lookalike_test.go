package carriers_test

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tuma-sms/tuma/carriers"
)

func TestReplaceLookalikes(t *testing.T) {
	type rep = carriers.Replacement
	tests := []struct {
		name string
		in   string
		want *carriers.Lookalike
	}{
		{"GSM-7 already", "Don't pay more than 100 KES", nil},
		{"empty", "", nil},
		{"curly single quotes", "Don’t miss ‘it’", &carriers.Lookalike{Text: "Don't miss 'it'",
			Replacements: []rep{{"’", "'", 2}, {"‘", "'", 1}}}},
		{"low and reversed single quotes, prime", "‚a‛ 5′", &carriers.Lookalike{Text: "'a' 5'",
			Replacements: []rep{{"‚", "'", 1}, {"‛", "'", 1}, {"′", "'", 1}}}},
		{"double quotes and guillemets", "“a” „b‟ 6″ «c»", &carriers.Lookalike{Text: `"a" "b" 6" "c"`,
			Replacements: []rep{{"“", `"`, 1}, {"”", `"`, 1}, {"„", `"`, 1}, {"‟", `"`, 1}, {"″", `"`, 1}, {"«", `"`, 1}, {"»", `"`, 1}}}},
		{"dashes", "a‐b‑c‒d–e—f―g", &carriers.Lookalike{Text: "a-b-c-d-e-f-g",
			Replacements: []rep{{"‐", "-", 1}, {"‑", "-", 1}, {"‒", "-", 1}, {"–", "-", 1}, {"—", "-", 1}, {"―", "-", 1}}}},
		{"ellipsis", "Wait…", &carriers.Lookalike{Text: "Wait...", Replacements: []rep{{"…", "...", 1}}}},
		{"bullet", "• one\n• two", &carriers.Lookalike{Text: "- one\n- two", Replacements: []rep{{"•", "-", 2}}}},
		{"no-break and typographic spaces", "KES\u00a0100\u2009off\u202fnow\u3000\u205f\u2000\u200a!",
			&carriers.Lookalike{Text: "KES 100 off now    !", Replacements: []rep{{"\u00a0", " ", 1}, {"\u2009", " ", 1},
				{"\u202f", " ", 1}, {"\u3000", " ", 1}, {"\u205f", " ", 1}, {"\u2000", " ", 1}, {"\u200a", " ", 1}}}},
		{"zero-width characters are removed", "\ufeffHi\u200b the\u200cre\u200d", &carriers.Lookalike{Text: "Hi there",
			Replacements: []rep{{"\ufeff", "", 1}, {"\u200b", "", 1}, {"\u200c", "", 1}, {"\u200d", "", 1}}}},
		{"extension characters stay GSM-7", "€5 – {now}", &carriers.Lookalike{Text: "€5 - {now}",
			Replacements: []rep{{"–", "-", 1}}}},
		{"an emoji keeps it UCS-2", "Don’t 🙂", nil},
		{"a letter outside the alphabet keeps it UCS-2", "Garçon’s", nil},
		{"UCS-2 without look-alikes", "Привет", nil},
		{"invalid UTF-8 keeps it UCS-2", "Don’t \xff", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := carriers.ReplaceLookalikes(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ReplaceLookalikes(%q) = %+v; want %+v", tt.in, got, tt.want)
			}
		})
	}
}

// The replacement can save parts: a 100-character text with one curly quote is two UCS-2
// parts and one GSM-7 part.
func TestReplaceLookalikesSavesParts(t *testing.T) {
	in := strings.Repeat("a", 99) + "’"
	got := carriers.ReplaceLookalikes(in)
	if got == nil {
		t.Fatal("ReplaceLookalikes = nil; want a GSM-7 text")
	}
	before, after := carriers.Segment(in), carriers.Segment(got.Text)
	if before.Encoding != carriers.UCS2 || before.Parts != 2 || after.Encoding != carriers.GSM7 || after.Parts != 1 {
		t.Errorf("segments %+v → %+v; want 2 UCS-2 parts → 1 GSM-7 part", before, after)
	}
}

func FuzzReplaceLookalikes(f *testing.F) {
	for _, s := range []string{"Don’t", "“Hi”…", "a\u00a0b\u200bc", "Garçon’s", "🙂’", "plain", "\xff’", "•\u3000—"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := carriers.ReplaceLookalikes(in)
		if got == nil {
			return
		}
		if e := carriers.Segment(in).Encoding; e != carriers.UCS2 {
			t.Fatalf("offered for a %v text %q", e, in)
		}
		if e := carriers.Segment(got.Text).Encoding; e != carriers.GSM7 {
			t.Fatalf("result %q of %q is %v; want gsm7", got.Text, in, e)
		}
		// The replacements, applied to the original, give the result; each is counted exactly,
		// listed once, in first-seen order, and is a single character.
		var pairs []string
		last := -1
		seen := map[string]bool{}
		for _, r := range got.Replacements {
			if utf8.RuneCountInString(r.From) != 1 || seen[r.From] {
				t.Fatalf("replacement %+v of %q: not one character listed once", r, in)
			}
			seen[r.From] = true
			if n := strings.Count(in, r.From); n != r.Count || r.Count == 0 {
				t.Fatalf("replacement %+v of %q: the text has %d", r, in, n)
			}
			at := strings.Index(in, r.From)
			if at < last {
				t.Fatalf("replacements %+v of %q: not in first-seen order", got.Replacements, in)
			}
			last = at
			pairs = append(pairs, r.From, r.To)
		}
		if want := strings.NewReplacer(pairs...).Replace(in); got.Text != want {
			t.Fatalf("ReplaceLookalikes(%q).Text = %q; want %q", in, got.Text, want)
		}
	})
}
