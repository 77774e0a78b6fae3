package app_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

var sendKeyRE = regexp.MustCompile(`name="idempotency_key" value="([^"]+)"`)

// sendForm is the send form's fields as a person fills them, with the key the form was drawn
// with.
func (p *pages) sendForm(recipients, message string) url.Values {
	p.t.Helper()
	m := sendKeyRE.FindStringSubmatch(p.get("/app/send").Body)
	if m == nil {
		p.t.Fatal("the send form has no Idempotency-Key")
	}
	return url.Values{"recipients": {recipients}, "message": {message}, "idempotency_key": {m[1]}}
}

// The send form prices as the person types, asks to confirm, and sends once however often it
// is submitted: the second submit lands on the same messages, and nothing more is charged.
func TestSendPageSendsOnce(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("send-once@example.com")
	n.credit(a, "100")
	p := n.pages(t)
	p.signIn(a)
	messages := func() int64 { return n.sqlInt(`SELECT count(*) FROM messages WHERE account_id = $1`, a.ID) }
	debits := func() int64 {
		return n.sqlInt(`SELECT count(*) FROM wallet_transactions WHERE account_id = $1 AND type = 'debit'`, a.ID)
	}

	r := p.get("/app/send").expect(t, http.StatusOK, "")
	for _, want := range []string{"Phone numbers", "Or a contact group", "Message", "Sender", "Your default: the shared sender ID", "Review and send", "Check"} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("the form does not show %q", want)
		}
	}
	pageSecure(t, "/app/send", r)

	form := p.sendForm("0712 000 001\n0712000002, 0733000003; 0712000001", "Habari! Your order has shipped.")
	counter := p.post("/app/send", "/app/send/quote", form).expect(t, http.StatusOK, "").Body
	for _, want := range []string{"3 valid: Safaricom 2, Airtel 1, Telkom 0; 1 repeated, sent once", "GSM-7", "<dt>SMS parts per number</dt><dd>1</dd>",
		"<dt>Invalid numbers</dt><dd>0</dd>", "<dt>Balance</dt><dd>KES 100.00</dd>"} {
		if !strings.Contains(counter, want) {
			t.Errorf("the counter does not show %q:\n%s", want, counter)
		}
	}
	if strings.Contains(counter, "<html") {
		t.Error("the counter came with the layout")
	}
	// Without script: Check shows the same counter in the page, and the look-alike fix is a
	// button that sends the plain text back.
	curly := url.Values{"recipients": {"0712000001"}, "message": {"It’s “done”"}, "idempotency_key": {form.Get("idempotency_key")}}
	checked := p.post("/app/send", "/app/send/check", curly).expect(t, http.StatusOK, "").Body
	if !strings.Contains(checked, "Unicode (UCS-2)") || !strings.Contains(checked, `name="use_suggestion" value="It&#39;s &#34;done&#34;"`) {
		t.Errorf("the checked form:\n%.4000s", checked)
	}
	curly.Set("use_suggestion", `It's "done"`)
	checked = p.post("/app/send", "/app/send/check", curly).expect(t, http.StatusOK, "").Body
	if !strings.Contains(checked, "GSM-7: 160") || !strings.Contains(checked, `>It&#39;s &#34;done&#34;</textarea>`) {
		t.Errorf("the fix taken without script:\n%.4000s", checked)
	}

	review := p.post("/app/send", "/app/send/review", form).expect(t, http.StatusOK, "").Body
	if !strings.Contains(review, "Send this message?") || !strings.Contains(review, `value="`+form.Get("idempotency_key")+`"`) {
		t.Fatalf("the confirmation:\n%s", review)
	}
	if messages() != 0 {
		t.Fatal("the review sent")
	}

	first := p.post("/app/send", "/app/send", form)
	loc := first.Header.Get("Location")
	if first.Status != http.StatusSeeOther || !strings.HasPrefix(loc, "/app/messages?job_id=") {
		t.Fatalf("send = %d → %q:\n%.1500s", first.Status, loc, first.Body)
	}
	again := p.post("/app/send", "/app/send", form).expect(t, http.StatusSeeOther, loc)
	_ = again
	if got := messages(); got != 3 {
		t.Errorf("%d messages after the form was sent twice; want 3", got)
	}
	if got := debits(); got != 1 {
		t.Errorf("%d debits after the form was sent twice; want 1", got)
	}
	if b := n.balance(a); b >= 100 || b < 98 {
		t.Errorf("balance %.2f after 3 SMS", b)
	}

	// The same form with other text is a new send: it says so, with a new key.
	form.Set("message", "Another text")
	r = p.post("/app/send", "/app/send", form)
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, "This form was sent already with other numbers or text") ||
		strings.Contains(r.Body, `value="`+form.Get("idempotency_key")+`"`) {
		t.Errorf("the form sent again with another text = %d:\n%.3000s", r.Status, r.Body)
	}
	if got := messages(); got != 3 {
		t.Errorf("%d messages; want 3", got)
	}
}

// A send the wallet cannot cover says so and sends nothing; invalid numbers are counted and
// named; a form without its token is refused; the text a tenant typed is shown escaped.
func TestSendPageRefusals(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("send-refused@example.com")
	p := n.pages(t)
	p.signIn(a)
	messages := func() int64 { return n.sqlInt(`SELECT count(*) FROM messages WHERE account_id = $1`, a.ID) }

	form := p.sendForm("0712000001\n0712000002", "Hello")
	r := p.post("/app/send", "/app/send", form)
	if r.Status != http.StatusPaymentRequired || !strings.Contains(r.Body, `class="banner error"`) || !strings.Contains(r.Body, "balance") {
		t.Errorf("a send the wallet cannot cover = %d:\n%.3000s", r.Status, r.Body)
	}
	if !strings.Contains(r.Body, "Your balance cannot cover this send.") {
		t.Errorf("the counter does not say the balance is short:\n%.3000s", r.Body)
	}
	if messages() != 0 {
		t.Fatal("a refused send sent")
	}

	// Invalid numbers: counted in the counter, named on the form, nothing sent.
	n.credit(a, "50")
	form = p.sendForm("0712000001\n12345\n0712000002\nhello", "Hello")
	counter := p.post("/app/send", "/app/send/quote", form).Body
	for _, want := range []string{"2 valid: Safaricom 2", "<dt>Invalid numbers</dt><dd>2</dd>", "12345: not a valid Kenyan mobile number", "hello: not a valid Kenyan mobile number"} {
		if !strings.Contains(counter, want) {
			t.Errorf("the counter does not show %q:\n%s", want, counter)
		}
	}
	r = p.post("/app/send", "/app/send/review", form)
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `id="f-recipients-error"`) || !strings.Contains(r.Body, "12345: not a valid Kenyan mobile number") {
		t.Errorf("review with invalid numbers = %d:\n%.3000s", r.Status, r.Body)
	}
	r = p.post("/app/send", "/app/send", form)
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, "12345: not a valid Kenyan mobile number") {
		t.Errorf("send with invalid numbers = %d:\n%.3000s", r.Status, r.Body)
	}
	if messages() != 0 {
		t.Fatal("a send with invalid numbers sent")
	}

	// Only suppressed numbers: the review says so (not "enter a number"), nothing sent.
	n.suppress(a, "0712000777")
	if r := p.post("/app/send", "/app/send/review", p.sendForm("0712000777", "Hello")); r.Status != http.StatusUnprocessableEntity ||
		!strings.Contains(r.Body, "Every number is on your suppression list") {
		t.Errorf("review of a suppressed number only = %d:\n%.3000s", r.Status, r.Body)
	}

	// No token, or a wrong one: refused, nothing sent.
	for name, f := range map[string]url.Values{"no token": {}, "wrong token": {"_csrf": {"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}} {
		f.Set("recipients", "0712000001")
		f.Set("message", "Hello")
		if r := p.do("POST", "/app/send", f); r.Status != http.StatusForbidden {
			t.Errorf("send with %s = %d; want 403", name, r.Status)
		}
	}
	if messages() != 0 {
		t.Fatal("a forged form sent")
	}

	// What the tenant typed comes back escaped: in the counter, the form and the confirmation.
	xss := `<script>alert("x")</script><img src=x onerror=alert(1)>`
	form = p.sendForm("0712000001", xss)
	form.Set("reference", `"><b>ref`)
	for _, path := range []string{"/app/send/quote", "/app/send/check", "/app/send/review"} {
		body := p.post("/app/send", path, form).Body
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") || strings.Contains(body, `"><b>ref`) {
			t.Errorf("%s shows the text unescaped:\n%.3000s", path, body)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(") {
			t.Errorf("%s does not show the text:\n%.3000s", path, body)
		}
	}
}

// A person types a message and sees the counter follow, takes the look-alike fix, confirms,
// sends to three numbers on three networks, and sees them delivered in Messages.
func TestSendPageInBrowser(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("send-browser@example.com")
	n.credit(a, "100")
	b := n.tab(t)
	b.signInAs(a)
	b.open("/app/send")
	b.waitText("Type a message to see its length")

	b.fill("Phone numbers", "0712000001\n0733000002, 0770000003")
	b.fill("Message", "Hello there")
	b.waitText("3 valid: Safaricom 1, Airtel 1, Telkom 1")
	b.waitText("GSM-7: 160 characters")
	// count is the counter's value for a term ("Cost", "SMS parts per number").
	count := func(term string) string {
		return b.eval(`const [term] = arguments;
			const dt = [...document.querySelectorAll('#counter dt')].find(d => d.innerText.trim() === term);
			return dt ? dt.nextElementSibling.innerText.trim() : '';`, term)
	}
	waitCount := func(term, want string) {
		t.Helper()
		deadline := time.Now().Add(tabWait)
		for count(term) != want {
			if time.Now().After(deadline) {
				t.Fatalf("the counter's %s is %q; want %q:\n%s", term, count(term), want, b.text())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitCount("SMS parts per number", "1")
	waitCount("Cost", "KES 1.50")
	waitCount("Balance after", "KES 98.50")

	// Curly quotes and an ellipsis make it Unicode, in two parts; the fix puts plain ones in,
	// in one click, and the counter follows.
	const curly = "It’s ready… collect your order at the shop on Moi Avenue before six o’clock today"
	const plain = "It's ready... collect your order at the shop on Moi Avenue before six o'clock today"
	b.fill("Message", curly)
	b.waitText("Unicode (UCS-2)")
	b.waitText("Replacing look-alike characters")
	waitCount("SMS parts per number", "2")
	waitCount("Cost", "KES 3.00")
	b.checkWidths("send-counter")
	b.click("Use plain characters")
	b.waitFunc("the plain text in the message", `return document.getElementById('f-message').value === "`+plain+`" ? 'yes' : '';`)
	b.waitText("GSM-7: 160 characters")
	waitCount("SMS parts per number", "1")
	waitCount("Cost", "KES 1.50")
	if strings.Contains(b.text(), "Replacing look-alike characters") {
		t.Errorf("the fix is still offered after it was taken:\n%s", b.text())
	}

	b.submit("Review and send")
	b.waitText("Send this message?")
	b.waitText(plain)
	b.checkWidths("send-confirm")
	b.submit("Send now")
	b.waitPath("/app/messages?job_id=")
	b.waitText("Sent to 3 numbers")
	list := b.path()

	// The simulated networks deliver them: the list shows it (the page reloaded until then).
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := b.eval(`return String([...document.querySelectorAll('td[data-label=Status]')].filter(td => td.innerText.trim() === 'Delivered').length);`)
		if got == "3" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s messages delivered; the page shows:\n%s", got, b.text())
		}
		time.Sleep(100 * time.Millisecond)
		b.open(list)
	}
	b.checkWidths("messages")
	b.submit("+254770000003")
	b.waitText("Timeline")
	b.waitText("The phone received it")
	b.checkWidths("message")
}

// A contact group is sent to as its active contacts' numbers, with the numbers typed; another
// tenant's group is refused beside the field, and sends nothing.
func TestSendPageToGroup(t *testing.T) {
	n := startNode(t, fastSims)
	a, other := n.register("send-group@example.com"), n.register("send-group-other@example.com")
	n.credit(a, "100")
	g := n.group(a, "Customers <VIP>")
	n.contact(a, g, "0712000001", "Amina", "Otieno")
	n.contact(a, g, "0733000002", "Brian", "Kamau")
	optedOut := n.newContact(a, "0712000009", "Gone")
	if r := n.do("DELETE", "/contacts/"+optedOut, nil, key(a)...); r.Status != 204 {
		t.Fatalf("delete contact = %d", r.Status)
	}
	theirs := n.group(other, "Theirs")
	n.contact(other, theirs, "0712000005", "Other", "Person")
	p := n.pages(t)
	p.signIn(a)
	messages := func() int64 { return n.sqlInt(`SELECT count(*) FROM messages WHERE account_id = $1`, a.ID) }

	if body := p.get("/app/send").Body; !strings.Contains(body, "Customers &lt;VIP&gt; (2 contacts)") {
		t.Errorf("the form does not offer the group:\n%.4000s", body)
	}
	form := p.sendForm("0712000001\n0770000003", "Hello")
	form.Set("group_id", g)
	if c := p.post("/app/send", "/app/send/quote", form).Body; !strings.Contains(c, "3 valid: Safaricom 1, Airtel 1, Telkom 1; 1 repeated") {
		t.Errorf("the counter with the group:\n%s", c)
	}
	if r := p.post("/app/send", "/app/send/review", form).expect(t, http.StatusOK, "").Body; !strings.Contains(r, "(with the group Customers &lt;VIP&gt; (2 contacts))") {
		t.Errorf("the confirmation does not name the group:\n%.4000s", r)
	}
	p.post("/app/send", "/app/send", form).expect(t, http.StatusSeeOther, "")
	if got := messages(); got != 3 {
		t.Errorf("%d messages to the numbers and the group; want 3", got)
	}

	form = p.sendForm("", "Hello")
	form.Set("group_id", theirs)
	r := p.post("/app/send", "/app/send", form)
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `id="f-group_id-error"`) || !strings.Contains(r.Body, "is not one of your contact groups") {
		t.Errorf("another tenant's group = %d:\n%.4000s", r.Status, r.Body)
	}
	if got := messages(); got != 3 {
		t.Errorf("another tenant's group sent: %d messages", got)
	}
}
