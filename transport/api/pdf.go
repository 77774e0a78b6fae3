// PDF: a one-page text document, enough for the sender ID letters' templates.

package api

import (
	"bytes"
	"fmt"
	"strings"
)

// pdfLine is one line of a page: its text and whether it is bold.
type pdfLine struct {
	text string
	bold bool
}

// pdfPage renders lines as a one-page A4 PDF in Helvetica: blank lines keep their space, long
// lines wrap at the page's width. Text outside Windows-1252 shows as '?'.
func pdfPage(title string, lines []pdfLine) []byte {
	var content bytes.Buffer
	content.WriteString("BT\n/F1 11 Tf\n15 TL\n60 780 Td\n")
	for _, l := range lines {
		font := "/F1 11 Tf"
		if l.bold {
			font = "/F2 11 Tf"
		}
		wrapped := wrapText(l.text, 92)
		for _, w := range wrapped {
			fmt.Fprintf(&content, "%s (%s) Tj T*\n", font, pdfString(w))
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
	obj(fmt.Sprintf("<< /Title (%s) /Producer (Tuma) >>", pdfString(title)))
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, len(offsets), xref)
	return b.Bytes()
}

// pdfString escapes text for a PDF literal string, in Windows-1252 (Latin-1 here).
func pdfString(s string) string {
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

// wrapText breaks text into lines of at most width characters at spaces (a longer word is
// cut); an empty text is one empty line.
func wrapText(text string, width int) []string {
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
