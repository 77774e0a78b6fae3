package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The dashboard's browser harness: a tab of a real Chromium on a node, driven as a person
// would, by labels and the text of buttons and links. Every page group's tests use it:
//
//	b := n.tab(t)
//	b.open("/app/login")
//	b.fill("Email address", a.Email)
//	b.submit("Sign in")          // click, and wait for the next page
//	b.waitText("Overview")
//	b.check("overview")          // axe-core (no serious or critical violation) + screenshots
//
// With TUMA_SCREENSHOTS=<dir> (make screenshots), check writes <dir>/<name>-1280.png and
// <name>-375.png.

// tab is one browser tab on a node's dashboard.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string
}

// tabWait bounds every wait of the harness.
const tabWait = 15 * time.Second

// tab starts a Chromium for the test, with a tab on the node.
func (n *node) tab(t *testing.T) *tab {
	t.Helper()
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("browser viewport: %v", err)
	}
	return &tab{t: t, ctx: ctx, base: n.base}
}

// open loads a path of the node and waits for the page.
func (b *tab) open(path string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Navigate(b.base+path)); err != nil {
		b.t.Fatalf("open %s: %v", path, err)
	}
	b.waitLoaded()
}

// eval runs a JavaScript function body with args (JSON-encoded) and returns its string result.
func (b *tab) eval(fn string, args ...any) string {
	b.t.Helper()
	enc, err := json.Marshal(args)
	if err != nil {
		b.t.Fatal(err)
	}
	out, err := chromedp.Run(b.ctx, chromedp.Evaluate[string]("(function(){"+fn+"}).apply(null, "+string(enc)+")"))
	if err != nil {
		b.t.Fatalf("in the page: %v", err)
	}
	return out
}

// fill types value into the field whose label reads label (" (optional)" aside).
func (b *tab) fill(label, value string) {
	b.t.Helper()
	if msg := b.eval(`const [label, value] = arguments;
		const norm = s => s.replace(/\s+/g, ' ').replace(' (optional)', '').trim();
		const ls = [...document.querySelectorAll('label')].filter(l => norm(l.textContent) === label && l.control);
		if (ls.length !== 1) return ls.length + ' fields labelled "' + label + '"';
		const el = ls[0].control;
		el.focus(); el.value = value;
		el.dispatchEvent(new Event('input', {bubbles: true})); el.dispatchEvent(new Event('change', {bubbles: true}));
		return '';`, label, value); msg != "" {
		b.t.Fatalf("fill %q on %s: %s", label, b.path(), msg)
	}
}

// click clicks the one visible button, link or summary whose text is text.
func (b *tab) click(text string) {
	b.t.Helper()
	if msg := b.eval(`const [text] = arguments;
		const norm = s => s.replace(/\s+/g, ' ').trim();
		const els = [...document.querySelectorAll('button, a, summary, input[type=submit]')]
			.filter(e => (norm(e.innerText || e.value || '') === text) && e.getClientRects().length > 0);
		if (els.length !== 1) return els.length + ' visible buttons or links read "' + text + '"';
		els[0].click();
		return '';`, text); msg != "" {
		b.t.Fatalf("click %q on %s: %s", text, b.path(), msg)
	}
}

// submit clicks like click, and waits until the next page has loaded.
func (b *tab) submit(text string) {
	b.t.Helper()
	b.eval(`window.__tumaPage = true; return '';`)
	b.click(text)
	b.waitFunc("the next page after "+text, `return window.__tumaPage === undefined && document.readyState === 'complete' ? 'yes' : '';`)
}

func (b *tab) waitLoaded() {
	b.t.Helper()
	b.waitFunc("the page to load", `return document.readyState === 'complete' ? 'yes' : '';`)
}

// waitFunc polls fn until it returns a non-empty string, up to tabWait.
func (b *tab) waitFunc(what, fn string) string {
	b.t.Helper()
	deadline := time.Now().Add(tabWait)
	for {
		out, err := chromedp.Run(b.ctx, chromedp.Evaluate[string]("(function(){"+fn+"})()"))
		if err == nil && out != "" {
			return out
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("waited %v for %s on %s (last error %v)", tabWait, what, b.path(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// text is the page's visible text.
func (b *tab) text() string {
	b.t.Helper()
	return b.eval(`return document.body.innerText;`)
}

// waitText waits until the page shows s, up to tabWait.
func (b *tab) waitText(s string) {
	b.t.Helper()
	deadline := time.Now().Add(tabWait)
	for !strings.Contains(b.text(), s) {
		if time.Now().After(deadline) {
			b.t.Fatalf("%s does not show %q; it shows:\n%s", b.path(), s, b.text())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// path is the tab's address without the node's base.
func (b *tab) path() string {
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		return "(unknown: " + err.Error() + ")"
	}
	return strings.TrimPrefix(loc, b.base)
}

// check runs the accessibility check on the page and, under make screenshots, takes its
// screenshots.
func (b *tab) check(name string) {
	b.t.Helper()
	b.axe()
	b.shot(name)
}

// axeSource is axe-core 4.14.1 (testdata; the node never serves it).
var axeSource = sync.OnceValues(func() ([]byte, error) { return os.ReadFile("testdata/axe.min.js") })

// axe runs axe-core's WCAG 2 A and AA rules on the page and fails on any serious or critical
// violation.
func (b *tab) axe() {
	b.t.Helper()
	src, err := axeSource()
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](string(src)+";true")); err != nil {
		b.t.Fatalf("inject axe-core: %v", err)
	}
	out, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}})
		.then(r => r.passes.length === 0 ? 'axe-core checked nothing' : JSON.stringify(r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
			.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(' ') + ': ' + n.failureSummary)}))))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("run axe-core on %s: %v", b.path(), err)
	}
	if out != "[]" {
		b.t.Errorf("accessibility violations on %s: %s", b.path(), out)
	}
}

var shotName = regexp.MustCompile(`[^a-z0-9-]+`)

// shot writes the page at 1280 and 375 pixels wide when TUMA_SCREENSHOTS names a folder.
func (b *tab) shot(name string) {
	b.t.Helper()
	dir := os.Getenv("TUMA_SCREENSHOTS")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	for _, w := range []int64{1280, 375} {
		if err := chromedp.Do(b.ctx, chromedp.EmulateViewport(w, 800)); err != nil {
			b.t.Fatal(err)
		}
		png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			b.t.Fatalf("screenshot %s at %d: %v", name, w, err)
		}
		file := filepath.Join(dir, fmt.Sprintf("%s-%d.png", shotName.ReplaceAllString(name, "-"), w))
		if err := os.WriteFile(file, png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	if err := chromedp.Do(b.ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		b.t.Fatal(err)
	}
}
