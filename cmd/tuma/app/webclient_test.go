package app_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// pages is a plain HTTP client of the dashboard with its own cookies, redirects not
// followed: for what a browser cannot show (statuses, headers, a forged form).
type pages struct {
	t    *testing.T
	n    *node
	http *http.Client
}

func (n *node) pages(t *testing.T) *pages {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &pages{t: t, n: n, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// page is one answer of the dashboard.
type page struct {
	Status int
	Header http.Header
	Body   string
}

func (p *pages) do(method, path string, form url.Values, headers ...string) page {
	p.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, p.n.base+path, body)
	if err != nil {
		p.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := p.http.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	return page{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

func (p *pages) get(path string) page { p.t.Helper(); return p.do("GET", path, nil) }

// post submits a form with the CSRF token of the page at from (as a browser would have it).
func (p *pages) post(from, path string, form url.Values) page {
	p.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("_csrf", p.token(from))
	return p.do("POST", path, form)
}

var csrfRE = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// token is the CSRF token the forms of the page at path carry.
func (p *pages) token(path string) string {
	p.t.Helper()
	pg := p.get(path)
	m := csrfRE.FindStringSubmatch(pg.Body)
	if m == nil {
		p.t.Fatalf("%s (%d) has no form token:\n%.500s", path, pg.Status, pg.Body)
	}
	return m[1]
}

// signIn signs in through the login page.
func (p *pages) signIn(a account) {
	p.t.Helper()
	r := p.post("/app/login", "/app/login", url.Values{"email": {a.Email}, "password": {a.Password}})
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/app/" {
		p.t.Fatalf("sign in = %d → %q:\n%.800s", r.Status, r.Header.Get("Location"), r.Body)
	}
}

// expect fails unless the answer has the status (and, for a 303, goes to location).
func (r page) expect(t *testing.T, status int, location string) page {
	t.Helper()
	if r.Status != status || (location != "" && r.Header.Get("Location") != location) {
		t.Fatalf("got %d → %q; want %d → %q:\n%.800s", r.Status, r.Header.Get("Location"), status, location, r.Body)
	}
	return r
}
