package contacts

import (
	"context"
	"net/http"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	book "github.com/tuma-sms/tuma/transport/api/contacts"
	"github.com/tuma-sms/tuma/transport/web"
)

const groupsPath = "/app/contacts/groups"

// groupsData is what the groups page shows.
type groupsData struct {
	Groups []persistence.Group
}

// groups lists the account's groups with their active contacts' counts.
func (p *Pages) groups(ctx context.Context, rc *fasthttp.RequestCtx) error {
	return p.renderGroups(ctx, rc, http.StatusOK, web.NewForm())
}

func (p *Pages) renderGroups(ctx context.Context, rc *fasthttp.RequestCtx, status int, f *web.Form) error {
	gs, err := p.Store.Groups(ctx, web.AccountID(rc))
	if err != nil {
		return err
	}
	return p.Views.Render(ctx, rc, status, "groups", &web.Page{Title: "Contact groups", Nav: listPath, Data: groupsData{Groups: gs}, Form: f})
}

// createGroup creates a group with POST /contacts/groups' operation.
func (p *Pages) createGroup(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := web.ReadForm(rc)
	g, err := p.Ops.CreateGroup(ctx, web.AccountID(rc), book.GroupInput{Name: field(f, "name"), Description: field(f, "description")})
	if err != nil {
		status, err := shown(f, err)
		if err != nil {
			return err
		}
		return p.renderGroups(ctx, rc, status, f)
	}
	p.Site.Flash(rc, "success", "Created the group “"+g.Name+"”.")
	return api.SeeOther(rc, groupsPath)
}

// deleteGroup deletes a group with DELETE /contacts/groups/{id}'s operation (its contacts
// stay); another account's is a 404 page.
func (p *Pages) deleteGroup(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	if err := p.Ops.DeleteGroup(ctx, web.AccountID(rc), id); err != nil {
		return err
	}
	p.Site.Flash(rc, "success", "Deleted the group. Its contacts are still in your contacts, in no group.")
	return api.SeeOther(rc, groupsPath)
}
