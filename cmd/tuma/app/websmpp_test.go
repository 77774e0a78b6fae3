package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/tuma-sms/tuma/carriers/smpp"
)

var smppCredRE = regexp.MustCompile(`/app/developers/smpp/([0-9a-f-]{36})/rotate-password`)

// In a browser: the SMPP page says where to bind, makes a credential whose password it shows
// once and that binds to the node's SMPP server; the credential's page changes its settings,
// makes a new password (the old one stops binding) and deletes it. Each page passes the
// accessibility check at both widths.
func TestDashboardSMPPCredentialsInBrowser(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_SMPP_SERVER_ADDR": "127.0.0.1:0", "TUMA_RATE_LIMIT_RPS": "0", "TUMA_SIM_OUTCOMES": "delivered=1"})
	a := n.register("smpp-pages@example.com")
	b := n.tab(t)
	b.signInAs(a)
	b.open("/app/developers")
	b.waitText("Manage SMPP credentials")
	b.open("/app/developers/smpp")
	b.waitText("No credentials yet.")
	b.waitText(n.smpp[strings.LastIndexByte(n.smpp, ':'):]) // where to bind: the server's port
	b.checkWidths("smpp")

	b.fill("Binds at most", "0")
	b.submit("Make credential")
	b.waitText("must be an integer from 1 to 100")
	b.fill("Binds at most", "2")
	b.fill("Addresses that may bind", "127.0.0.1\nnot-an-address")
	b.submit("Make credential")
	b.waitText("line 2:")
	b.fill("Addresses that may bind", "127.0.0.1\n10.0.0.0/8")
	b.fill("system_id", "duka_esme")
	b.submit("Make credential")
	b.waitText("Copy it now: it is not shown again.")
	b.checkWidths("smpp-created")
	password := b.eval(`return document.getElementById('password').textContent;`)
	if len(password) != 8 {
		t.Fatalf("the page shows the password %q; want 8 characters", password)
	}
	e := dialESME(t, n.smpp)
	if st := e.bind(smpp.BindTransceiver, "duka_esme", password); st != smpp.StatusOK {
		t.Fatalf("binding with the password the page showed = %s", st)
	}
	m := smppCredRE.FindStringSubmatch(b.eval(`return document.body.innerHTML;`))
	if m == nil {
		t.Fatal("the created credential's page has no rotate form")
	}
	page := "/app/developers/smpp/" + m[1]
	b.open(page)
	if strings.Contains(b.text(), password) {
		t.Error("the credential's page shows the password again")
	}
	b.waitText("127.0.0.1, 10.0.0.0/8")

	b.fill("Binds at most", "3")
	b.choose("f-enabled") // off
	b.submit("Save settings")
	b.waitText("Saved the credential’s settings.")
	b.waitText("duka_esme: disabled")
	if st := dialESME(t, n.smpp).bind(smpp.BindTransmitter, "duka_esme", password); st != smpp.StatusBindFail {
		t.Errorf("a disabled credential binds: %s; want ESME_RBINDFAIL", st)
	}
	b.choose("f-enabled") // on again
	b.submit("Save settings")
	b.waitText("duka_esme: enabled")

	b.click("Make a new password")
	b.submit("Yes, make a new password")
	b.waitText("The credential’s new password")
	rotated := b.eval(`return document.getElementById('password').textContent;`)
	if rotated == password || len(rotated) != 8 {
		t.Fatalf("the new password %q; want 8 characters, not the old %q", rotated, password)
	}
	if st := dialESME(t, n.smpp).bind(smpp.BindTransmitter, "duka_esme", password); st != smpp.StatusInvPaswd {
		t.Errorf("the old password binds: %s; want ESME_RINVPASWD", st)
	}
	if st := dialESME(t, n.smpp).bind(smpp.BindTransmitter, "duka_esme", rotated); st != smpp.StatusOK {
		t.Errorf("the new password: %s; want ESME_ROK", st)
	}
	b.checkWidths("smpp-credential")

	b.click("Delete credential")
	b.submit("Delete this credential")
	b.waitText("Deleted the credential duka_esme")
	b.waitText("No credentials yet.")
}

// Another tenant's credential is a 404 on every page and action; a form without its CSRF
// token changes nothing; a system_id another account has is said beside its field.
func TestDashboardSMPPPagesRefuse(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_SMPP_SERVER_ADDR": "127.0.0.1:0", "TUMA_RATE_LIMIT_RPS": "0", "TUMA_SIM_OUTCOMES": "delivered=1"})
	a, other := n.register("smpp-a@example.com"), n.register("smpp-b@example.com")
	systemID, _ := n.smppCredential(other, map[string]any{"system_id": "taken_id"})
	var creds []map[string]any
	r := n.do("GET", "/smpp/credentials", nil, key(other)...)
	if err := json.Unmarshal(r.Body, &creds); err != nil || len(creds) != 1 {
		t.Fatalf("other's credentials: %v %s", err, r.Body)
	}
	theirs := "/app/developers/smpp/" + creds[0]["id"].(string)
	p := n.pages(t)
	p.signIn(a)
	const list = "/app/developers/smpp"
	if r := p.get(theirs); r.Status != http.StatusNotFound {
		t.Errorf("another tenant's credential page = %d; want 404", r.Status)
	}
	for _, action := range []string{"", "/rotate-password", "/delete"} {
		if r := p.post(list, theirs+action, url.Values{"max_binds": {"1"}}); r.Status != http.StatusNotFound {
			t.Errorf("POST %s on another tenant's credential = %d; want 404", action, r.Status)
		}
	}
	if r := p.post(list, list, url.Values{"system_id": {systemID}, "max_binds": {"1"}}); r.Status != http.StatusConflict ||
		!strings.Contains(r.Body, `id="f-system_id-error"`) {
		t.Errorf("a system_id another account has = %d:\n%.3000s", r.Status, r.Body)
	}
	if r := p.do("POST", list, url.Values{"max_binds": {"1"}}); r.Status != http.StatusForbidden {
		t.Errorf("a form without its CSRF token = %d; want 403", r.Status)
	}
	if n := n.sqlInt(`SELECT count(*) FROM smpp_credentials WHERE account_id = $1`, a.ID); n != 0 {
		t.Errorf("%d credentials after refused forms; want 0", n)
	}
	if n := n.sqlInt(`SELECT max_binds FROM smpp_credentials WHERE system_id = 'taken_id'`); n != 4 {
		t.Errorf("the other tenant's credential has max_binds %d; want its 4 unchanged", n)
	}
}

// The credential form sent twice (a reload of the page with the password, a double click)
// makes one credential: the second answer leads to it, saying so, without the password.
func TestDashboardSMPPFormSentTwiceMakesOne(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("smpp-twice@example.com")
	p := n.pages(t)
	p.signIn(a)
	const list = "/app/developers/smpp"
	form := url.Values{"system_id": {"twice_esme"}, "max_binds": {"2"}, "allowed_ips": {""}, "form_key": {p.formKey(list)}}
	first := p.post(list, list, form)
	c := smppCredRE.FindStringSubmatch(first.Body)
	if first.Status != http.StatusCreated || c == nil {
		t.Fatalf("create = %d:\n%.3000s", first.Status, first.Body)
	}
	again := p.post(list, list, form)
	if again.Status != http.StatusSeeOther || again.Header.Get("Location") != list+"/"+c[1] {
		t.Fatalf("the form sent again = %d → %q; want 303 to the credential it made", again.Status, again.Header.Get("Location"))
	}
	if r := p.get(list + "/" + c[1]); !strings.Contains(r.Body, "This form was sent already") || strings.Contains(r.Body, `id="password"`) {
		t.Errorf("the credential's page after the second send:\n%.3000s", r.Body)
	}
	if got := n.sqlInt(`SELECT count(*) FROM smpp_credentials WHERE account_id = $1`, a.ID); got != 1 {
		t.Errorf("%d credentials; want 1", got)
	}
}
