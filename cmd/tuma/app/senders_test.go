package app_test

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Files whose first bytes are what their types start with.
var (
	pdfFile  = append([]byte("%PDF-1.4\n1 0 obj << >> endobj\n"), bytes.Repeat([]byte("x"), 2000)...)
	pngFile  = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0}, 2000)...)
	jpegFile = append([]byte("\xFF\xD8\xFF\xE0"), bytes.Repeat([]byte{1}, 2000)...)
)

// fourDocuments are a valid round of the four documents.
func fourDocuments() map[string][]byte {
	return map[string][]byte{"business_cert": pdfFile, "kra_pin": pngFile, "auth_letter": jpegFile, "request_letter": pdfFile}
}

// upload posts files as multipart/form-data, each under its field name with a client file
// name the server must not use.
func (n *node) upload(path string, files map[string][]byte, headers ...string) response {
	n.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for field, data := range files {
		part, err := w.CreateFormFile(field, "../../etc/"+field+".pdf")
		if err != nil {
			n.t.Fatal(err)
		}
		part.Write(data)
	}
	w.Close()
	req, err := http.NewRequest("POST", n.base+path, &body)
	if err != nil {
		n.t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return n.roundTrip(req)
}

// applySender creates an application and returns its id.
func (n *node) applySender(a account, name, network string) string {
	n.t.Helper()
	r := n.do("POST", "/senders", map[string]string{"name": name, "network": network, "purpose": "order updates"}, key(a)...)
	if r.Status != 201 {
		n.t.Fatalf("apply %s = %d %s", name, r.Status, r.Body)
	}
	return r.json(n.t)["id"].(string)
}

func (n *node) sender(a account, id string) map[string]any {
	n.t.Helper()
	for _, s := range n.do("GET", "/senders", nil, key(a)...).json(n.t)["senders"].([]any) {
		if m := s.(map[string]any); m["id"] == id {
			return m
		}
	}
	n.t.Fatalf("sender %s is not listed", id)
	return nil
}

// payFee pays a sender's fee on the sandbox checkout and waits until it is recorded.
func (n *node) payFee(a account, id string) string {
	n.t.Helper()
	r := n.do("POST", "/senders/"+id+"/pay", nil, key(a)...)
	if r.Status != 200 {
		n.t.Fatalf("pay = %d %s", r.Status, r.Body)
	}
	co := r.json(n.t)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(co["authorization_url"].(string), url.Values{"action": {"pay"}})
	if err != nil {
		n.t.Fatal(err)
	}
	resp.Body.Close()
	waitFor(n.t, 10*time.Second, "the fee to be recorded", func() bool { return n.sender(a, id)["fee_paid"] == true })
	return co["reference"].(string)
}

// approved walks an application to approved: documents, fee, review.
func (n *node) approved(a account, name, network string) string {
	n.t.Helper()
	id := n.applySender(a, name, network)
	if r := n.upload("/senders/"+id+"/documents", fourDocuments(), key(a)...); r.Status != 200 {
		n.t.Fatalf("documents = %d %s", r.Status, r.Body)
	}
	n.payFee(a, id)
	if r := n.do("POST", "/admin/senders/"+id+"/approve", nil, adminAuth()...); r.Status != 200 {
		n.t.Fatalf("approve = %d %s", r.Status, r.Body)
	}
	return id
}

// Every row of the state table, in the order an application lives it, and the refusals on
// the way: each one answers 409 invalid_state and changes nothing.
func TestSenderIDLifecycle(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("senders@example.com")
	n.credit(a, "100")

	r := n.do("POST", "/senders", map[string]string{"name": " acme  shop ", "network": "safaricom", "purpose": "receipts"}, key(a)...)
	if r.Status != 201 {
		t.Fatalf("apply = %d %s", r.Status, r.Body)
	}
	s := r.json(t)
	id := s["id"].(string)
	if s["name"] != "ACMESHOP" || s["status"] != "applied" || s["registration_fee"] != 6000.0 || s["fee_paid"] != false {
		t.Fatalf("new application = %v; want ACMESHOP, applied, fee 6000, unpaid", s)
	}
	n.do("POST", "/senders", map[string]string{"name": "ACMESHOP", "network": "safaricom"}, key(a)...).problem(t, 409, "sender_exists")
	list := n.do("GET", "/senders", nil, key(a)...).json(t)
	if list["system"] != "TUMA" || len(list["senders"].([]any)) != 1 {
		t.Fatalf("list = %v", list)
	}

	refuse := func(what, method, path string, body any) {
		t.Helper()
		before := n.sender(a, id)["status"]
		var r response
		if method == "UPLOAD" {
			r = n.upload(path, fourDocuments(), key(a)...)
		} else {
			hdrs := key(a)
			if strings.HasPrefix(path, "/admin/") {
				hdrs = adminAuth()
			}
			r = n.do(method, path, body, hdrs...)
		}
		r.problem(t, 409, "invalid_state")
		if after := n.sender(a, id)["status"]; after != before {
			t.Errorf("%s: refused, but the status moved from %v to %v", what, before, after)
		}
	}
	// applied: nothing but documents (or cancel, or pay).
	refuse("re-apply before any rejection", "UPLOAD", "/senders/"+id+"/re-apply", nil)
	refuse("approve without documents", "POST", "/admin/senders/"+id+"/approve", nil)
	refuse("reject without documents", "POST", "/admin/senders/"+id+"/reject", map[string]string{"reason": "x"})
	refuse("default before approval", "PATCH", "/senders/"+id+"/set-default", nil)

	// applied → documents_submitted → (fee unpaid) payment_pending.
	r = n.upload("/senders/"+id+"/documents", fourDocuments(), key(a)...)
	if r.Status != 200 || r.json(t)["status"] != "payment_pending" {
		t.Fatalf("documents = %d %s; want payment_pending", r.Status, r.Body)
	}
	if c := n.sqlInt(`SELECT count(*) FROM sender_documents WHERE sender_id = $1 AND round = 1`, id); c != 4 {
		t.Errorf("%d documents stored for round 1; want 4", c)
	}
	if c := n.sqlInt(`SELECT count(*) FROM sender_documents WHERE sender_id = $1 AND storage_key LIKE '%etc%'`, id); c != 0 {
		t.Errorf("a stored document is named after the client's file name")
	}
	refuse("documents twice", "UPLOAD", "/senders/"+id+"/documents", nil)
	refuse("approval without the fee", "POST", "/admin/senders/"+id+"/approve", nil)

	// Paying: the open checkout is given again, then the fee is recorded once.
	first := n.do("POST", "/senders/"+id+"/pay", nil, key(a)...).json(t)["reference"]
	ref := n.payFee(a, id)
	if ref != first {
		t.Errorf("the second pay started another checkout (%v, then %v)", first, ref)
	}
	if st := n.sender(a, id)["status"]; st != "documents_submitted" {
		t.Errorf("status after the fee = %v; want documents_submitted", st)
	}
	refuse("pay twice", "POST", "/senders/"+id+"/pay", nil)
	if c := n.sqlInt(`SELECT count(*) FROM wallet_transactions WHERE account_id = $1 AND type = 'sender_id_fee'`, a.ID); c != 1 {
		t.Errorf("%d sender_id_fee entries; want 1", c)
	}
	if b := n.do("GET", "/wallet", nil, key(a)...).json(t)["balance_kes"]; b != 100.0 {
		t.Errorf("balance %v after the fee; want 100 (the fee is paid at checkout, not from the wallet)", b)
	}

	// Review rejects with a reason; the account hears why.
	n.do("POST", "/admin/senders/"+id+"/reject", map[string]string{"reason": " "}, adminAuth()...).problem(t, 422, "validation_failed")
	r = n.do("POST", "/admin/senders/"+id+"/reject", map[string]string{"reason": "the KRA PIN is unreadable"}, adminAuth()...)
	if r.Status != 200 || r.json(t)["status"] != "rejected" || r.json(t)["rejection_reason"] != "the KRA PIN is unreadable" {
		t.Fatalf("reject = %d %s", r.Status, r.Body)
	}
	if !hasNotification(n, a, "sender_id_rejected", "the KRA PIN is unreadable") {
		t.Error("no sender_id_rejected notification naming the reason")
	}
	refuse("documents after a rejection", "UPLOAD", "/senders/"+id+"/documents", nil)
	refuse("approval after a rejection", "POST", "/admin/senders/"+id+"/approve", nil)

	// Re-apply: a new round of documents, the reason cleared, no second fee.
	r = n.upload("/senders/"+id+"/re-apply", fourDocuments(), key(a)...)
	if r.Status != 200 || r.json(t)["status"] != "documents_submitted" || r.json(t)["rejection_reason"] != nil {
		t.Fatalf("re-apply = %d %s; want documents_submitted, reason cleared", r.Status, r.Body)
	}
	if c := n.sqlInt(`SELECT count(*) FROM sender_documents WHERE sender_id = $1`, id); c != 8 {
		t.Errorf("%d documents kept; want 8 (both rounds)", c)
	}
	if c := n.sqlInt(`SELECT count(*) FROM payments WHERE sender_id = $1`, id); c != 1 {
		t.Errorf("%d fee payments after re-applying; want 1", c)
	}

	// Approve, then the default: the very next send goes out under it, without the prefix.
	r = n.do("POST", "/admin/senders/"+id+"/approve", nil, adminAuth()...)
	if r.Status != 200 || r.json(t)["status"] != "approved" || r.json(t)["is_active"] != true || r.json(t)["account_id"] != a.ID {
		t.Fatalf("approve = %d %s", r.Status, r.Body)
	}
	if !hasNotification(n, a, "sender_id_approved", "ACMESHOP") {
		t.Error("no sender_id_approved notification")
	}
	refuse("rejecting an approved sender", "POST", "/admin/senders/"+id+"/reject", map[string]string{"reason": "x"})
	refuse("cancelling an approved, active sender", "DELETE", "/senders/"+id, nil)
	msg := strings.Repeat("a", 155) // one part alone, two with "Acme Ltd: " before it
	before := n.send(a, map[string]any{"recipients": numbers(1, 0), "message": msg}).json(t)
	if before["cost_kes"] != 1.0 {
		t.Errorf("shared-sender send cost %v; want 1.00 (two parts with the company prefix)", before["cost_kes"])
	}
	if r := n.do("PATCH", "/senders/"+id+"/set-default", nil, key(a)...); r.Status != 200 || r.json(t)["is_default"] != true {
		t.Fatalf("set-default = %d %s", r.Status, r.Body)
	}
	after := n.send(a, map[string]any{"recipients": numbers(1, 1), "message": msg}).json(t)
	if after["cost_kes"] != 0.5 {
		t.Errorf("send right after set-default cost %v; want 0.50 (one part, no prefix)", after["cost_kes"])
	}
	m := n.do("GET", "/sms/messages?job_id="+after["job_id"].(string), nil, key(a)...).json(t)["data"].([]any)[0].(map[string]any)
	if m["sender_id"] != "ACMESHOP" || m["message"] != msg {
		t.Errorf("message after set-default: sender %v, text %q; want ACMESHOP without a prefix", m["sender_id"], m["message"])
	}
}

func hasNotification(n *node, a account, typ, text string) bool {
	for _, x := range n.do("GET", "/notifications", nil, key(a)...).json2(n.t) {
		m := x.(map[string]any)
		if m["type"] == typ && strings.Contains(m["message"].(string)+m["title"].(string), text) {
			return true
		}
	}
	return false
}

// Two set-default calls at once leave exactly one default, whichever wins.
func TestConcurrentSetDefaultLeavesOne(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("defaults@example.com")
	ids := []string{n.approved(a, "FIRST", "all"), n.approved(a, "SECOND", "all")}
	for round := range 10 {
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				if r := n.do("PATCH", "/senders/"+ids[(i+round)%2]+"/set-default", nil, key(a)...); r.Status != 200 {
					t.Errorf("set-default = %d %s", r.Status, r.Body)
				}
			})
		}
		wg.Wait()
		if c := n.sqlInt(`SELECT count(*) FROM sender_ids WHERE account_id = $1 AND is_default`, a.ID); c != 1 {
			t.Fatalf("round %d: %d defaults; want exactly 1", round, c)
		}
	}
}

// Documents are checked by their content and size, and a bad round stores nothing.
func TestSenderDocumentsAreChecked(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("docs@example.com")
	id := n.applySender(a, "DOCS", "airtel")
	path := "/senders/" + id + "/documents"

	fake := fourDocuments()
	fake["kra_pin"] = []byte("this is a text file renamed kra_pin.pdf")
	p := n.upload(path, fake, key(a)...).problem(t, 422, "validation_failed")
	if !strings.Contains(fmt.Sprint(p["errors"]), "kra_pin") {
		t.Errorf("fake PDF: %v does not name kra_pin", p)
	}
	missing := fourDocuments()
	delete(missing, "auth_letter")
	if p := n.upload(path, missing, key(a)...).problem(t, 422, "validation_failed"); !strings.Contains(fmt.Sprint(p["errors"]), "auth_letter") {
		t.Errorf("missing file: %v does not name auth_letter", p)
	}
	empty := fourDocuments()
	empty["business_cert"] = nil
	n.upload(path, empty, key(a)...).problem(t, 422, "validation_failed")
	if c := n.sqlInt(`SELECT count(*) FROM sender_documents WHERE sender_id = $1`, id); c != 0 {
		t.Errorf("%d documents recorded by refused rounds", c)
	}
	if st := n.sender(a, id)["status"]; st != "applied" {
		t.Errorf("status %v after refused rounds; want applied", st)
	}
	// Not multipart: 415.
	n.do("POST", path, map[string]string{"business_cert": "x"}, key(a)...).problem(t, 415, "unsupported_media_type")

	// A 7 MB file is refused while it streams: the node never holds it. The body is written
	// as it is sent, so the test itself allocates little of it either.
	pr, pw := io.Pipe()
	w := multipart.NewWriter(pw)
	go func() {
		part, _ := w.CreateFormFile("business_cert", "big.pdf")
		part.Write([]byte("%PDF-1.4\n"))
		chunk := bytes.Repeat([]byte("y"), 64<<10)
		for sent := 0; sent < 7<<20; sent += len(chunk) {
			if _, err := part.Write(chunk); err != nil {
				break
			}
		}
		w.Close()
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", n.base+path, pr)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("X-API-Key", a.APIKey)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err := http.DefaultClient.Do(req)
	runtime.ReadMemStats(&after)
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 422 && resp.StatusCode != 413 {
			t.Errorf("7 MB file = %d %s; want 422 or 413", resp.StatusCode, body)
		}
		if resp.StatusCode == 422 && !bytes.Contains(body, []byte("5 MB")) {
			t.Errorf("7 MB file: %s does not say the limit", body)
		}
	} // else: the node closed the connection while the client was still sending, as it may
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Errorf("the process allocated %d MB while a 7 MB file was refused; the upload is buffered", grew>>20)
	}
	if c := n.sqlInt(`SELECT count(*) FROM sender_documents WHERE sender_id = $1`, id); c != 0 {
		t.Errorf("%d documents recorded by the refused upload", c)
	}
}

// Another tenant's application is a 404 on every endpoint, and its name or id in a send is
// no approved sender of the caller's.
func TestSenderIDsAreTheTenantsOwn(t *testing.T) {
	n := startNode(t, fastSims)
	owner, other := n.register("owner@example.com"), n.register("other@example.com")
	n.credit(other, "10")
	id := n.approved(owner, "OWNED", "all")
	n.do("POST", "/senders/"+id+"/pay", nil, key(other)...).problem(t, 404, "not_found")
	n.do("PATCH", "/senders/"+id+"/set-default", nil, key(other)...).problem(t, 404, "not_found")
	n.do("DELETE", "/senders/"+id, nil, key(other)...).problem(t, 404, "not_found")
	n.upload("/senders/"+id+"/documents", fourDocuments(), key(other)...).problem(t, 404, "not_found")
	n.upload("/senders/"+id+"/re-apply", fourDocuments(), key(other)...).problem(t, 404, "not_found")
	if l := n.do("GET", "/senders", nil, key(other)...).json(t)["senders"].([]any); len(l) != 0 {
		t.Errorf("another tenant's list shows %v", l)
	}
	for _, s := range []string{id, "OWNED"} {
		n.send(other, map[string]any{"recipients": numbers(1, 0), "message": "hi", "sender_id": s}).problem(t, 422, "sender_not_approved")
	}
	// A suspended account is refused, and its default stays its own.
	n.do("POST", "/admin/accounts/"+owner.ID+"/suspend", nil, adminAuth()...)
	n.do("GET", "/senders", nil, key(owner)...).problem(t, 403, "account_suspended")
	n.do("PATCH", "/senders/"+id+"/set-default", nil, key(owner)...).problem(t, 403, "account_suspended")
}

// The letters' templates are PDFs, downloaded as attachments, with the company's name for a
// signed-in caller.
func TestSenderLetterTemplates(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("letters@example.com")
	for _, kind := range []string{"auth-letter", "request-letter"} {
		for _, signedIn := range []bool{false, true} {
			var hdrs []string
			if signedIn {
				hdrs = key(a)
			}
			r := n.do("GET", "/senders/templates/"+kind+"/download", nil, hdrs...)
			if r.Status != 200 || r.Header.Get("Content-Type") != "application/pdf" ||
				!strings.HasPrefix(r.Header.Get("Content-Disposition"), "attachment;") ||
				!bytes.HasPrefix(r.Body, []byte("%PDF-1.4")) || !bytes.HasSuffix(r.Body, []byte("%%EOF\n")) {
				t.Fatalf("%s = %d %v %.40q", kind, r.Status, r.Header, r.Body)
			}
			if has := bytes.Contains(r.Body, []byte("Acme Ltd")); has != signedIn {
				t.Errorf("%s signed in %v: company name in it %v", kind, signedIn, has)
			}
		}
	}
	n.do("GET", "/senders/templates/other/download", nil).problem(t, 404, "not_found")
	n.do("GET", "/senders/templates/auth-letter/download", nil, "X-API-Key", "sk_live_wrong").problem(t, 401, "unauthenticated")
}
