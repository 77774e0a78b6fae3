// Package contactcsv reads and writes contacts as CSV: the import's reader (streamed, header
// optional, BOM and CRLF tolerated), and the writers of the export and the import's report.
package contactcsv

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// ErrNotCSV is a file that is not text: NUL bytes, or not UTF-8.
var ErrNotCSV = errors.New("not a CSV file")

// MaxNameLen bounds a contact's first and last name, in characters.
const MaxNameLen = 100

// Reader reads a contacts CSV row by row. The first row is a header when its first cell is
// "phone" (its columns then name the fields, in any order); otherwise every row is phone,
// first_name, last_name by position.
type Reader struct {
	r      *csv.Reader
	plan   *carriers.Plan
	line   int
	cols   [3]int // where phone, first_name and last_name are (-1: absent)
	primed bool
}

// NewReader starts reading a CSV file; a file that does not start as text is ErrNotCSV.
func NewReader(r io.Reader, plan *carriers.Plan) (*Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(8 << 10)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	if !looksLikeText(head) {
		return nil, ErrNotCSV
	}
	if bytes.HasPrefix(head, []byte("\xEF\xBB\xBF")) { // a byte order mark, as spreadsheets write
		br.Discard(3)
	}
	cr := csv.NewReader(&lineEnds{r: textOnly{br}})
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	return &Reader{r: cr, plan: plan, cols: [3]int{0, 1, 2}}, nil
}

// looksLikeText reports whether the start of a file can be CSV: no NUL, UTF-8 (a character cut
// at the end of the sample aside).
func looksLikeText(b []byte) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return false
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return len(b)-i < utf8.UTFMax && !utf8.FullRune(b[i:])
		}
		i += n
	}
	return true
}

// textOnly fails a read that meets a NUL byte: binary past the sampled start.
type textOnly struct{ r io.Reader }

func (t textOnly) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if bytes.IndexByte(p[:n], 0) >= 0 {
		return 0, ErrNotCSV
	}
	return n, err
}

// lineEnds reads every line end as LF: CRLF, and a CR alone, as old Mac programs (and some
// spreadsheets still) end lines. encoding/csv ends lines at LF only, so such a file was one
// row: nothing imported, nothing counted as an error.
type lineEnds struct {
	r  io.Reader
	cr bool // the last byte given was a CR (given as LF): an LF right after it is dropped
}

func (l *lineEnds) Read(p []byte) (int, error) {
	for {
		n, err := l.r.Read(p)
		out := p[:0]
		for _, b := range p[:n] {
			if l.cr && b == '\n' {
				l.cr = false
				continue
			}
			l.cr = b == '\r'
			if l.cr {
				b = '\n'
			}
			out = append(out, b)
		}
		if len(out) > 0 || err != nil || n == 0 {
			return len(out), err
		}
	}
}

// Next is the next row to stage; ok is false at the end. Blank rows are passed over. A row
// that is refused (no phone, a bad number, a malformed line) comes with its reason.
func (c *Reader) Next() (persistence.ImportRow, bool, error) {
	for {
		rec, err := c.r.Read()
		switch {
		case errors.Is(err, io.EOF):
			return persistence.ImportRow{}, false, nil
		case errors.Is(err, ErrNotCSV):
			return persistence.ImportRow{}, false, ErrNotCSV
		case err != nil:
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				c.primed = true
				return persistence.ImportRow{Line: pe.StartLine, Reason: "malformed CSV row: " + pe.Err.Error()}, true, nil
			}
			return persistence.ImportRow{}, false, err
		}
		if !c.primed {
			c.primed = true
			if c.header(rec) {
				continue
			}
		}
		if blank(rec) {
			continue
		}
		line, _ := c.r.FieldPos(0)
		return c.row(line, rec), true, nil
	}
}

// header reads a header row, if rec is one.
func (c *Reader) header(rec []string) bool {
	if len(rec) == 0 || !strings.EqualFold(strings.TrimSpace(rec[0]), "phone") {
		return false
	}
	c.cols = [3]int{-1, -1, -1}
	for i, name := range rec {
		switch strings.ToLower(strings.ReplaceAll(strings.TrimSpace(name), " ", "_")) {
		case "phone":
			c.cols[0] = i
		case "first_name", "firstname":
			c.cols[1] = i
		case "last_name", "lastname":
			c.cols[2] = i
		}
	}
	return true
}

func blank(rec []string) bool {
	for _, f := range rec {
		if strings.TrimSpace(f) != "" {
			return false
		}
	}
	return true
}

func (c *Reader) field(rec []string, k int) string {
	if i := c.cols[k]; i >= 0 && i < len(rec) {
		return strings.TrimSpace(rec[i])
	}
	return ""
}

func (c *Reader) row(line int, rec []string) persistence.ImportRow {
	r := persistence.ImportRow{Line: line, Phone: c.field(rec, 0), FirstName: c.field(rec, 1), LastName: c.field(rec, 2)}
	switch {
	case r.Phone == "":
		r.Reason = "no phone"
	case !utf8.ValidString(r.FirstName) || !utf8.ValidString(r.LastName):
		r.Reason = "a name is not UTF-8 text (save the file as CSV UTF-8)"
	case utf8.RuneCountInString(r.FirstName) > MaxNameLen || utf8.RuneCountInString(r.LastName) > MaxNameLen:
		r.Reason = fmt.Sprintf("a name is longer than %d characters", MaxNameLen)
	default:
		num, err := c.plan.Normalize(r.Phone)
		if err != nil && !errors.Is(err, carriers.ErrUnsupportedNetwork) {
			r.Reason = "not a valid Kenyan mobile number"
		} else {
			r.Phone = num.E164
		}
	}
	if r.Reason != "" { // what is kept of a refused row for the report: bounded
		r.Phone, r.FirstName, r.LastName = clipText(r.Phone, 64), clipText(r.FirstName, MaxNameLen), clipText(r.LastName, MaxNameLen)
	}
	return r
}

func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return strings.ToValidUTF8(s, "?")
	}
	return strings.ToValidUTF8(string([]rune(s)[:n]), "?")
}

// ExportHeader is the export's header: the template's columns and the group.
func ExportHeader() []string { return []string{"phone", "first_name", "last_name", "group_id"} }

// WriteContact writes a contact as the template's columns, plus the group's id.
func WriteContact(w *csv.Writer, c persistence.Contact) error {
	group := ""
	if c.GroupID != nil {
		group = c.GroupID.String()
	}
	return w.Write([]string{c.Phone, csvSafe(c.FirstName), csvSafe(c.LastName), group})
}

// csvSafe keeps a name a spreadsheet would run as a formula from being one (CSV injection):
// it is written with a leading apostrophe.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// ReportHeader is the header of the import's report.
func ReportHeader() []string { return []string{"line", "phone", "first_name", "last_name", "reason"} }

// WriteRejected writes a row of the import's report. A phone in E.164 is written as it is,
// as the export writes it; only text as it came in is defused.
func WriteRejected(w *csv.Writer, r persistence.ImportRow) error {
	phone := r.Phone
	if _, err := persistence.ParseE164(phone); err != nil {
		phone = csvSafe(phone)
	}
	return w.Write([]string{strconv.Itoa(r.Line), phone, csvSafe(r.FirstName), csvSafe(r.LastName), r.Reason})
}
