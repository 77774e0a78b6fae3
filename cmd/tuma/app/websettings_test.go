package app_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

const settingsPage = "/app/settings"

// settingsForm is the Settings form's fields as registered, with changes.
func settingsForm(kv ...string) url.Values {
	f := url.Values{"full_name": {"Jane Wanjiru"}, "company_name": {"Acme Ltd"}, "phone": {"+254712345678"},
		"business_type": {"retail"}, "country": {"KE"}, "opt_out_text": {"STOP*456*9*5#"},
		"quiet_hours.start": {"20:00"}, "quiet_hours.end": {"08:00"}}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Set(kv[i], kv[i+1])
	}
	return f
}

// The Settings page, last in the navigation, shows the profile, the opt-out text and the
// quiet hours (Nairobi time) and saves them through PATCH /auth/profile's operation: the next
// quote uses them; the company name's change is said with what recipients of the shared
// sender will see; a bad time is said beside its field with a 422 and changes nothing;
// quiet hours are turned off and on again; a form without its token changes nothing. Every
// state passes the accessibility check at 1280 and 375 pixels.
func TestDashboardSettingsInBrowser(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("settings@example.com")
	me := func() map[string]any {
		t.Helper()
		return n.do("GET", "/auth/me", nil, key(a)...).json(t)
	}
	b := n.tab(t)
	b.signInAs(a)
	if got := b.eval(`return [...document.querySelectorAll('.side nav a')].map(a => a.textContent.trim()).pop();`); got != "Settings" {
		t.Errorf("the navigation ends with %q; want Settings", got)
	}
	b.eval(`document.querySelector('.side nav a[href="/app/settings"]').click(); return '';`)
	b.waitPath(settingsPage)
	b.waitText("Your profile")
	values := func() string {
		return b.eval(`return ['full_name', 'company_name', 'phone', 'business_type', 'country', 'opt_out_text', 'quiet_hours-start', 'quiet_hours-end']
			.map(f => document.getElementById('f-' + f).value).join('|') + '|off=' + document.getElementById('f-quiet_off').checked;`)
	}
	if got := values(); got != "Jane Wanjiru|Acme Ltd|+254712345678|retail|KE|STOP*456*9*5#|20:00|08:00|off=false" {
		t.Errorf("the form shows %q", got)
	}
	text := b.flat()
	for _, want := range []string{"settings@example.com", "Nairobi time (Africa/Nairobi, EAT, UTC+3)",
		"Kenya’s Data Protection (General) Regulations, 2021", "“Acme Ltd: …”"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page does not say %q:\n%s", want, text)
		}
	}
	if got := b.eval(`return document.querySelector('.side a[aria-current=page]').textContent;`); got != "Settings" {
		t.Errorf("the navigation marks %q as the current page", got)
	}
	b.checkWidths("settings")

	// Saved: the next quote has the new opt-out text and company name at once.
	b.fill("Opt-out text", "Reply STOP to 22456")
	b.fill("Quiet hours start", "21:30")
	b.fill("Quiet hours end", "06:00")
	b.fill("Company name", "Duka Bora")
	b.submit("Save settings")
	b.waitText("Saved your settings. Promotional messages end with “Reply STOP to 22456” and wait out your quiet hours, " +
		"21:30 to 06:00 Nairobi time. Messages through the shared sender ID now begin “Duka Bora: ”.")
	if got := values(); got != "Jane Wanjiru|Duka Bora|+254712345678|retail|KE|Reply STOP to 22456|21:30|06:00|off=false" {
		t.Errorf("after saving the form shows %q", got)
	}
	m := me()
	if m["opt_out_text"] != "Reply STOP to 22456" || fmt.Sprint(m["quiet_hours"]) != "map[end:06:00 start:21:30]" || m["company_name"] != "Duka Bora" {
		t.Errorf("/auth/me after saving = %v", m)
	}
	q := n.quoteOf(a, map[string]any{"recipients": []string{"0712000001"}, "message": "Sale", "category": "promotional"})
	if q["message_as_sent"] != "Duka Bora: Sale Reply STOP to 22456" {
		t.Errorf("the next quote sends %q", q["message_as_sent"])
	}
	b.checkWidths("settings-saved")

	// A bad time is said beside its field, keeps what was typed, and changes nothing.
	b.fill("Quiet hours start", "")
	b.fill("Opt-out text", "Not saved")
	b.submit("Save settings")
	b.waitText("Please correct the fields marked below.")
	b.waitText("must be a time of day as HH:MM, 00:00 to 23:59 (Africa/Nairobi)")
	if got := b.eval(`const el = document.getElementById('f-quiet_hours-start');
		return el.getAttribute('aria-invalid') + ' ' + el.getAttribute('aria-describedby') + ' ' + document.getElementById('f-opt_out_text').value;`); got != "true f-quiet_hours-start-error Not saved" {
		t.Errorf("the start field after a bad time: %q", got)
	}
	b.checkWidths("settings-error")
	b.fill("Quiet hours start", "06:00")
	b.submit("Save settings")
	b.waitText("must differ from start; send null to turn quiet hours off")
	if got := b.eval(`return document.getElementById('f-quiet_hours-end').getAttribute('aria-invalid');`); got != "true" {
		t.Errorf("the end field equal to the start is not marked invalid: %q", got)
	}
	p := n.pages(t)
	p.signIn(a)
	if r := p.post(settingsPage, settingsPage, settingsForm("quiet_hours.start", "25:00")); r.Status != http.StatusUnprocessableEntity ||
		!strings.Contains(r.Body, "must be a time of day as HH:MM") || !strings.Contains(r.Body, `value="25:00"`) {
		t.Errorf("a start of 25:00 = %d:\n%.3000s", r.Status, r.Body)
	}
	if r := p.post(settingsPage, settingsPage, settingsForm("phone", "0812 345 678", "full_name", " ")); r.Status != http.StatusUnprocessableEntity ||
		!strings.Contains(r.Body, "must be a Kenyan mobile number") || !strings.Contains(r.Body, "is required") {
		t.Errorf("a bad phone and no name = %d:\n%.3000s", r.Status, r.Body)
	}
	if m := me(); m["opt_out_text"] != "Reply STOP to 22456" || fmt.Sprint(m["quiet_hours"]) != "map[end:06:00 start:21:30]" || m["full_name"] != "Jane Wanjiru" {
		t.Errorf("refused forms changed the profile: %v", m)
	}

	// No quiet hours, then the default ones again.
	b.open(settingsPage)
	b.choose("f-quiet_off")
	b.submit("Save settings")
	b.waitText("Saved your settings. Promotional messages end with “Reply STOP to 22456” and go at any hour: no quiet hours.")
	if strings.Contains(b.text(), "shared sender ID now begin") {
		t.Error("the company name's change is said again when it did not change")
	}
	if m := me(); m["quiet_hours"] != nil {
		t.Errorf("quiet_hours after turning them off = %v; want null", m["quiet_hours"])
	}
	if got := values(); !strings.HasSuffix(got, "|20:00|08:00|off=true") {
		t.Errorf("without quiet hours the form shows %q", got)
	}
	b.checkWidths("settings-no-quiet-hours")
	b.choose("f-quiet_off")
	b.submit("Save settings")
	b.waitText("wait out your quiet hours, 20:00 to 08:00 Nairobi time.")
	if m := me(); fmt.Sprint(m["quiet_hours"]) != "map[end:08:00 start:20:00]" {
		t.Errorf("quiet_hours turned on again = %v", m["quiet_hours"])
	}

	// Without the session's token nothing changes.
	for _, token := range []string{"", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"} {
		f := settingsForm("opt_out_text", "Forged")
		if token != "" {
			f.Set("_csrf", token)
		}
		if r := p.do("POST", settingsPage, f); r.Status != http.StatusForbidden || !strings.Contains(r.Body, "nothing was changed") {
			t.Errorf("a form with token %q = %d", token, r.Status)
		}
	}
	if m := me(); m["opt_out_text"] != "Reply STOP to 22456" {
		t.Errorf("a forged form set the opt-out text to %v", m["opt_out_text"])
	}
}

// The password is changed from Settings with PATCH /auth/change-password's operation: a wrong
// current password or a weak new one is said beside its field and changes nothing; a change
// signs every session out, this one too, and the new password signs in (the old does not).
// Every state passes the accessibility check at 1280 and 375 pixels.
func TestDashboardChangePasswordInBrowser(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("password@example.com")
	b := n.tab(t)
	b.signInAs(a)
	b.open(settingsPage)
	b.waitText("Changing it signs out every session")

	b.fill("Current password", "Wrong1234")
	b.fill("New password", "Better5678")
	b.submit("Change password")
	b.waitText("is not your current password")
	b.checkWidths("password-wrong")
	b.fill("Current password", a.Password)
	b.fill("New password", "short")
	b.submit("Change password")
	b.waitText("must be at least 8 characters long")
	if got := b.eval(`return document.getElementById('f-new_password').value + '|' + document.getElementById('f-current_password').value;`); got != "|" {
		t.Errorf("the password fields were drawn back with %q", got)
	}
	if r := n.do("POST", "/auth/login", map[string]any{"email": a.Email, "password": a.Password}); r.Status != http.StatusOK {
		t.Fatalf("refused changes changed the password: login = %d %s", r.Status, r.Body)
	}

	b.fill("Current password", a.Password)
	b.fill("New password", "Better5678")
	b.submit("Change password")
	b.waitPath("/app/login")
	b.waitText("Your password is changed, and every session has been signed out")
	b.checkWidths("password-changed")
	b.open(settingsPage)
	b.waitPath("/app/login") // this session ended with the change
	if r := n.do("POST", "/auth/login", map[string]any{"email": a.Email, "password": a.Password}); r.Status == http.StatusOK {
		t.Errorf("the old password still signs in")
	}
	a.Password = "Better5678"
	b.signInAs(a)
}
