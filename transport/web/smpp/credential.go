// One credential's page and its actions: settings, password rotation, deletion.

package smpp

import (
	"context"
	"net/http"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/web"
)

// detailData is what a credential's page shows.
type detailData struct {
	Cred     credential
	Edit     *web.Form
	Password string // just made: shown this once
	Created  bool   // the password is a new credential's (else a rotated one's)
	Server   string
	Max      int
}

func (p *Pages) credOf(ctx context.Context, rc *fasthttp.RequestCtx) (persistence.SMPPCredential, error) {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return persistence.SMPPCredential{}, err
	}
	return p.Ops.Get(ctx, web.AccountID(rc), id)
}

// detail shows a credential as GET /smpp/credentials/{id} reads it.
func (p *Pages) detail(ctx context.Context, rc *fasthttp.RequestCtx) error {
	c, err := p.credOf(ctx, rc)
	if err != nil {
		return err
	}
	return p.renderDetail(ctx, rc, http.StatusOK, c, nil, "", false)
}

// renderDetail draws the page: edit is the settings form with its values and errors (nil: as
// the credential is); password, when given, is shown this once.
func (p *Pages) renderDetail(ctx context.Context, rc *fasthttp.RequestCtx, status int, c persistence.SMPPCredential, edit *web.Form, password string, created bool) error {
	d := detailData{Cred: newCredential(c), Edit: edit, Password: password, Created: created, Server: p.server, Max: persistence.MaxSMPPBinds}
	if d.Edit == nil {
		d.Edit = web.NewForm()
		d.Edit.Set("allowed_ips", d.Cred.IPsText)
		d.Edit.Set("max_binds", strconv.Itoa(c.MaxBinds))
		if c.Enabled {
			d.Edit.Set("enabled", "on")
		}
	}
	if password != "" {
		rc.Response.Header.Set("Cache-Control", "no-store") // the password is in this answer alone
	}
	return p.Views.Render(ctx, rc, status, "credential", &web.Page{Title: "SMPP credential " + c.SystemID, Nav: navPath, Data: d})
}

// update changes the credential with PATCH /smpp/credentials/{id}'s operation; refusals are
// said beside the fields and change nothing.
func (p *Pages) update(ctx context.Context, rc *fasthttp.RequestCtx) error {
	c, err := p.credOf(ctx, rc)
	if err != nil {
		return err
	}
	f, in := readCredential(rc)
	enabled := f.Get("enabled") != ""
	in.Enabled = &enabled
	if f.HasErrors() {
		return p.renderDetail(ctx, rc, http.StatusUnprocessableEntity, c, f, "", false)
	}
	_, err = p.Ops.Update(ctx, web.AccountID(rc), c.ID, in)
	if status, shown := f.Refused(err, fieldsOfForm); shown {
		return p.renderDetail(ctx, rc, status, c, f, "", false)
	} else if err != nil {
		return err
	}
	p.Site.Flash(rc, "success", "Saved the credential’s settings. Binds already made keep theirs until they bind again.")
	return api.SeeOther(rc, credPath(c.ID))
}

// rotate gives the credential a new password with POST /smpp/credentials/{id}/rotate-password's
// operation and shows it, this once.
func (p *Pages) rotate(ctx context.Context, rc *fasthttp.RequestCtx) error {
	c, err := p.credOf(ctx, rc)
	if err != nil {
		return err
	}
	c, password, err := p.Ops.RotatePassword(ctx, web.AccountID(rc), c.ID)
	if err != nil {
		return err
	}
	return p.renderDetail(ctx, rc, http.StatusOK, c, nil, password, false)
}

// delete removes the credential with DELETE /smpp/credentials/{id}'s operation.
func (p *Pages) delete(ctx context.Context, rc *fasthttp.RequestCtx) error {
	c, err := p.credOf(ctx, rc)
	if err != nil {
		return err
	}
	if err := p.Ops.Delete(ctx, web.AccountID(rc), c.ID); err != nil {
		return err
	}
	p.Site.Flash(rc, "success", "Deleted the credential "+c.SystemID+": it binds no more.")
	return api.SeeOther(rc, listPath)
}
