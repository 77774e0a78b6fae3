package app_test

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The whole of a new tenant's first hour, in one browser and nothing else: sign up, open the
// confirmation link from the mail, top up through the sandbox checkout, send to three numbers
// watching the live counter, see them delivered, import contacts from a CSV file into a group,
// run a campaign to it until it completes, and rotate the API key. Each step checks what the
// person sees.
func TestDashboardTourInBrowser(t *testing.T) {
	sink := startSMTP(t, "127.0.0.1:0")
	n := startNode(t, withEnv(fastSims, "TUMA_SMTP_URL", "smtp://"+sink.addr(), "TUMA_MAIL_RETRY_MIN", "100ms"))
	b := n.tab(t)

	// Sign up, and the mail's link lands on the overview.
	b.open("/app/signup")
	b.fill("Your name", "Achieng Odhiambo")
	b.fill("Company name", "Duka Bora")
	b.fill("Email address", "tour@example.com")
	b.fill("Password", "Secret123")
	b.submit("Create account")
	b.waitText("We sent a confirmation link to tour@example.com")
	link := linkRE.FindString(sink.wait("tour@example.com", "Confirm your email").Text)
	b.open(link[strings.Index(link, "/auth/verify-email"):])
	b.waitText("Your email address is confirmed")

	// Top up KES 500 through the checkout; the return lands on the wallet with the balance.
	b.open("/app/wallet")
	b.fill("Amount in KES", "500")
	b.submit("Top up")
	b.waitPath("/checkout/")
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.ID("pay"))); err != nil {
		t.Fatal(err)
	}
	if landed := b.waitPath("/app/wallet?"); !strings.Contains(landed, "topup=success") {
		t.Fatalf("back from the checkout at %q", landed)
	}
	b.waitText("Payment received: your wallet has been topped up.")
	if text := b.text(); !regexp.MustCompile(`Balance\s+KES 50[0-9]\.[0-9]{2}`).MatchString(text) {
		t.Fatalf("the wallet does not show the top-up:\n%s", text)
	}

	// Send to three numbers: the counter shows them by network and the cost before sending.
	b.open("/app/send")
	b.fill("Phone numbers", "0712000001\n0733000002\n0770000003")
	b.fill("Message", "Karibu Duka Bora: your order is ready")
	b.waitText("3 valid: Safaricom 1, Airtel 1, Telkom 1")
	b.waitText("KES 1.50")
	b.submit("Review and send")
	b.waitText("Send this message?")
	b.submit("Send now")
	b.waitPath("/app/messages?job_id=")
	b.waitText("Sent to 3 numbers")
	list := b.path()
	deadline := time.Now().Add(30 * time.Second)
	for b.eval(`return String([...document.querySelectorAll('td[data-label=Status]')].filter(td => td.innerText.trim() === 'Delivered').length);`) != "3" {
		if time.Now().After(deadline) {
			t.Fatalf("the three messages never showed delivered:\n%s", b.text())
		}
		time.Sleep(100 * time.Millisecond)
		b.open(list)
	}

	// Import contacts into a new group.
	b.open("/app/contacts/groups")
	b.fill("Name", "Regulars")
	b.submit("Create group")
	b.waitText("Created the group “Regulars”.")
	b.open("/app/contacts/import")
	b.eval(`const sel = document.getElementById('f-group_id');
		sel.value = [...sel.options].find(o => o.text === 'Regulars').value; return '';`)
	csvFile := filepath.Join(t.TempDir(), "regulars.csv")
	if err := os.WriteFile(csvFile, []byte("phone,first_name,last_name\n0722000011,Amina,Otieno\n0733000012,Brian,Kamau\n0770000013,Chebet,Koech\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(b.ctx, chromedp.SetUploadFiles("#f-file", []string{csvFile})); err != nil {
		t.Fatal(err)
	}
	b.click("Import")
	b.waitText("Import finished")
	if text := strings.Join(strings.Fields(b.text()), " "); !strings.Contains(text, "Imported 3 Skipped 0 Refused 0") {
		t.Fatalf("the import's result:\n%s", text)
	}

	// A campaign to the group, with a merge tag, watched until it completes. It is promotional,
	// as the form offers: with no quiet hours it goes at whatever hour the tour runs.
	b.open("/app/settings")
	b.choose("f-quiet_off")
	b.submit("Save settings")
	b.waitText("go at any hour: no quiet hours.")
	b.open("/app/campaigns/new")
	b.fill("Campaign name", "Weekend offer")
	b.eval(`const sel = document.getElementById('f-group_id');
		sel.value = [...sel.options].find(o => o.text.startsWith('Regulars')).value;
		sel.dispatchEvent(new Event('change', {bubbles: true})); return '';`)
	b.fill("Message", "Hi {first_name}, 10% off this weekend")
	b.click("Preview")
	b.waitText("Hi Chebet, 10% off this weekend STOP*456*9*5#")
	b.submit("Create campaign")
	b.waitText("Created the campaign “Weekend offer” to 3 contacts")
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(b.text(), "3 delivered, 0 failed, 0 pending, of 3") {
		if time.Now().After(deadline) {
			t.Fatalf("the campaign never showed completed:\n%s", b.text())
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.waitText("Completed")

	b.open("/app/")
	b.waitText("Duka Bora")
	b.checkWidths("tour-overview")

	// Rotate the API key: shown once, it works on the API.
	b.open("/app/developers")
	b.submit("Rotate API key")
	b.waitText("Replace your API key?")
	b.submit("Yes, rotate the key")
	b.waitText("Copy your new key now")
	key := b.eval(`return document.getElementById('new-key').textContent;`)
	if !strings.HasPrefix(key, "sk_live_") {
		t.Fatalf("the page shows the key %q", key)
	}
	if s := n.me(key); s != http.StatusOK {
		t.Errorf("the key the page showed answers %d", s)
	}
	b.open("/app/developers")
	b.waitText(key[:12])
	if strings.Contains(b.text(), key) {
		t.Error("the Developers page shows the new key again")
	}
}
