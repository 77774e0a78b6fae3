// Package smpp is the dashboard's SMPP pages (/app/developers/smpp): the credentials an
// account's ESMEs bind to Tuma's SMPP server with, a form to make one, whose password is shown
// once, and each credential's page with its settings, password rotation and deletion. Every
// action runs the JSON API's operation (transport/api/smpp), so the rules, limits and errors
// are the API's.
package smpp

import (
	"context"
	"embed"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	smppapi "github.com/tuma-sms/tuma/transport/api/smpp"
	"github.com/tuma-sms/tuma/transport/web"
)

//go:embed templates/*.html
var templates embed.FS

// Operations are the credential operations the JSON API runs too (smpp.Handler).
type Operations interface {
	web.Owned[persistence.SMPPCredential, smppapi.Input]
	CreateOnce(ctx context.Context, accountID uuid.UUID, in smppapi.Input, key string) (persistence.SMPPCredential, string, bool, error)
	RotatePassword(ctx context.Context, accountID, id uuid.UUID) (persistence.SMPPCredential, string, error)
}

// Options configure the pages.
type Options struct {
	// Server is where ESMEs bind (TUMA_SMPP_SERVER_ADDR as clients reach it); "" when the
	// node serves no SMPP: the pages say so.
	Server string
}

// Pages serve the SMPP credentials.
type Pages struct {
	web.Kit[Operations, struct{}]
	server string
}

// New returns the pages.
func New(site *web.Site, ops Operations, opts Options) (*Pages, error) {
	kit, err := web.NewKit(site, templates, ops, struct{}{})
	if err != nil {
		return nil, err
	}
	return &Pages{Kit: kit, server: opts.Server}, nil
}

const (
	listPath = "/app/developers/smpp"
	navPath  = "/app/developers" // the nav entry the pages belong under
)

func credPath(id uuid.UUID) string { return listPath + "/" + id.String() }

// RegisterPages adds the routes.
func (p *Pages) RegisterPages(r *web.Router) {
	r.Page("GET", listPath, p.list)
	r.Page("POST", listPath, p.create)
	r.Page("GET", listPath+"/{id}", p.detail)
	r.Page("POST", listPath+"/{id}", p.update)
	r.Page("POST", listPath+"/{id}/rotate-password", p.rotate)
	r.Page("POST", listPath+"/{id}/delete", p.delete)
}

// credential is a credential as the pages show it.
type credential struct {
	persistence.SMPPCredential
	IPsText string // the allow-list, one per line ("" : any address)
}

func newCredential(c persistence.SMPPCredential) credential {
	return credential{SMPPCredential: c, IPsText: strings.Join(c.AllowedIPs.Strings(), "\n")}
}

// listData is what the list shows.
type listData struct {
	Creds  []credential
	Server string
	Max    int
	Key    string // the create form's key, new each time it is drawn (CreateOnce)
}

func (p *Pages) list(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := web.NewForm()
	f.Set("max_binds", "4")
	return p.renderList(ctx, rc, http.StatusOK, f)
}

func (p *Pages) renderList(ctx context.Context, rc *fasthttp.RequestCtx, status int, f *web.Form) error {
	list, err := p.Ops.List(ctx, web.AccountID(rc))
	if err != nil {
		return err
	}
	d := listData{Server: p.server, Max: persistence.MaxSMPPBinds, Key: uuid.NewString()}
	for _, c := range list {
		d.Creds = append(d.Creds, newCredential(c))
	}
	return p.Views.Render(ctx, rc, status, "smpp", &web.Page{Title: "SMPP", Nav: navPath, Data: d, Form: f})
}

// create makes a credential with POST /smpp/credentials's operation and shows its password,
// this once: the page is the answer to the form, never a page to come back to.
func (p *Pages) create(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f, in := readCredential(rc)
	if sid := strings.TrimSpace(f.Get("system_id")); sid != "" {
		in.SystemID = &sid
	}
	if f.HasErrors() {
		return p.renderList(ctx, rc, http.StatusUnprocessableEntity, f)
	}
	c, password, replayed, err := p.Ops.CreateOnce(ctx, web.AccountID(rc), in, f.Get("form_key"))
	if status, shown := f.Refused(err, fieldsOfForm); shown {
		return p.renderList(ctx, rc, status, f)
	} else if err != nil {
		return err
	}
	if replayed { // the form sent again (a reload of the page with the password): no second credential
		p.Site.Flash(rc, "info", "This form was sent already: here is the credential it made. Its password was shown "+
			"once, then; if it was not copied, make a new password below.")
		return api.SeeOther(rc, listPath+"/"+c.ID.String())
	}
	return p.renderDetail(ctx, rc, http.StatusCreated, c, nil, password, true)
}

// readCredential reads the allow-list (one address or range per line, or separated by commas
// or spaces) and the most binds, as the API's fields.
func readCredential(rc *fasthttp.RequestCtx) (*web.Form, smppapi.Input) {
	f := web.ReadForm(rc)
	ips := strings.FieldsFunc(f.Get("allowed_ips"), func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
	in := smppapi.Input{AllowedIPs: &ips}
	if raw := strings.TrimSpace(f.Get("max_binds")); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil {
			f.AddError("max_binds", "must be a whole number from 1 to "+strconv.Itoa(persistence.MaxSMPPBinds))
		} else {
			in.MaxBinds = &n
		}
	}
	return f, in
}

// fieldsOfForm says a refusal about one field beside it, and a bad address the API names
// allowed_ips[i] beside the form's one field for them all, with its line.
func fieldsOfForm(prob *api.Problem) {
	if prob.Code == "smpp_system_id_taken" {
		prob.Errors = append(prob.Errors, api.FieldError{Field: "system_id", Message: prob.Detail})
		return
	}
	for i := range prob.Errors {
		if strings.HasPrefix(prob.Errors[i].Field, "allowed_ips[") {
			prob.Errors[i].Message = "line " + lineOf(prob.Errors[i].Field) + ": " + prob.Errors[i].Message
			prob.Errors[i].Field = "allowed_ips"
		}
	}
}

// lineOf is the 1-based line of the address allowed_ips[i] names.
func lineOf(field string) string {
	i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(field, "allowed_ips["), "]"))
	if err != nil {
		return "?"
	}
	return strconv.Itoa(i + 1)
}
