package app_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The address book in a browser: add a contact (a bad number first), find it, make a group,
// import a CSV with a bad row into it with the progress bar, see the counts, the row's error
// and the contacts, export them, and opt one out. Every page passes the accessibility check
// at both widths.
func TestDashboardContactsInBrowser(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("book@example.com")
	b := n.tab(t)
	b.open("/app/login")
	b.fill("Email address", a.Email)
	b.fill("Password", a.Password)
	b.submit("Sign in")
	b.open("/app/contacts")
	b.waitText("No contacts yet")
	b.check("contacts-empty")

	b.fill("Phone number", "0712")
	b.fill("First name", `<img src=x onerror=alert(1)>`)
	b.submit("Add contact")
	b.waitText("must be a Kenyan mobile number")
	b.check("contacts-add-errors")
	if got := b.eval(`return document.getElementById('f-first_name').value;`); got != `<img src=x onerror=alert(1)>` {
		t.Errorf("the form lost the first name: %q", got)
	}
	b.fill("Phone number", "0712 345 678")
	b.fill("Last name", "Wanjiru")
	b.submit("Add contact")
	b.waitText("Added <img src=x onerror=alert(1)> Wanjiru (+254712345678).")
	b.waitText("1 contact.")
	if b.eval(`return String(document.querySelectorAll('img').length);`) != "0" {
		t.Error("a contact's name was drawn as markup")
	}
	b.fill("Phone number", "+254712345678")
	b.submit("Add contact")
	b.waitText("is in your contacts already")

	b.open("/app/contacts/groups")
	b.waitText("No groups yet")
	b.fill("Name", "Nairobi <VIP>")
	b.fill("Description", "Best customers")
	b.submit("Create group")
	b.waitText("Created the group “Nairobi <VIP>”.")
	b.check("contacts-groups")

	b.open("/app/contacts/import")
	b.check("contacts-import")
	b.eval(`const sel = document.getElementById('f-group_id');
		sel.value = [...sel.options].find(o => o.text === 'Nairobi <VIP>').value; return '';`)
	csvFile := filepath.Join(t.TempDir(), "people.csv")
	if err := os.WriteFile(csvFile, []byte("phone,first_name,last_name\n0722000001,Amina,Otieno\n12345,Bad,Row\n0733000002,Brian,Kamau\n0712345678,Again,Here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(b.ctx, chromedp.SetUploadFiles("#f-file", []string{csvFile})); err != nil {
		t.Fatal(err)
	}
	// What the progress bar showed, as the upload went (app.js listens first).
	b.eval(`window.__bar = [];
		document.addEventListener('htmx:xhr:progress', () => {
			const bar = document.getElementById('import-progress');
			window.__bar.push(bar.hidden ? 'hidden' : (bar.hasAttribute('value') ? String(bar.value) : 'finishing'));
		}); return '';`)
	b.click("Import")
	b.waitText("Import finished")
	if p := b.path(); p != "/app/contacts/import" {
		t.Errorf("after the import the tab is at %q", p)
	}
	if bar := b.eval(`return window.__bar ? window.__bar.join(',') : 'the page was reloaded';`); bar == "" || strings.Contains(bar, "hidden") || strings.Contains(bar, "reloaded") {
		t.Errorf("the progress bar during the upload: %q; want it shown, filling", bar)
	}
	text := strings.Join(strings.Fields(b.text()), " ")
	for _, want := range []string{"Imported 2 Skipped 1 Refused 1", "into the group “Nairobi <VIP>”",
		"3 12345 Bad Row not a valid Kenyan mobile number", "5 +254712345678 Again Here a contact with this phone exists already"} {
		if !strings.Contains(text, want) {
			t.Errorf("the import's result does not show %q:\n%s", want, text)
		}
	}
	b.check("contacts-import-result")

	b.submit("See the contacts")
	b.waitText("Group “Nairobi <VIP>”")
	b.waitText("2 contacts match.")
	b.check("contacts-group")
	b.open("/app/contacts")
	b.waitText("3 contacts.")
	b.fill("Search by phone or name", "0733")
	b.submit("Search")
	b.waitText("1 contact matches.")
	if text := b.text(); !strings.Contains(text, "Brian Kamau") || strings.Contains(text, "Amina") {
		t.Errorf("searching 0733 shows:\n%s", text)
	}
	b.check("contacts-search")
	b.fill("Search by phone or name", "amina")
	b.submit("Search")
	b.waitText("Amina Otieno")

	// The export is a file the browser downloads, with the session's cookie.
	export := b.await(`const a = [...document.querySelectorAll('a')].find(a => a.textContent.trim() === 'Export all contacts (CSV)');
		return fetch(a.href).then(async r => r.status + ' ' + r.headers.get('Content-Disposition') + '\n' + await r.text());`)
	group := n.sqlString(`SELECT id::text FROM contact_groups WHERE account_id = $1`, a.ID)
	for _, want := range []string{`200 attachment; filename="contacts.csv"`, "phone,first_name,last_name,group_id\r\n",
		"+254722000001,Amina,Otieno," + group + "\r\n", "+254712345678,<img src=x onerror=alert(1)>,Wanjiru,\r\n"} {
		if !strings.Contains(export, want) {
			t.Errorf("the export does not have %q:\n%s", want, export)
		}
	}

	b.click("Opt out Amina Otieno")
	b.check("contacts-opt-out")
	b.submit("Opt out +254722000001")
	b.waitText("Opted out")
	if p := b.path(); p != "/app/contacts?search=amina&group_id=" {
		t.Errorf("after opting out the tab is at %q; want the list it was on", p)
	}
	b.waitText("No contact matches.")
	if n.sqlInt(`SELECT count(*) FROM contacts WHERE account_id = $1 AND opted_out_at IS NOT NULL`, a.ID) != 1 {
		t.Error("the contact was not opted out")
	}

	// Deleting the group keeps its contacts.
	b.open("/app/contacts/groups")
	b.waitText("Nairobi <VIP>")
	b.click("Delete Nairobi <VIP>")
	b.submit("Delete “Nairobi <VIP>”")
	b.waitText("Deleted the group. Its contacts are still in your contacts, in no group.")
	b.waitText("No groups yet")
	b.submit("Back to contacts")
	b.waitText("2 contacts.")
	if text := b.text(); !strings.Contains(text, "Brian Kamau") || strings.Contains(text, "Nairobi") {
		t.Errorf("after deleting the group the contacts show:\n%s", text)
	}
}

// await runs a JavaScript function body that returns a promise, and returns what it resolves to.
func (b *tab) await(fn string) string {
	b.t.Helper()
	out, err := chromedp.Run(b.ctx, chromedp.Evaluate[string]("(function(){"+fn+"})()", chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("in the page: %v", err)
	}
	return out
}

// part is one part of a multipart form; a part named file is sent as a file.
type part struct{ name, value string }

// upload posts a multipart form as a browser does, its parts in the order given.
func (p *pages) upload(path string, parts []part, headers ...string) page {
	p.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for _, pt := range parts {
		if pt.name == "file" {
			fw, _ := w.CreateFormFile("file", "contacts.csv")
			io.WriteString(fw, pt.value)
		} else {
			w.WriteField(pt.name, pt.value)
		}
	}
	w.Close()
	req, err := http.NewRequest("POST", p.n.base+path, &body)
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := p.http.Do(req)
	if err != nil {
		p.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return page{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

// newContact adds a contact through the API and returns its id.
func (n *node) newContact(a account, phone, first string) string {
	n.t.Helper()
	r := n.do("POST", "/contacts", map[string]string{"phone": phone, "first_name": first}, key(a)...)
	if r.Status != 201 {
		n.t.Fatalf("add contact = %d %s", r.Status, r.Body)
	}
	return r.json(n.t)["id"].(string)
}

func (n *node) activeContacts(a account) int64 {
	n.t.Helper()
	return n.sqlInt(`SELECT count(*) FROM contacts WHERE account_id = $1 AND opted_out_at IS NULL`, a.ID)
}

// Without JavaScript the import is a plain form: the file streams in (far past the largest
// JSON body), and the answer is a page with the counts and the rows not imported; with
// ?report=csv it is the API's CSV report. The template downloads as the API's does.
func TestDashboardContactsImportWithoutScript(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_MAX_BODY_BYTES": "65536"})
	a := n.register("plain@example.com")
	p := n.pages(t)
	p.signIn(a)
	var big strings.Builder
	big.WriteString("phone,first_name,last_name\n")
	for i := range 20000 { // about 600 KB: ten times the largest JSON body
		if i == 7 {
			big.WriteString("0799,Short,Number\n")
		}
		big.WriteString("0701" + strings.Repeat("0", 6-len(itoa(i))) + itoa(i) + ",Name" + itoa(i) + ",Surname\n")
	}
	token := p.token("/app/contacts/import")
	r := p.upload("/app/contacts/import", []part{{"_csrf", token}, {"group_id", ""}, {"file", big.String()}})
	if r.Status != 200 || !strings.Contains(r.Body, "Import finished") || !strings.Contains(r.Body, `<p class="value">20,000</p>`) ||
		!strings.Contains(r.Body, `<td class="num" data-label="Line">9</td><td data-label="Phone">0799</td><td data-label="Name">Short Number</td><td data-label="Why">not a valid Kenyan mobile number</td>`) {
		t.Fatalf("plain import = %d:\n%s", r.Status, r.Body)
	}
	if got := n.activeContacts(a); got != 20000 {
		t.Errorf("%d contacts after the import; want 20000", got)
	}
	// Again, with the report: every row is there already, so every row is in it.
	r = p.upload("/app/contacts/import?report=csv", []part{{"_csrf", token}, {"file", big.String()}})
	if r.Status != 200 || r.Header.Get("Content-Disposition") != `attachment; filename="contacts-import-report.csv"` ||
		r.Header.Get("X-Skipped") != "20000" || r.Header.Get("X-Errors") != "1" || !strings.HasPrefix(r.Body, "line,phone,first_name,last_name,reason\r\n") {
		t.Fatalf("import with report = %d %v:\n%.300s", r.Status, r.Header, r.Body)
	}
	// The page lists the first hundred rows not imported and says how many more.
	r = p.upload("/app/contacts/import", []part{{"_csrf", token}, {"file", big.String()}})
	if r.Status != 200 || !strings.Contains(r.Body, "And 19,901 more rows.") {
		t.Errorf("import of repeats = %d:\n%s", r.Status, r.Body)
	}
	// A file that is no CSV, or none, is said beside the file field.
	r = p.upload("/app/contacts/import", []part{{"_csrf", token}, {"file", "\x00\x01\x02binary"}})
	if r.Status != 422 || !strings.Contains(r.Body, `<ul class="errors" id="f-file-error"><li>is not a CSV file`) {
		t.Errorf("binary import = %d:\n%s", r.Status, r.Body)
	}
	r = p.upload("/app/contacts/import", []part{{"_csrf", token}})
	if r.Status != 422 || !strings.Contains(r.Body, "is required (a CSV file)") {
		t.Errorf("import without a file = %d:\n%s", r.Status, r.Body)
	}

	tmpl := p.get("/app/contacts/template")
	if tmpl.Status != 200 || tmpl.Header.Get("Content-Disposition") != `attachment; filename="contacts-template.csv"` ||
		tmpl.Body != "phone,first_name,last_name\r\n0712345678,Jane,Wanjiru\r\n" {
		t.Errorf("template = %d %v %q", tmpl.Status, tmpl.Header, tmpl.Body)
	}
	// Paging: the next page's cursor is the API's, and an altered one is said, not a crash.
	list := p.get("/app/contacts").expect(t, 200, "").Body
	next := regexp.MustCompile(`href="(/app/contacts\?cursor=[^"]+)" rel="next"`).FindStringSubmatch(list)
	if next == nil || !strings.Contains(list, "20,000 contacts.") {
		t.Fatalf("the first page has no next page:\n%s", list)
	}
	second := p.get(strings.ReplaceAll(next[1], "&amp;", "&")).expect(t, 200, "").Body
	phone := regexp.MustCompile(`<td data-label="Phone">(&#43;254\d{9})</td>`)
	one, two := phone.FindAllStringSubmatch(list, -1), phone.FindAllStringSubmatch(second, -1)
	if len(one) != 20 || len(two) != 20 || !strings.Contains(second, "First page") || strings.Contains(second, one[19][1]) {
		t.Fatalf("the second page (%d rows after %d):\n%s", len(two), len(one), second)
	}
	if r := p.get("/app/contacts?cursor=AAAA"); r.Status != 400 || !strings.Contains(r.Body, "This page’s link is not valid") {
		t.Errorf("an altered cursor = %d:\n%s", r.Status, r.Body)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// A state change without the session's token is refused with a 403 page and changes nothing,
// the streamed import included: its token must come first, before the file.
func TestDashboardContactsRefuseFormsWithoutTheirToken(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("csrfbook@example.com")
	c := n.newContact(a, "0712345678", "Jane")
	g := n.group(a, "Mine")
	p := n.pages(t)
	p.signIn(a)
	for path, form := range map[string]url.Values{
		"/app/contacts":                         {"phone": {"0722000001"}},
		"/app/contacts/" + c + "/opt-out":       {},
		"/app/contacts/groups":                  {"name": {"Theirs"}},
		"/app/contacts/groups/" + g + "/delete": {},
	} {
		form.Set("_csrf", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
		if r := p.do("POST", path, form); r.Status != http.StatusForbidden || !strings.Contains(r.Body, "nothing was changed") {
			t.Errorf("POST %s with a wrong token = %d", path, r.Status)
		}
	}
	token := p.token("/app/contacts/import")
	file := part{"file", "0733000001,Amina,Otieno\n"}
	for name, tc := range map[string]struct {
		parts   []part
		headers []string
	}{
		"no token":             {[]part{file}, nil},
		"token after the file": {[]part{file, {"_csrf", token}}, nil},
		"wrong token":          {[]part{{"_csrf", "AAAA" + token[4:]}, file}, nil},
		"wrong header":         {[]part{{"_csrf", token}, file}, []string{"X-CSRF-Token", "AAAA" + token[4:]}},
	} {
		if r := p.upload("/app/contacts/import", tc.parts, tc.headers...); r.Status != http.StatusForbidden || !strings.Contains(r.Body, "nothing was changed") {
			t.Errorf("import, %s = %d:\n%.300s", name, r.Status, r.Body)
		}
	}
	if got, groups := n.activeContacts(a), n.sqlInt(`SELECT count(*) FROM contact_groups WHERE account_id = $1`, a.ID); got != 1 || groups != 1 {
		t.Fatalf("%d contacts and %d groups after refused forms; want 1 and 1", got, groups)
	}
	// htmx's header stands for the field.
	if r := p.upload("/app/contacts/import", []part{file}, "X-CSRF-Token", token); r.Status != 200 || n.activeContacts(a) != 2 {
		t.Errorf("import with the header = %d:\n%.300s", r.Status, r.Body)
	}
}

// Another account's contact or group, in an address or a form, is a 404 page, and nothing
// changes.
func TestDashboardContactsOtherTenantsIDsAreNotFound(t *testing.T) {
	n := startNode(t, nil)
	mine, theirs := n.register("mybook@example.com"), n.register("theirbook@example.com")
	c := n.newContact(theirs, "0712345678", "Theirs")
	g := n.group(theirs, "Their group")
	p := n.pages(t)
	p.signIn(mine)
	notFound := func(what string, r page) {
		t.Helper()
		if r.Status != http.StatusNotFound || !strings.Contains(r.Body, "Page not found") {
			t.Errorf("%s = %d:\n%.300s", what, r.Status, r.Body)
		}
	}
	notFound("opt out theirs", p.post("/app/contacts", "/app/contacts/"+c+"/opt-out", nil))
	notFound("opt out not-a-uuid", p.post("/app/contacts", "/app/contacts/nope/opt-out", nil))
	notFound("delete their group", p.post("/app/contacts/groups", "/app/contacts/groups/"+g+"/delete", nil))
	notFound("export their group", p.get("/app/contacts/export?group_id="+g))
	notFound("export a malformed group", p.get("/app/contacts/export?group_id=nope"))
	notFound("list their group", p.get("/app/contacts?group_id="+g))
	notFound("add into their group", p.post("/app/contacts", "/app/contacts", url.Values{"phone": {"0722000001"}, "group_id": {g}}))
	notFound("import into their group", p.upload("/app/contacts/import",
		[]part{{"_csrf", p.token("/app/contacts/import")}, {"group_id", g}, {"file", "0733000001,A,B\n"}}))
	if n.activeContacts(theirs) != 1 || n.activeContacts(mine) != 0 ||
		n.sqlInt(`SELECT count(*) FROM contact_groups WHERE id = $1`, g) != 1 {
		t.Error("a request naming another account's contact or group changed something")
	}
}

// What a tenant writes (contact and group names, rows of a file) is shown as text.
func TestDashboardContactsEscapeTenantText(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("xssbook@example.com")
	evil := `<script>alert(1)</script>"'`
	g := n.group(a, evil)
	if r := n.do("POST", "/contacts", map[string]string{"phone": "0712345678", "first_name": evil, "last_name": "<b>x</b>", "group_id": g}, key(a)...); r.Status != 201 {
		t.Fatalf("add = %d %s", r.Status, r.Body)
	}
	p := n.pages(t)
	p.signIn(a)
	imported := p.upload("/app/contacts/import", []part{{"_csrf", p.token("/app/contacts/import")}, {"group_id", g},
		{"file", "0712345678," + evil + ",x\nnope," + evil + ",<i>y</i>\n"}})
	for path, body := range map[string]string{
		"/app/contacts":            p.get("/app/contacts").Body,
		"/app/contacts?group_id=…": p.get("/app/contacts?group_id=" + g).Body,
		"/app/contacts/groups":     p.get("/app/contacts/groups").Body,
		"/app/contacts/import":     p.get("/app/contacts/import").Body,
		"the import's result":      imported.Body,
	} {
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<b>x") || strings.Contains(body, "<i>y") ||
			!strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s shows tenant text unescaped:\n%s", path, body)
		}
	}
}

// The pages carry the security headers and, with what they load, weigh at most 150 KB
// compressed.
func TestDashboardContactsPagesHeaders(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("headbook@example.com")
	p := n.pages(t)
	p.signIn(a)
	for _, path := range []string{"/app/contacts", "/app/contacts/groups", "/app/contacts/import"} {
		r := p.do("GET", path, nil, "Accept-Encoding", "gzip")
		if r.Status != 200 || r.Header.Get("Content-Encoding") != "gzip" || r.Header.Get("X-Frame-Options") != "DENY" ||
			strings.Contains(r.Header.Get("Content-Security-Policy"), "unsafe") || r.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s = %d %v", path, r.Status, r.Header)
		}
		html, total := gunzip(t, r.Body), len(r.Body)
		if strings.Contains(html, " style=") || regexp.MustCompile(`<script>|<script [^s]`).MatchString(html) {
			t.Errorf("%s has inline style or script", path)
		}
		for _, m := range assetRE.FindAllStringSubmatch(html, -1) {
			total += len(p.do("GET", m[1], nil, "Accept-Encoding", "br, gzip").Body)
		}
		if total > 150<<10 {
			t.Errorf("%s loads %d bytes compressed; want at most 150 KB", path, total)
		}
	}
}
