// Package pdf writes one-page text documents: enough for the sender ID letters' templates.
package pdf

import (
	"bytes"
	"fmt"
	"strings"
)

// Line is one line of a page: its text and whether it is bold.
type Line struct {
	Text string
	Bold bool
}

// Page renders lines as a one-page A4 PDF in Helvetica: blank lines keep their space, long
// lines wrap at the page's width. Text outside Windows-1252 shows as '?'.
func Page(title string, lines []Line) []byte {
	var content bytes.Buffer
	content.WriteString("BT\n/F1 11 Tf\n15 TL\n60 780 Td\n")
	for _, l := range lines {
		font := "/F1 11 Tf"
		if l.Bold {
			font = "/F2 11 Tf"
		}
		for _, w := range wrap(l.Text, 92) {
			fmt.Fprintf(&content, "%s (%s) Tj T*\n", font, literal(w))
		}
	}
	content.WriteString("ET\n")

	var b bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>")
	obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 4 0 R /F2 5 0 R >> >> /Contents 6 0 R >>")
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
	obj(fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", content.Len(), content.String()))
	obj(fmt.Sprintf("<< /Title (%s) /Producer (Tuma) >>", literal(title)))
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, len(offsets), xref)
	return b.Bytes()
}

// literal escapes text for a PDF literal string, in Windows-1252 (Latin-1 here).
func literal(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '(' || r == ')' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r >= 0xa0 && r <= 0xff:
			fmt.Fprintf(&b, "\\%03o", r)
		default:
			b.WriteByte('?')
		}
	}
	return b.String()
}

// wrap breaks text into lines of at most width characters at spaces (a longer word is cut);
// an empty text is one empty line.
func wrap(text string, width int) []string {
	words := strings.Fields(text)
	if len(words) == 0 {
		return []string{""}
	}
	var lines []string
	cur := ""
	for _, w := range words {
		for len([]rune(w)) > width {
			if cur != "" {
				lines, cur = append(lines, cur), ""
			}
			r := []rune(w)
			lines, w = append(lines, string(r[:width])), string(r[width:])
		}
		switch {
		case cur == "":
			cur = w
		case len([]rune(cur))+1+len([]rune(w)) <= width:
			cur += " " + w
		default:
			lines, cur = append(lines, cur), w
		}
	}
	return append(lines, cur)
}
