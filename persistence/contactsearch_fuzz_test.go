package persistence

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// Whatever is typed, the search is SQL made of fixed text and numbered arguments only: every
// argument used, none beyond those given, each valid text for the server, and nothing typed in
// the statement itself.
func FuzzSearch(f *testing.F) {
	for _, s := range []string{"0712 345", "jan", "otieno mw", "5678", "a' OR '1'='1", "$1", "ÉMI", "x; DROP TABLE contacts", "  ", "\xff"} {
		f.Add(s, 2)
	}
	placeholder := regexp.MustCompile(`\$([0-9]+)`)
	f.Fuzz(func(t *testing.T, raw string, next int) {
		next = 1 + (next%8+8)%8
		term := SearchTerm(raw)
		if term == "" {
			return
		}
		s := newSearch(term, next)
		if strings.ContainsAny(s.cond, "';\\\"") || strings.Contains(s.cond, "--") || strings.Contains(s.cond, "/*") {
			t.Fatalf("search %q wrote %q", raw, s.cond)
		}
		used := map[int]bool{}
		for _, m := range placeholder.FindAllStringSubmatch(s.cond, -1) {
			n, _ := strconv.Atoi(m[1])
			if n < next || n >= next+len(s.args) {
				t.Fatalf("search %q: $%d outside $%d..$%d in %q", raw, n, next, next+len(s.args)-1, s.cond)
			}
			used[n] = true
		}
		if len(used) != len(s.args) {
			t.Fatalf("search %q: %d arguments, %d used in %q", raw, len(s.args), len(used), s.cond)
		}
		for _, a := range s.args {
			if v, ok := a.(string); ok && (!utf8.ValidString(v) || strings.ContainsRune(v, 0)) && utf8.ValidString(raw) && !strings.ContainsRune(raw, 0) {
				t.Fatalf("search %q: argument %q is not text the server takes", raw, v)
			}
		}
		if s.word != "" && (strings.Contains(s.word, " ") || s.word != term) {
			t.Fatalf("search %q counted by word %q", raw, s.word)
		}
	})
}
