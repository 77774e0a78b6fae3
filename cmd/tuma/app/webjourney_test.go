package app_test

import (
	"regexp"
	"strings"
	"testing"
)

// A person signs up in the browser, confirms a code (a wrong one first) and then the link
// from the mail, lands on the overview with the banner, reads and marks notifications, and
// signs out. Every page passes the accessibility check.
func TestDashboardSignUpInBrowser(t *testing.T) {
	n, sink := mailNode(t)
	b := n.tab(t)
	b.open("/app/")
	if p := b.path(); p != "/app/login" {
		t.Fatalf("signed out, /app/ is at %q; want the sign-in page", p)
	}
	b.check("login")
	b.submit("Create an account")
	b.check("signup")
	b.fill("Your name", "Jane Wanjiru")
	b.fill("Company name", `Acme <b>"Ltd"</b>`)
	b.fill("Email address", "journey@example.com")
	b.fill("Password", "short")
	b.submit("Create account")
	b.waitText("must be at least 8 characters long")
	b.check("signup-errors")
	b.fill("Password", "Secret123")
	b.submit("Create account")
	b.waitText("We sent a confirmation link to journey@example.com")
	b.check("verify")

	link := linkRE.FindString(sink.wait("journey@example.com", "Confirm your email").Text)
	b.submit("Email me a code")
	b.waitText("We have emailed you a 6-digit code")
	code := codeRE.FindString(sink.wait("journey@example.com", "verification code").Text)
	wrong := "000000"
	if code == wrong {
		wrong = "111111"
	}
	b.fill("6-digit code", wrong)
	b.submit("Confirm")
	b.waitText("That code is not right. Attempts left: 4.")
	b.check("verify-wrong-code")

	b.open("/app/email")
	b.check("email")

	// The mail's link goes through the API and lands on the overview with its banner.
	b.open(link[strings.Index(link, "/auth/verify-email"):])
	if p := b.path(); p != "/app/?verified=1" {
		t.Fatalf("the verification link landed on %q; want /app/?verified=1", p)
	}
	b.waitText("Your email address is confirmed")
	text := b.text()
	for _, want := range []string{`Acme <b>"Ltd"</b>`, "KES 2.50", "Starter", "Welcome", "No messages yet"} {
		if !strings.Contains(text, want) {
			t.Errorf("the overview does not show %q:\n%s", want, text)
		}
	}
	b.check("overview")
	if got := b.eval(`return typeof htmx === 'object' && htmx.version;`); got != "2.0.11" {
		t.Errorf("htmx on the page: %q; want 2.0.11 loaded under the CSP", got)
	}

	b.submit("All notifications")
	b.waitText("1 unread.")
	b.check("notifications")
	b.submit("Mark as read")
	if text := b.text(); strings.Contains(text, "unread") || !strings.Contains(text, "Welcome to Tuma") {
		t.Errorf("after marking it read the inbox shows:\n%s", text)
	}

	b.submit("Sign out")
	b.waitText("You have signed out.")
	b.open("/app/notifications")
	if p := b.path(); p != "/app/login?next=%2Fapp%2Fnotifications" {
		t.Errorf("signed out, the inbox is at %q; want the sign-in page", p)
	}
}

// Signing in sends a person back to the page they asked for; a forgotten password is reset
// through the mail's link to the dashboard's reset page.
func TestDashboardSignInAndResetInBrowser(t *testing.T) {
	n, sink := mailNode(t)
	a := n.register("forgetful@example.com")
	b := n.tab(t)
	b.open("/app/notifications")
	b.fill("Email address", a.Email)
	b.fill("Password", "Wrong1234")
	b.submit("Sign in")
	b.waitText("The email or password is wrong.")
	b.check("login-wrong")
	b.fill("Password", a.Password)
	b.submit("Sign in")
	if p := b.path(); p != "/app/notifications" {
		t.Fatalf("after signing in the tab is at %q; want the page it asked for", p)
	}
	b.submit("Sign out")

	b.submit("Forgotten your password?")
	b.fill("Email address", a.Email)
	b.check("forgot")
	b.submit("Email me a link")
	b.waitText("If an account exists for that address, we have sent it an email.")
	link := regexp.MustCompile(`https?://\S+/app/reset\?token=\S+`).FindString(sink.wait(a.Email, "Reset your").Text)
	if !strings.HasPrefix(link, n.base+"/app/reset?token=pr_") {
		t.Fatalf("the reset mail links to %q; want the dashboard's reset page", link)
	}
	b.open(strings.TrimPrefix(link, n.base))
	b.check("reset")
	b.fill("New password", "weak")
	b.submit("Change password")
	b.waitText("must contain at least one digit")
	b.fill("New password", "Brand3New")
	b.submit("Change password")
	b.waitText("Your password has been changed")
	b.fill("Email address", a.Email)
	b.fill("Password", "Brand3New")
	b.submit("Sign in")
	b.waitText("Overview")

	// The link works once.
	b.submit("Sign out")
	b.open(strings.TrimPrefix(link, n.base))
	b.fill("New password", "Other4New")
	b.submit("Change password")
	b.waitText("This reset link is not valid any more")
	b.check("reset-used")
}
