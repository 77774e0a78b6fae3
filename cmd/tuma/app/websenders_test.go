package app_test

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tuma-sms/tuma/transport/pdf"
)

// signInAs signs the tab in as a through the sign-in page.
func (b *tab) signInAs(a account) {
	b.t.Helper()
	b.open("/app/login")
	b.fill("Email address", a.Email)
	b.fill("Password", a.Password)
	b.submit("Sign in")
	b.waitText("Overview")
}

// attach chooses a file for the file input labelled label.
func (b *tab) attach(label, file string) {
	b.t.Helper()
	id := b.eval(`const [label] = arguments;
		const norm = s => s.replace(/\s+/g, ' ').replace(' (optional)', '').trim();
		const ls = [...document.querySelectorAll('label')].filter(l => norm(l.textContent) === label && l.control && l.control.type === 'file');
		return ls.length === 1 ? ls[0].control.id : '';`, label)
	if id == "" {
		b.t.Fatalf("no one file input labelled %q on %s", label, b.path())
	}
	if err := chromedp.Do(b.ctx, chromedp.SetUploadFiles(chromedp.ID(id), []string{file})); err != nil {
		b.t.Fatalf("attach %s: %v", file, err)
	}
}

// checkWidths runs the accessibility check at 1280 and at 375 pixels wide, and takes the
// page's screenshots under make screenshots.
func (b *tab) checkWidths(name string) {
	b.t.Helper()
	b.check(name)
	if err := chromedp.Do(b.ctx, chromedp.EmulateViewport(375, 800)); err != nil {
		b.t.Fatal(err)
	}
	b.axe()
	if wide := b.eval(`return document.documentElement.scrollWidth > window.innerWidth + 1 ? String(document.documentElement.scrollWidth) : '';`); wide != "" {
		b.t.Errorf("%s is %s pixels wide at 375: it scrolls sideways", b.path(), wide)
	}
	if err := chromedp.Do(b.ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		b.t.Fatal(err)
	}
}

// waitPath waits until the tab's address starts with prefix (after redirects).
func (b *tab) waitPath(prefix string) string {
	b.t.Helper()
	deadline := time.Now().Add(tabWait)
	for {
		p := b.path()
		if strings.HasPrefix(p, prefix) && b.eval(`return document.readyState;`) == "complete" {
			return p
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("the tab is at %q; want %s…", p, prefix)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// senderDocs writes the files a person uploads: real PDF, PNG and JPEG documents, a text
// file that is none of them, and a PDF over 5 MB.
type senderDocs struct{ pdf, png, jpeg, text, large string }

func writeSenderDocs(t *testing.T) senderDocs {
	t.Helper()
	dir := t.TempDir()
	img := image.NewRGBA(image.Rect(0, 0, 40, 20))
	for x := range 40 {
		img.Set(x, 10, color.RGBA{0, 110, 80, 255})
	}
	var pngBuf, jpegBuf bytes.Buffer
	if err := png.Encode(&pngBuf, img); err != nil {
		t.Fatal(err)
	}
	if err := jpeg.Encode(&jpegBuf, img, nil); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"certificate.pdf": pdf.Page("Certificate of incorporation", []pdf.Line{{Text: "Acme Ltd"}}),
		"kra-pin.png":     pngBuf.Bytes(),
		"letter.jpg":      jpegBuf.Bytes(),
		"notes.pdf":       []byte("not a PDF, whatever its name says\n"),
		"scan.pdf":        append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("0"), 6<<20)...),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return senderDocs{filepath.Join(dir, "certificate.pdf"), filepath.Join(dir, "kra-pin.png"), filepath.Join(dir, "letter.jpg"),
		filepath.Join(dir, "notes.pdf"), filepath.Join(dir, "scan.pdf")}
}

// The four documents' labels on the upload form.
const (
	certLabel    = "Certificate of incorporation or business registration"
	kraLabel     = "KRA PIN certificate"
	authLabel    = "Authorisation letter, signed and stamped"
	requestLabel = "Request letter, signed"
)

// attachAll chooses a valid file for each of the four documents.
func (b *tab) attachAll(d senderDocs) {
	b.t.Helper()
	b.attach(certLabel, d.pdf)
	b.attach(kraLabel, d.png)
	b.attach(authLabel, d.jpeg)
	b.attach(requestLabel, d.pdf)
}

var senderPathRE = regexp.MustCompile(`^/app/senders/([0-9a-f-]{36})$`)

// A person applies for a sender ID in the browser (a bad name first), uploads its documents
// (a bad file first), pays the fee through the sandbox checkout, and, once an operator
// approves it, makes it the default: the list then says so.
func TestSenderIDPagesInBrowser(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("sender-pages@example.com")
	docs := writeSenderDocs(t)
	b := n.tab(t)
	b.signInAs(a)
	b.open("/app/senders")
	b.waitText("the shared sender ID TUMA")
	b.waitText("You have not applied for a sender ID yet.")
	b.checkWidths("senders")

	b.fill("Sender name", "x")
	b.fill("Network", "safaricom")
	b.submit("Apply")
	b.waitText("must be 2 to 11 letters and digits")
	b.checkWidths("senders-apply-errors")
	b.fill("Sender name", "Acme Shop")
	b.submit("Apply")
	b.waitText("You applied for ACMESHOP. Next, upload its four documents.")
	m := senderPathRE.FindStringSubmatch(b.path())
	if m == nil {
		t.Fatalf("after applying the tab is at %q; want the application's page", b.path())
	}
	id := m[1]
	for _, want := range []string{"Waiting for its documents", "Safaricom", "KES 6,000.00, not paid yet"} {
		b.waitText(want)
	}
	b.checkWidths("sender-applied")

	// A file that is not a PDF, PNG or JPEG is named beside its field; nothing is kept.
	b.attach(certLabel, docs.text)
	b.attach(kraLabel, docs.png)
	b.attach(authLabel, docs.jpeg)
	b.attach(requestLabel, docs.pdf)
	b.submit("Upload documents")
	b.waitText("must be a PDF, PNG or JPEG file")
	if got := b.eval(`const e = document.getElementById('f-business_cert-error'); return e ? e.innerText : '';`); !strings.Contains(got, "must be a PDF, PNG or JPEG") {
		t.Errorf("the certificate's field says %q; want why its file was refused", got)
	}
	b.checkWidths("sender-documents-error")
	// A file over 5 MB is refused while the browser is still sending the rest: the page
	// shows why, not a broken connection.
	b.attach(certLabel, docs.large)
	b.attach(kraLabel, docs.png)
	b.attach(authLabel, docs.jpeg)
	b.attach(requestLabel, docs.pdf)
	b.submit("Upload documents")
	b.waitText("must be at most 5 MB")
	if st := n.sender(a, id)["status"]; st != "applied" {
		t.Fatalf("after a refused upload the status is %v", st)
	}

	b.attachAll(docs)
	b.submit("Upload documents")
	b.waitText("the documents are in")
	b.waitText("Documents received: waiting for the fee")
	b.checkWidths("sender-fee-due")
	if kept := n.sqlInt(`SELECT count(*) FROM sender_documents WHERE sender_id = $1`, id); kept != 4 {
		t.Errorf("%d documents stored; want the 4 of the round", kept)
	}

	// The fee: the sandbox checkout, then back on the application's page.
	b.submit("Pay the fee")
	b.waitPath("/checkout/")
	if amount := b.eval(`return document.getElementById('amount').innerText;`); amount != "KES 6,000.00" {
		t.Errorf("the checkout asks for %q; want the fee", amount)
	}
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.ID("pay"))); err != nil {
		t.Fatal(err)
	}
	b.waitPath("/app/senders/" + id)
	b.waitText("The registration fee is paid.")
	b.waitText("KES 6,000.00, paid")
	b.checkWidths("sender-fee-paid")

	if r := n.do("POST", "/admin/senders/"+id+"/approve", nil, adminAuth()...); r.Status != 200 {
		t.Fatalf("approve = %d %s", r.Status, r.Body)
	}
	b.open("/app/senders/" + id)
	b.waitText("Approved")
	b.checkWidths("sender-approved")
	b.submit("Use as default sender")
	b.waitText("Your messages now go out under ACMESHOP.")
	if p := b.path(); p != "/app/senders" {
		t.Errorf("after setting the default the tab is at %q", p)
	}
	b.waitText("Your messages go out under ACMESHOP, your own sender ID.")
	b.waitText("ACMESHOP (default)")
	b.checkWidths("senders-default")
	if s := n.sender(a, id); s["is_default"] != true {
		t.Errorf("the API says %v; want it the default", s)
	}
}

// An operator's rejection reason is shown as text, on the list and the application's page;
// re-applying with new documents clears it, and an application can be withdrawn.
func TestSenderRejectionInBrowser(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("rejected@example.com")
	evil := `<img src=x onerror=alert(1)> stamp is <b>missing</b>`
	r := n.do("POST", "/senders", map[string]string{"name": "SHOP2", "network": "airtel", "purpose": `<script>alert(2)</script>`}, key(a)...)
	if r.Status != 201 {
		t.Fatalf("apply = %d %s", r.Status, r.Body)
	}
	id := r.json(t)["id"].(string)
	if r := n.upload("/senders/"+id+"/documents", fourDocuments(), key(a)...); r.Status != 200 {
		t.Fatalf("documents = %d %s", r.Status, r.Body)
	}
	if r := n.do("POST", "/admin/senders/"+id+"/reject", map[string]string{"reason": evil}, adminAuth()...); r.Status != 200 {
		t.Fatalf("reject = %d %s", r.Status, r.Body)
	}

	p := n.pages(t)
	p.signIn(a)
	for _, path := range []string{"/app/senders", "/app/senders/" + id} {
		body := p.get(path).expect(t, http.StatusOK, "").Body
		if strings.Contains(body, "<img src=x") || strings.Contains(body, "<b>missing") || strings.Contains(body, "<script>alert") ||
			!strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt; stamp is &lt;b&gt;missing&lt;/b&gt;") {
			t.Errorf("%s shows the reason unescaped:\n%s", path, body)
		}
	}

	docs := writeSenderDocs(t)
	b := n.tab(t)
	b.signInAs(a)
	b.open("/app/senders/" + id)
	b.waitText("Why it was rejected: " + evil)
	b.waitText(`<script>alert(2)</script>`)
	b.checkWidths("sender-rejected")
	b.attachAll(docs)
	b.submit("Re-apply")
	b.waitText("the documents are in")
	if text := b.text(); strings.Contains(text, "Why it was rejected") {
		t.Errorf("after re-applying the page still shows the reason:\n%s", text)
	}
	if s := n.sender(a, id); s["status"] == "rejected" || s["rejection_reason"] != nil {
		t.Errorf("after re-applying the API says %v", s)
	}
	b.submit("Cancel the application")
	b.waitText("The application for SHOP2 is cancelled.")
	b.waitText("You have not applied for a sender ID yet.")
}

// uploadForm posts the four documents as a page's form would, the token where given ("" for
// none) and first or last.
func (p *pages) uploadForm(path, token string, tokenFirst bool) page {
	p.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	if token != "" && tokenFirst {
		w.WriteField("_csrf", token)
	}
	for field, data := range fourDocuments() {
		part, err := w.CreateFormFile(field, field+".pdf")
		if err != nil {
			p.t.Fatal(err)
		}
		part.Write(data)
	}
	if token != "" && !tokenFirst {
		w.WriteField("_csrf", token)
	}
	w.Close()
	req, err := http.NewRequest("POST", p.n.base+path, &body)
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := p.http.Do(req)
	if err != nil {
		p.t.Fatalf("upload to %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	return page{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

// A state change without the page's token changes nothing (an upload's token must come
// first); another account's sender ID is a 404 page whatever is asked of it; the letters
// download as PDFs.
func TestSenderPagesRefuseForgeriesAndOthersIDs(t *testing.T) {
	n := startNode(t, nil)
	a, other := n.register("mine-sid@example.com"), n.register("theirs-sid@example.com")
	mine := n.applySender(a, "MINE", "safaricom")
	theirs := n.applySender(other, "THEIRS", "telkom")
	p := n.pages(t)
	p.signIn(a)
	token := p.token("/app/senders")
	elsewhere := n.pages(t) // another session of the same account
	elsewhere.signIn(a)

	count := func() int64 { return n.sqlInt(`SELECT count(*) FROM sender_ids WHERE account_id = $1`, a.ID) }
	before := count()
	for name, form := range map[string]url.Values{"no token": {}, "wrong token": {"_csrf": {"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}} {
		form.Set("name", "FORGED")
		form.Set("network", "airtel")
		if r := p.do("POST", "/app/senders", form); r.Status != http.StatusForbidden {
			t.Errorf("apply with %s = %d; want 403", name, r.Status)
		}
		for _, action := range []string{"pay", "default", "cancel"} {
			if r := p.do("POST", "/app/senders/"+mine+"/"+action, form); r.Status != http.StatusForbidden {
				t.Errorf("%s with %s = %d; want 403", action, name, r.Status)
			}
		}
	}
	if count() != before {
		t.Error("a refused form made an application")
	}
	for name, r := range map[string]page{
		"no token":      p.uploadForm("/app/senders/"+mine+"/documents", "", true),
		"wrong token":   p.uploadForm("/app/senders/"+mine+"/documents", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", true),
		"token last":    p.uploadForm("/app/senders/"+mine+"/documents", token, false),
		"another's tok": p.uploadForm("/app/senders/"+mine+"/documents", elsewhere.token("/app/senders"), true),
	} {
		if r.Status != http.StatusForbidden || !strings.Contains(r.Body, "nothing was changed") {
			t.Errorf("upload with %s = %d:\n%.300s", name, r.Status, r.Body)
		}
	}
	if st := n.sender(a, mine)["status"]; st != "applied" || n.sqlInt(`SELECT count(*) FROM sender_documents WHERE sender_id = $1`, mine) != 0 {
		t.Fatalf("a refused upload changed the application: %v", st)
	}
	p.uploadForm("/app/senders/"+mine+"/documents", token, true).expect(t, http.StatusSeeOther, "/app/senders/"+mine)
	for _, path := range []string{"/app/senders", "/app/senders/" + mine} {
		pageSecure(t, path, p.get(path).expect(t, http.StatusOK, ""))
	}

	// Another account's application: not found, and left as it was.
	if r := p.get("/app/senders/" + theirs); r.Status != http.StatusNotFound || !strings.Contains(r.Body, "Page not found") {
		t.Errorf("another account's application = %d:\n%.300s", r.Status, r.Body)
	}
	for _, action := range []string{"pay", "default", "cancel"} {
		if r := p.post("/app/senders", "/app/senders/"+theirs+"/"+action, nil); r.Status != http.StatusNotFound {
			t.Errorf("%s another account's application = %d; want 404", action, r.Status)
		}
	}
	if r := p.uploadForm("/app/senders/"+theirs+"/documents", token, true); r.Status != http.StatusNotFound {
		t.Errorf("upload to another account's application = %d; want 404", r.Status)
	}
	if s := n.sender(other, theirs); s["status"] != "applied" {
		t.Errorf("another account's application became %v", s["status"])
	}
	if r := p.get("/app/senders/not-a-uuid"); r.Status != http.StatusNotFound {
		t.Errorf("a malformed id = %d", r.Status)
	}

	for _, kind := range []string{"auth-letter", "request-letter"} {
		r := p.get("/app/senders/letters/" + kind)
		if r.Status != 200 || r.Header.Get("Content-Type") != "application/pdf" || !strings.HasPrefix(r.Body, "%PDF-") ||
			!strings.Contains(r.Header.Get("Content-Disposition"), "attachment") {
			t.Errorf("%s = %d %v", kind, r.Status, r.Header)
		}
	}
	if r := p.get("/app/senders/letters/nope"); r.Status != http.StatusNotFound {
		t.Errorf("an unknown letter = %d", r.Status)
	}
}
