package app_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds a Chromium to drive: $TUMA_TEST_CHROMIUM, else Debian's. Without one the
// test is skipped, or fails when CI is set (.ci/run installs Debian's chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("TUMA_TEST_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium found (CI is set, so this fails): apt-get install chromium, or set TUMA_TEST_CHROMIUM")
	}
	t.Skip("no Chromium found: apt-get install chromium (set CI=1 to make this a failure)")
	return ""
}

// browser starts a headless Chromium for the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // tests may run as root
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// TestCheckoutInBrowser pays a sandbox top-up the way a person does: the checkout page in a
// real browser, the amount on it, a click on Pay, and back to the dashboard's wallet credited.
func TestCheckoutInBrowser(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("browser@example.com")
	// Signed in to the dashboard, where the payer comes back.
	b := n.tab(t)
	b.open("/app/login")
	b.fill("Email address", a.Email)
	b.fill("Password", a.Password)
	b.submit("Sign in")
	ctx := b.ctx
	ref, authURL := n.startTopup(a, 1500)

	if err := chromedp.Do(ctx, chromedp.Navigate(authURL), chromedp.WaitVisible(chromedp.ID("pay"))); err != nil {
		t.Fatalf("load the checkout page: %v", err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	amount, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("amount")))
	if err != nil {
		t.Fatal(err)
	}
	reference, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("reference")))
	if err != nil {
		t.Fatal(err)
	}
	if amount != "KES 1,500.00" || reference != ref || title != "Pay Tuma" {
		t.Fatalf("the page shows %q, %q (title %q); want KES 1,500.00 and %s", amount, reference, title, ref)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("pay"))); err != nil {
		t.Fatalf("click Pay: %v", err)
	}
	// Pay → /wallet/callback → the dashboard, by redirects.
	var loc string
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(loc, "topup=") {
		if time.Now().After(deadline) {
			t.Fatalf("the browser did not come back to the dashboard; it is at %q", loc)
		}
		time.Sleep(50 * time.Millisecond)
		if loc, err = chromedp.Run(ctx, chromedp.Location()); err != nil {
			t.Fatal(err)
		}
	}
	// The return address (TUMA_DASHBOARD_URL, the overview) shows the payer the wallet.
	if !strings.HasPrefix(loc, n.base+"/app/wallet?") || !strings.Contains(loc, "topup=success") || !strings.Contains(loc, "reference="+ref) {
		t.Fatalf("landed on %q; want the dashboard's wallet with topup=success and the reference", loc)
	}
	n.assertCredited(a, ref, 1500)
	b.waitText("Payment received: your wallet has been topped up.")
	b.waitText("KES 1,500.00")
	b.check("wallet-topup")
}
