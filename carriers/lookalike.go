package carriers

import (
	"strings"
	"unicode/utf8"
)

// Replacement is one look-alike character replaced throughout a text: every From became To
// ("" when the character was removed), Count times.
type Replacement struct {
	From, To string
	Count    int
}

// Lookalike is a text that needed UCS-2 made GSM-7 by replacing look-alike characters.
type Lookalike struct {
	Text         string
	Replacements []Replacement // in the order each character first appears in the original
}

// ReplaceLookalikes replaces the look-alike characters of text (see lookalike) and returns the
// result when that turns a UCS-2 text into a GSM-7 one, as Segment measures both; otherwise
// nil. Nothing is offered for a text that is GSM-7 already, or that stays UCS-2 (it has a
// character with no look-alike, such as an emoji), since then no part would be saved.
//
// A UCS-2 part holds 70 characters and a GSM-7 part 160, so a curly quote pasted from a word
// processor can more than double a message's cost; this is what a quote suggests instead.
// It is never applied to a send: the caller decides.
func ReplaceLookalikes(text string) *Lookalike {
	if Segment(text).Encoding != UCS2 {
		return nil
	}
	var (
		b    strings.Builder
		reps []Replacement
		done int // bytes of text already copied to b
	)
	for i, r := range text {
		to, ok := lookalike(r)
		if !ok {
			continue
		}
		if reps == nil {
			b.Grow(len(text))
		}
		b.WriteString(text[done:i])
		b.WriteString(to)
		done = i + utf8.RuneLen(r)
		from := string(r)
		found := false
		for k := range reps {
			if reps[k].From == from {
				reps[k].Count++
				found = true
				break
			}
		}
		if !found {
			reps = append(reps, Replacement{From: from, To: to, Count: 1})
		}
	}
	if reps == nil {
		return nil
	}
	b.WriteString(text[done:])
	out := b.String()
	if Segment(out).Encoding != GSM7 {
		return nil
	}
	return &Lookalike{Text: out, Replacements: reps}
}

// lookalike is the GSM-7 text that stands in for r, if r has one. The table is deliberately
// small: only punctuation and spacing that word processors and phones substitute for ASCII
// behind the writer's back, whose replacement reads the same. Letters are never replaced
// (ç is not Ç, and dropping an accent changes a word), nor are symbols with a meaning of
// their own (™, °, emoji).
//
//	‘ ’ ‚ ‛ ′              single quotes and the prime       → '
//	“ ” „ ‟ ″ « »          double quotes, double prime, guillemets → "
//	‐ ‑ ‒ – — ―            hyphens and dashes                → -
//	…                      ellipsis                          → ...
//	•                      bullet                            → - (a list marker in plain text;
//	                                                            * reads as a USSD code's star)
//	U+00A0 U+2000–U+200A U+202F U+205F U+3000  no-break and typographic spaces → space
//	U+200B U+200C U+200D U+FEFF                zero-width characters           → removed
func lookalike(r rune) (string, bool) {
	switch r {
	case '\u2018', '\u2019', '\u201A', '\u201B', '\u2032':
		return "'", true
	case '\u201C', '\u201D', '\u201E', '\u201F', '\u2033', '\u00AB', '\u00BB':
		return `"`, true
	case '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2022':
		return "-", true
	case '\u2026':
		return "...", true
	case '\u00A0', '\u202F', '\u205F', '\u3000':
		return " ", true
	case '\u200B', '\u200C', '\u200D', '\uFEFF':
		return "", true
	}
	if '\u2000' <= r && r <= '\u200A' {
		return " ", true
	}
	return "", false
}
