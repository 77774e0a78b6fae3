package app_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// bigCSV is rows contacts 0701000000… with, at the given lines (1-based, no header), a repeat
// of the first row's phone or an invalid phone.
func bigCSV(rows int, repeats, invalid []int) []byte {
	var b strings.Builder
	for i := 1; i <= rows; i++ {
		switch {
		case contains(repeats, i):
			b.WriteString("0701000001,Again,Repeat\n")
		case contains(invalid, i):
			b.WriteString("07010,Bad,Phone\n")
		default:
			fmt.Fprintf(&b, "0701%06d,First%d,Last\n", i, i)
		}
	}
	return []byte(b.String())
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// An import larger than a batch, merged by several transactions at once: repeats across
// batches are skipped, the report lists every row not imported in file order, the import of an
// account with contacts skips what it has (the staged path), and a name that is not UTF-8 is
// refused row by row instead of failing the file.
func TestContactsImportAcrossBatches(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_IMPORT_WORKERS": "3"})
	a := n.register("batches@example.com")
	repeats, invalid := []int{2, 9_999, 10_001, 24_000}, []int{5, 12_345, 24_999}
	data := bigCSV(25_000, repeats, invalid)
	data = append(data, "0702000001,Ren\xe9e,Latin1\n"...) // line 25,001

	r := n.importCSV(a, data, "", "?report=csv")
	if r.Status != 200 {
		t.Fatalf("import = %d %s", r.Status, r.Body)
	}
	wantImported := 25_000 - len(repeats) - len(invalid)
	if r.Header.Get("X-Imported") != strconv.Itoa(wantImported) || r.Header.Get("X-Skipped") != "4" || r.Header.Get("X-Errors") != "4" {
		t.Errorf("counts = %s imported, %s skipped, %s errors; want %d, 4, 4", r.Header.Get("X-Imported"),
			r.Header.Get("X-Skipped"), r.Header.Get("X-Errors"), wantImported)
	}
	report, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, row := range report[1:] {
		lines = append(lines, row[0])
	}
	if got := strings.Join(lines, ","); got != "2,5,9999,10001,12345,24000,24999,25001" {
		t.Errorf("report lines %s; want every row not imported, in file order", got)
	}
	if last := report[len(report)-1]; !strings.Contains(last[4], "UTF-8") {
		t.Errorf("the Latin-1 row is reported as %q", last)
	}
	if c := n.sqlInt(`SELECT count(*) FROM contacts WHERE account_id = $1`, a.ID); c != int64(wantImported) {
		t.Errorf("%d contacts stored; want %d", c, wantImported)
	}
	if _, total := n.contacts(a, "?search=first24998"); total != 1 {
		t.Errorf("a contact of the last batch is not found (%v)", total)
	}

	// Again, with 1,000 new rows: the account's rows are looked up, not copied again.
	more := append(bigCSV(25_000, nil, nil), "0703000001,New,One\n0703000002,New,Two\n"...)
	r = n.importCSV(a, more, "", "")
	if m := r.json(t); r.Status != 200 || m["imported"] != float64(len(repeats)+len(invalid)+2) || m["skipped"] != float64(wantImported) {
		t.Errorf("second import = %d %v; want %d imported, %d skipped", r.Status, m, len(repeats)+len(invalid)+2, wantImported)
	}
}

// Writers meeting an import: a contact created meanwhile with a phone the file has waits for
// the import and is refused as existing (never a failed import or a duplicate); a group deleted
// while an import fills it waits too, then takes every imported contact out of it; a group
// deleted first makes the import a 422.
func TestContactsImportRaces(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("race@example.com")
	g := n.group(a, "Filling")
	data := bigCSV(60_000, nil, nil)
	var wg sync.WaitGroup
	var imp response
	wg.Go(func() { imp = n.importCSVGroupFirst(a, data, g) })
	// Once the import is writing, it holds the group and the account's contacts.
	deadline := time.Now().Add(20 * time.Second)
	for n.sqlInt(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND (query LIKE 'COPY contacts%' OR query LIKE 'INSERT INTO contacts%') AND state = 'active'`) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the import never started writing")
		}
		time.Sleep(2 * time.Millisecond)
	}
	var created, deleted response
	wg.Go(func() {
		created = n.do("POST", "/contacts", map[string]any{"phone": "0701059999", "group_id": g}, key(a)...)
	})
	wg.Go(func() { deleted = n.do("DELETE", "/contacts/groups/"+g, nil, key(a)...) })
	wg.Wait()
	if imp.Status != 200 || imp.json(t)["imported"] != 60_000.0 {
		t.Fatalf("import = %d %s", imp.Status, imp.Body)
	}
	if deleted.Status != 204 {
		t.Fatalf("delete group = %d %s", deleted.Status, deleted.Body)
	}
	// The create came after the import: its phone exists, or its group is gone already.
	if created.Status != 409 && created.Status != 422 {
		t.Errorf("create during the import = %d %s; want 409 or 422", created.Status, created.Body)
	}
	if c := n.sqlInt(`SELECT count(*) FROM contacts WHERE account_id = $1 AND group_id IS NOT NULL`, a.ID); c != 0 {
		t.Errorf("%d contacts left in the deleted group", c)
	}
	if c := n.sqlInt(`SELECT count(*) - count(DISTINCT phone) FROM contacts WHERE account_id = $1`, a.ID); c != 0 {
		t.Errorf("%d phones stored twice", c)
	}

	// A group deleted before the import reads it.
	g2 := n.group(a, "Gone")
	n.do("DELETE", "/contacts/groups/"+g2, nil, key(a)...)
	n.importCSVGroupFirst(a, []byte("0702000001\n"), g2).problem(t, 422, "validation_failed")
}

// importCSVGroupFirst posts a CSV after its group, as a form that names the group first does.
func (n *node) importCSVGroupFirst(a account, data []byte, group string) response {
	n.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	w.WriteField("group_id", group)
	part, _ := w.CreateFormFile("file", "contacts.csv")
	part.Write(data)
	w.Close()
	req, _ := http.NewRequest("POST", n.base+"/contacts/import", &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("X-API-Key", a.APIKey)
	return n.roundTrip(req)
}
