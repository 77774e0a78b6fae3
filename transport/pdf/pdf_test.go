package pdf

import (
	"bytes"
	"strings"
	"testing"
)

func TestPDFStringEscapesAndWraps(t *testing.T) {
	if got := literal(`a(b)c\d é 日`); got != `a\(b\)c\\d \351 ?` {
		t.Errorf("literal = %q", got)
	}
	lines := wrap("one two three four five", 9)
	if strings.Join(lines, "|") != "one two|three|four five" {
		t.Errorf("wrap = %q", lines)
	}
	if got := wrap(strings.Repeat("x", 20), 8); len(got) != 3 || got[0] != "xxxxxxxx" {
		t.Errorf("a long word wraps as %q", got)
	}
	pdf := Page("Title", []Line{{Text: "Hello (world)", Bold: true}})
	if !bytes.HasPrefix(pdf, []byte("%PDF-1.4")) || !bytes.Contains(pdf, []byte(`Hello \(world\)`)) || !bytes.HasSuffix(pdf, []byte("%%EOF\n")) {
		t.Errorf("Page = %s", pdf)
	}
}
