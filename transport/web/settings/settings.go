// Package settings is the dashboard's Settings page (/app/settings): the account's profile
// (name, company, phone, type of business, country), the opt-out text its promotional
// messages carry and the quiet hours they wait out (CONTRACT §15), and the password. Saving
// runs PATCH /auth/profile's operation (transport/api/accounts), so the rules, the errors and
// the engine learning the new values before the next send are the API's; the password form
// runs PATCH /auth/change-password's.
package settings

import (
	"context"
	"embed"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/api/accounts"
	"github.com/tuma-sms/tuma/transport/web"
)

//go:embed templates/*.html
var templates embed.FS

// Operations are the profile's operation the JSON API runs too (accounts.Handler).
type Operations interface {
	UpdateProfile(ctx context.Context, accountID uuid.UUID, in accounts.Profile) (persistence.Account, error)
	ChangePassword(ctx context.Context, accountID uuid.UUID, current, next string) error
}

// Store is what the page reads: the account, as GET /auth/me reads it.
type Store interface {
	AccountByID(ctx context.Context, id uuid.UUID) (persistence.Account, error)
}

// Page serves the settings.
type Page struct {
	web.Kit[Operations, Store]
}

// New returns the page.
func New(site *web.Site, ops Operations, store Store) (*Page, error) {
	kit, err := web.NewKit(site, templates, ops, store)
	if err != nil {
		return nil, err
	}
	return &Page{Kit: kit}, nil
}

// RegisterPages adds the routes.
func (p *Page) RegisterPages(r *web.Router) {
	r.Page("GET", path, p.show)
	r.Page("POST", path, p.save)
	r.Page("POST", passwordPath, p.changePassword)
}

const (
	path         = "/app/settings"
	passwordPath = "/app/settings/password"
)

// The form's fields are the API's, so its errors land beside them ("quiet_hours.start").
const (
	fieldStart = "quiet_hours.start"
	fieldEnd   = "quiet_hours.end"
	fieldOff   = "quiet_off" // the "no quiet hours" box: quiet_hours null
)

// data is what the page shows besides the form.
type data struct {
	Email   string
	Company string // the company name saved: the shared sender's prefix
	QuietOn bool   // the box "no quiet hours" is not ticked
	// Password is the password form, with its errors: never its values.
	Password *web.Form
}

func (p *Page) show(ctx context.Context, rc *fasthttp.RequestCtx) error {
	a, err := p.Store.AccountByID(ctx, web.AccountID(rc))
	if err != nil {
		return err
	}
	return p.render(ctx, rc, a, formOf(a), nil)
}

// formOf is the form filled in with the account's values. Without quiet hours the times
// offered are the defaults, for when the box is unticked.
func formOf(a persistence.Account) *web.Form {
	f := web.NewForm()
	for name, v := range map[string]string{"full_name": a.FullName, "company_name": a.CompanyName, "phone": a.Phone,
		"business_type": a.BusinessType, "country": a.Country, "opt_out_text": a.OptOutText} {
		f.Set(name, v)
	}
	q := persistence.QuietHours{Start: persistence.DefaultQuietStart, End: persistence.DefaultQuietEnd}
	if a.Quiet != nil {
		q = *a.Quiet
	} else {
		f.Set(fieldOff, "on")
	}
	f.Set(fieldStart, persistence.FormatClock(q.Start))
	f.Set(fieldEnd, persistence.FormatClock(q.End))
	return f
}

// render draws the page with f, and err's problem in it when it has one (a 422 beside its
// fields).
func (p *Page) render(ctx context.Context, rc *fasthttp.RequestCtx, a persistence.Account, f *web.Form, err error) error {
	page := &web.Page{Title: "Settings", Nav: path, Form: f,
		Data: data{Email: a.Email, Company: a.CompanyName, QuietOn: f.Get(fieldOff) == "", Password: web.NewForm()}}
	if err != nil {
		return p.Views.RenderForm(ctx, rc, "settings", page, err)
	}
	return p.Views.Render(ctx, rc, http.StatusOK, "settings", page)
}

// renderWith draws the page with the password form pf's values and errors.
func (p *Page) renderWith(ctx context.Context, rc *fasthttp.RequestCtx, status int, a persistence.Account, f, pf *web.Form) error {
	page := &web.Page{Title: "Settings", Nav: path, Form: f,
		Data: data{Email: a.Email, Company: a.CompanyName, QuietOn: f.Get(fieldOff) == "", Password: pf}}
	return p.Views.Render(ctx, rc, status, "settings", page)
}

// save changes the profile with PATCH /auth/profile's operation, then shows it with what
// changed.
func (p *Page) save(ctx context.Context, rc *fasthttp.RequestCtx) error {
	acct := web.AccountID(rc)
	before, err := p.Store.AccountByID(ctx, acct)
	if err != nil {
		return err
	}
	f := web.ReadForm(rc)
	after, err := p.Ops.UpdateProfile(ctx, acct, profileOf(f))
	if err != nil {
		return p.render(ctx, rc, before, f, err)
	}
	p.Site.Flash(rc, "success", saved(before, after))
	return api.SeeOther(rc, path)
}

// changePassword changes the password with PATCH /auth/change-password's operation. Every
// session ends with it, this one too: the person signs in again with the new password. Its
// errors are shown beside its fields, the profile form filled in as saved.
func (p *Page) changePassword(ctx context.Context, rc *fasthttp.RequestCtx) error {
	acct := web.AccountID(rc)
	pf := web.ReadForm(rc)
	err := p.Ops.ChangePassword(ctx, acct, pf.Get("current_password"), pf.Get("new_password"))
	if err != nil {
		a, aerr := p.Store.AccountByID(ctx, acct)
		if aerr != nil {
			return aerr
		}
		prob := api.ProblemOf(err)
		switch {
		case prob.Code == "invalid_current_password":
			pf.AddError("current_password", "is not your current password")
		case prob.Status == http.StatusUnprocessableEntity:
			pf.Fail(prob)
		default:
			return err
		}
		pf.Set("current_password", "") // passwords are never drawn back into a page
		pf.Set("new_password", "")
		return p.renderWith(ctx, rc, http.StatusUnprocessableEntity, a, formOf(a), pf)
	}
	if err := p.Site.EndSession(ctx, rc); err != nil {
		return err
	}
	p.Site.Flash(rc, "success", "Your password is changed, and every session has been signed out: sign in with the new password. API keys keep working.")
	return api.SeeOther(rc, "/app/login")
}

// profileOf is the form as the operation's input: every field, as the form shows them all.
func profileOf(f *web.Form) accounts.Profile {
	val := func(name string) *string {
		v := f.Get(name)
		return &v
	}
	return accounts.Profile{FullName: val("full_name"), CompanyName: val("company_name"), Phone: val("phone"),
		BusinessType: val("business_type"), Country: val("country"), OptOutText: val("opt_out_text"),
		QuietHours: &accounts.Quiet{Off: f.Get(fieldOff) != "", Start: val(fieldStart), End: val(fieldEnd)}}
}

// saved is the flash after a save: what promotional messages do now, and what recipients of
// the shared sender see when the company name changed.
func saved(before, after persistence.Account) string {
	msg := "Saved your settings. Promotional messages end with “" + after.OptOutText + "”"
	if after.Quiet == nil {
		msg += " and go at any hour: no quiet hours."
	} else {
		msg += " and wait out your quiet hours, " + web.QuietWindow(after.Quiet) + " Nairobi time."
	}
	if before.CompanyName != after.CompanyName {
		msg += " Messages through the shared sender ID now begin “" + after.CompanyName + ": ”."
	}
	return msg
}
