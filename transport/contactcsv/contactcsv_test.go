package contactcsv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

func readAll(t testing.TB, data string) ([]persistence.ImportRow, error) {
	t.Helper()
	rows, err := NewReader(strings.NewReader(data), carriers.DefaultPlan())
	if err != nil {
		return nil, err
	}
	var out []persistence.ImportRow
	for {
		r, ok, err := rows.Next()
		if err != nil || !ok {
			return out, err
		}
		out = append(out, r)
	}
}

func TestCSVRowsHeaderOptional(t *testing.T) {
	got, err := readAll(t, "\xEF\xBB\xBFPhone , Last Name,first_name\r\n0712345678,Wanjiru,Jane\r\n")
	if err != nil || len(got) != 1 || got[0].Phone != "+254712345678" || got[0].FirstName != "Jane" || got[0].LastName != "Wanjiru" || got[0].Line != 2 {
		t.Errorf("with a header: %+v %v", got, err)
	}
	got, err = readAll(t, "0712345678,Jane,Wanjiru\n0733 123 456\n")
	if err != nil || len(got) != 2 || got[0].FirstName != "Jane" || got[1].Phone != "+254733123456" || got[1].FirstName != "" {
		t.Errorf("positional: %+v %v", got, err)
	}
	got, _ = readAll(t, "phone\nnope\n,Jane\n\"unclosed\n")
	if len(got) < 2 || got[0].Reason == "" || got[1].Reason != "no phone" {
		t.Errorf("bad rows: %+v", got)
	}
	if _, err := readAll(t, "0712345678,\x00binary"); !errors.Is(err, ErrNotCSV) {
		t.Errorf("NUL: %v; want ErrNotCSV", err)
	}
	if _, err := readAll(t, "\xff\xfe0\x007\x00"); !errors.Is(err, ErrNotCSV) {
		t.Errorf("UTF-16: %v; want ErrNotCSV", err)
	}
	late := strings.Repeat("0712345678,A,B\n", 1000) + "\x00"
	if _, err := readAll(t, late); !errors.Is(err, ErrNotCSV) {
		t.Errorf("NUL after the sampled start: %v; want ErrNotCSV", err)
	}
}

// Any input: no panic; every row either a valid E.164 phone or a reason; names within bounds
// and valid UTF-8; a refused file only for being binary.
func FuzzCSVRows(f *testing.F) {
	for _, s := range []string{"phone,first_name,last_name\n0712345678,Jane,Wanjiru\n", "\xEF\xBB\xBF0712345678\r\n",
		"\"a,b\",c\n", "phone\n\"\n", "0712345678,\x00", "0712345678,Ren\xe9e,Ochieng\n", strings.Repeat("x", 200) + ",0712345678\n", "\xff\xfe\xfd"} {
		f.Add([]byte(s))
	}
	plan := carriers.DefaultPlan()
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := NewReader(bytes.NewReader(data), plan)
		if err != nil {
			if !errors.Is(err, ErrNotCSV) {
				t.Fatalf("refused with %v", err)
			}
			return
		}
		for i := 0; i < 100_000; i++ {
			r, ok, err := rows.Next()
			if err != nil {
				if !errors.Is(err, ErrNotCSV) {
					t.Fatalf("row error %v", err)
				}
				return
			}
			if !ok {
				return
			}
			if r.Reason == "" {
				if _, err := persistence.ParseE164(r.Phone); err != nil {
					t.Fatalf("row %+v kept with phone %q", r, r.Phone)
				}
			}
			// Whatever is kept goes to PostgreSQL as text: UTF-8 without NUL, or the import fails.
			for _, s := range []string{r.Phone, r.FirstName, r.LastName, r.Reason} {
				if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
					t.Fatalf("row %+v holds text the database refuses", r)
				}
			}
			if utf8.RuneCountInString(r.FirstName) > MaxNameLen || utf8.RuneCountInString(r.LastName) > MaxNameLen {
				t.Fatalf("row %+v out of bounds", r)
			}
		}
	})
}

// Lines ended by a CR alone (old Mac programs) are rows, as LF and CRLF ones are, and keep
// their line numbers; read a byte at a time too, where a CRLF is split between reads.
func TestCSVRowsEndedByCR(t *testing.T) {
	for name, data := range map[string]string{
		"CR":    "phone,first_name,last_name\r0712000001,A,B\r0712000002,C,D\r0733000003,E,F",
		"mixed": "phone,first_name,last_name\r\n0712000001,A,B\r0712000002,C,D\n0733000003,E,F\r\n",
	} {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(data)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			rows, err := NewReader(r, carriers.DefaultPlan())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for {
				row, ok, err := rows.Next()
				if err != nil || !ok {
					break
				}
				got = append(got, fmt.Sprintf("%d %s %s %s", row.Line, row.Phone, row.FirstName, row.Reason))
			}
			want := []string{"2 +254712000001 A ", "3 +254712000002 C ", "4 +254733000003 E "}
			if !slices.Equal(got, want) {
				t.Errorf("%s (one byte a read: %v): rows %q; want %q", name, oneByte, got, want)
			}
		}
	}
}
