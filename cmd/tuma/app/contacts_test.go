package app_test

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// importCSV posts a CSV (and a group, when given) to /contacts/import.
func (n *node) importCSV(a account, data []byte, group string, query string) response {
	n.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, _ := w.CreateFormFile("file", "contacts.csv")
	part.Write(data)
	if group != "" { // after the file: the import reads the group whenever it comes
		w.WriteField("group_id", group)
	}
	w.Close()
	req, _ := http.NewRequest("POST", n.base+"/contacts/import"+query, &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("X-API-Key", a.APIKey)
	return n.roundTrip(req)
}

func (n *node) contacts(a account, query string) (phones []string, total float64) {
	n.t.Helper()
	r := n.do("GET", "/contacts"+query, nil, key(a)...)
	if r.Status != 200 {
		n.t.Fatalf("list contacts%s = %d %s", query, r.Status, r.Body)
	}
	m := r.json(n.t)
	for _, c := range m["data"].([]any) {
		phones = append(phones, c.(map[string]any)["phone"].(string))
	}
	return phones, m["total"].(float64)
}

func (n *node) group(a account, name string) string {
	n.t.Helper()
	r := n.do("POST", "/contacts/groups", map[string]string{"name": name, "description": "test"}, key(a)...)
	if r.Status != 201 {
		n.t.Fatalf("create group = %d %s", r.Status, r.Body)
	}
	return r.json(n.t)["id"].(string)
}

func TestContactsCRUDAndSearch(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("contacts@example.com")
	g := n.group(a, "Customers")
	for i, phone := range []string{"0712 345-678", "254733123456", "+254110123456", "0777-123456"} {
		r := n.do("POST", "/contacts", map[string]any{"phone": phone, "first_name": []string{"Jane", "John", "Akinyi", "Otieno"}[i],
			"last_name": []string{"Wanjiru", "Kamau", "Odhiambo", "Mwangi"}[i], "group_id": g}, key(a)...)
		if r.Status != 201 {
			t.Fatalf("create %s = %d %s", phone, r.Status, r.Body)
		}
	}
	// The same phone in another form is the same contact.
	n.do("POST", "/contacts", map[string]any{"phone": "+254 712 345 678"}, key(a)...).problem(t, 409, "contact_exists")
	n.do("POST", "/contacts", map[string]any{"phone": "12345"}, key(a)...).problem(t, 422, "validation_failed")
	n.do("POST", "/contacts", map[string]any{"phone": "0722000111", "group_id": "0190c3a0-0000-7000-8000-000000000000"}, key(a)...).
		problem(t, 422, "validation_failed")

	for search, want := range map[string]string{
		"0712": "+254712345678", "254712": "+254712345678", "+254 712": "+254712345678", "345678": "+254712345678",
		"jane": "+254712345678", "WANJ": "+254712345678", "kamau": "+254733123456", "0110": "+254110123456", "otieno mw": "+254777123456",
		"5678": "+254712345678", "mwangi OTI": "+254777123456", "0777": "+254777123456",
	} {
		phones, total := n.contacts(a, "?search="+strings.ReplaceAll(search, " ", "%20"))
		if total != 1 || len(phones) != 1 || phones[0] != want {
			t.Errorf("search %q = %v (total %v); want [%s]", search, phones, total, want)
		}
	}
	// Whatever is typed is text to match, never query syntax.
	for _, search := range []string{`o'b`, `a\`, "a & b", "!kamau", "a:*"} {
		if phones, total := n.contacts(a, "?search="+url.QueryEscape(search)); total != 0 || len(phones) != 0 {
			t.Errorf("search %q = %v (total %v); want none", search, phones, total)
		}
	}
	if phones, total := n.contacts(a, "?group_id="+g); total != 4 || len(phones) != 4 {
		t.Errorf("group filter = %v (%v); want 4", phones, total)
	}
	n.do("GET", "/contacts?page=abc", nil, key(a)...).problem(t, 400, "malformed_query")
	n.do("GET", "/contacts?page_size=500", nil, key(a)...).problem(t, 422, "validation_failed")

	// Deleting opts out: gone from lists, never added again.
	list := n.do("GET", "/contacts?search=jane", nil, key(a)...).json(t)["data"].([]any)
	id := list[0].(map[string]any)["id"].(string)
	if r := n.do("DELETE", "/contacts/"+id, nil, key(a)...); r.Status != 204 {
		t.Fatalf("delete = %d %s", r.Status, r.Body)
	}
	if _, total := n.contacts(a, ""); total != 3 {
		t.Errorf("%v contacts listed after a delete; want 3", total)
	}
	n.do("POST", "/contacts", map[string]any{"phone": "0712345678"}, key(a)...).problem(t, 409, "contact_opted_out")
	n.do("DELETE", "/contacts/"+id, nil, key(a)...).problem(t, 404, "not_found")

	// Deleting a group keeps its contacts, in no group.
	if r := n.do("DELETE", "/contacts/groups/"+g, nil, key(a)...); r.Status != 204 {
		t.Fatalf("delete group = %d %s", r.Status, r.Body)
	}
	if c := n.sqlInt(`SELECT count(*) FROM contacts WHERE account_id = $1 AND group_id IS NULL`, a.ID); c != 4 {
		t.Errorf("%d contacts left without a group; want 4", c)
	}

	// Another tenant sees nothing of it.
	b := n.register("other-contacts@example.com")
	g2 := n.group(a, "Second")
	if _, total := n.contacts(b, ""); total != 0 {
		t.Errorf("another tenant lists %v contacts", total)
	}
	n.do("DELETE", "/contacts/groups/"+g2, nil, key(b)...).problem(t, 404, "not_found")
	n.do("DELETE", "/contacts/"+id, nil, key(b)...).problem(t, 404, "not_found")
	n.do("GET", "/contacts/export?group_id="+g2, nil, key(b)...).problem(t, 404, "not_found")
	n.do("POST", "/contacts", map[string]any{"phone": "0722000111", "group_id": g2}, key(b)...).problem(t, 422, "validation_failed")
	n.importCSV(b, []byte("0722000111\n"), g2, "").problem(t, 422, "validation_failed")
	groups := n.do("GET", "/contacts/groups", nil, key(b)...).json2(t)
	if len(groups) != 0 {
		t.Errorf("another tenant lists groups %v", groups)
	}
}

// Every CSV rule: phone forms, a BOM, CRLF, quoted commas, a header in any order, bad rows,
// repeats in the file and numbers the account has already.
func TestContactsImportRules(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("import@example.com")
	n.do("POST", "/contacts", map[string]any{"phone": "0700000001"}, key(a)...)
	g := n.group(a, "Imported")
	// A header (its first cell "phone"; the other columns in any order), with a BOM and CRLF.
	data := "\xEF\xBB\xBFphone,last_name,first_name\r\n" +
		"0700000002,\"Wanjiru, Jr\",Jane\r\n" + // quoted comma
		"+254 700-000-003,Kamau,John\r\n" +
		"254700000004,Odhiambo,\"Akinyi \"\"A\"\"\"\r\n" +
		"12345,Bad,Row\r\n" + // invalid phone
		"0700000002,Dup,Again\r\n" + // repeats line 2
		"0700000001,Old,Existing\r\n" + // the account has it
		"\r\n" + // blank: passed over
		"0110000005,Mwangi,Otieno\r\n"
	r := n.importCSV(a, []byte(data), g, "")
	if r.Status != 200 {
		t.Fatalf("import = %d %s", r.Status, r.Body)
	}
	m := r.json(t)
	if m["imported"] != 4.0 || m["skipped"] != 2.0 || m["errors"] != 1.0 {
		t.Errorf("import = %v; want imported 4, skipped 2, errors 1", m)
	}
	list := n.do("GET", "/contacts?search=wanjiru", nil, key(a)...).json(t)["data"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["last_name"] != "Wanjiru, Jr" || list[0].(map[string]any)["group_id"] != g {
		t.Errorf("quoted row = %v", list)
	}
	if l := n.do("GET", "/contacts?search=akinyi", nil, key(a)...).json(t)["data"].([]any); len(l) != 1 || l[0].(map[string]any)["first_name"] != `Akinyi "A"` {
		t.Errorf("escaped quotes = %v", l)
	}

	// No header: positional. The report lists what was not imported, with why.
	r = n.importCSV(a, []byte("0700000009,Pos,Itional\n0700000009,Twice,Here\nnot a phone,X,Y\n"), "", "?report=csv")
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv") || r.Header.Get("X-Imported") != "1" {
		t.Fatalf("import with report = %d %v %s", r.Status, r.Header, r.Body)
	}
	rows, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
	if err != nil || len(rows) != 3 || rows[1][0] != "2" || !strings.Contains(rows[1][4], "repeats") ||
		rows[2][0] != "3" || !strings.Contains(rows[2][4], "valid") {
		t.Errorf("report = %q (%v)", rows, err)
	}
	if l := n.do("GET", "/contacts?search=0700000009", nil, key(a)...).json(t)["data"].([]any); len(l) != 1 || l[0].(map[string]any)["first_name"] != "Pos" {
		t.Errorf("positional row = %v", l)
	}

	// An empty file imports nothing; a binary one is refused whole.
	if r := n.importCSV(a, nil, "", ""); r.Status != 200 || r.json(t)["imported"] != 0.0 {
		t.Errorf("empty file = %d %s", r.Status, r.Body)
	}
	bin := append([]byte("0700000010,A,B\n\x00\x01\x02"), bytes.Repeat([]byte{0xff, 0x00}, 500)...)
	n.importCSV(a, bin, "", "").problem(t, 422, "validation_failed")
	if l := n.do("GET", "/contacts?search=0700000010", nil, key(a)...).json(t)["data"].([]any); len(l) != 0 {
		t.Errorf("a refused binary file imported %v", l)
	}
	// Not multipart: 415.
	n.do("POST", "/contacts/import", "phone\n0700000011", key(a)...).problem(t, 415, "unsupported_media_type")
}

// A 60 MB upload is refused with 413 from its declared length, as soon as its headers are
// in: the node answers after reading no more than the first bytes, and closes the connection.
func TestContactsImportTooLarge(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("huge@example.com")
	conn, err := net.Dial("tcp", strings.TrimPrefix(n.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /contacts/import HTTP/1.1\r\nHost: x\r\nX-API-Key: %s\r\n"+
		"Content-Type: multipart/form-data; boundary=x\r\nContent-Length: %d\r\n\r\n", a.APIKey, 60<<20)
	conn.Write([]byte("--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c.csv\"\r\n\r\n"))
	conn.Write(bytes.Repeat([]byte("0700000000,Name,Surname\n"), 2000)) // ~48 KB of the 60 MB
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a 60 MB upload after its first 48 KB: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 413 || !bytes.Contains(body, []byte("body_too_large")) || !resp.Close {
		t.Errorf("60 MB import = %d %s (close %v); want 413 body_too_large and the connection closed", resp.StatusCode, body, resp.Close)
	}
}

func TestContactsTemplateAndExport(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("export@example.com")
	tmpl := n.do("GET", "/contacts/template", nil, key(a)...)
	if tmpl.Status != 200 || !strings.HasPrefix(string(tmpl.Body), "phone,first_name,last_name\r\n") {
		t.Fatalf("template = %d %q", tmpl.Status, tmpl.Body)
	}
	// The template imports as it is.
	if r := n.importCSV(a, tmpl.Body, "", ""); r.Status != 200 || r.json(t)["imported"] != 1.0 {
		t.Fatalf("template import = %d %s", r.Status, r.Body)
	}
	g := n.group(a, "G")
	var csvData strings.Builder
	for i := range 300 {
		fmt.Fprintf(&csvData, "0701%06d,=cmd|' /C calc'!A0,Last %d\n", i, i)
	}
	n.importCSV(a, []byte(csvData.String()), g, "")
	id := n.do("GET", "/contacts?search=0701000000", nil, key(a)...).json(t)["data"].([]any)[0].(map[string]any)["id"].(string)
	n.do("DELETE", "/contacts/"+id, nil, key(a)...)

	exp := n.do("GET", "/contacts/export?group_id="+g, nil, key(a)...)
	if exp.Status != 200 || !strings.HasPrefix(exp.Header.Get("Content-Disposition"), "attachment;") {
		t.Fatalf("export = %d %v", exp.Status, exp.Header)
	}
	// Written whole before it is sent: its length is known, so a download cut short shows.
	if cl := exp.Header.Get("Content-Length"); cl != strconv.Itoa(len(exp.Body)) {
		t.Errorf("export Content-Length %q for a body of %d bytes; want the file's length", cl, len(exp.Body))
	}
	rows, err := csv.NewReader(bytes.NewReader(exp.Body)).ReadAll()
	if err != nil || len(rows) != 300 || rows[0][0] != "phone" {
		t.Fatalf("export: %d rows (%v); want a header and 299 active contacts", len(rows), err)
	}
	if !strings.HasPrefix(rows[1][1], "'=") {
		t.Errorf("a formula-like name is exported as %q; want it defused with a leading apostrophe", rows[1][1])
	}
	all := n.do("GET", "/contacts/export", nil, key(a)...)
	if rows, _ := csv.NewReader(bytes.NewReader(all.Body)).ReadAll(); len(rows) != 301 {
		t.Errorf("export of every contact: %d rows; want 301", len(rows))
	}
}

// The contact list filtered by another account's group, or by none, is a 404 as every other
// use of such an id is (it was an empty 200); an import whose group_id field is left blank,
// as forms send one, imports into no group (it was a 422).
func TestContactsGroupFilterAndBlankImportGroup(t *testing.T) {
	n := startNode(t, nil)
	a, b := n.register("groups-a@example.com"), n.register("groups-b@example.com")
	theirs := n.group(b, "Theirs")
	for _, id := range []string{theirs, uuid.NewString()} {
		n.do("GET", "/contacts?group_id="+id, nil, key(a)...).problem(t, 404, "not_found")
	}
	mine := n.group(a, "Mine")
	if r := n.do("GET", "/contacts?group_id="+mine, nil, key(a)...); r.Status != 200 {
		t.Errorf("own group's contacts = %d %s", r.Status, r.Body)
	}
	r := n.importCSVGroupFirst(a, []byte("phone,first_name\n0712000001,Ann\n"), "")
	if got := r.json(t); r.Status != 200 || got["imported"] != 1.0 {
		t.Errorf("import with a blank group_id = %d %s; want 1 imported", r.Status, r.Body)
	}
}
