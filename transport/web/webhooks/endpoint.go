// One endpoint's page and its actions: settings, deletion, test event, secret roll.

package webhooks

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	webhooksapi "github.com/tuma-sms/tuma/transport/api/webhooks"
	"github.com/tuma-sms/tuma/transport/web"
)

// detailForms are the page's forms as they are to be drawn: the edit and roll forms with
// their values and errors (nil: as the endpoint is), and a secret to show this once.
type detailForms struct {
	Edit    *web.Form
	Events  []string // the edit form's ticked events when Edit is given
	Roll    *web.Form
	Secret  string
	Created bool // the secret is a new endpoint's (else a rolled one's)
}

// detailData is what an endpoint's page shows.
type detailData struct {
	Hook    endpoint
	Edit    *web.Form
	Events  eventsField
	Roll    *web.Form
	Secret  string
	Created bool
	Overlap int // the roll's default overlap, in seconds
	Log     logData
}

func (p *Pages) hookOf(ctx context.Context, rc *fasthttp.RequestCtx) (persistence.Webhook, error) {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return persistence.Webhook{}, err
	}
	return p.Ops.Get(ctx, web.AccountID(rc), id)
}

// detail shows an endpoint as GET /webhooks/{id} reads it, with its delivery log.
func (p *Pages) detail(ctx context.Context, rc *fasthttp.RequestCtx) error {
	w, err := p.hookOf(ctx, rc)
	if err != nil {
		return err
	}
	return p.renderDetail(ctx, rc, http.StatusOK, w, detailForms{})
}

func (p *Pages) renderDetail(ctx context.Context, rc *fasthttp.RequestCtx, status int, w persistence.Webhook, df detailForms) error {
	d := detailData{Hook: newEndpoint(w), Edit: df.Edit, Roll: df.Roll, Secret: df.Secret, Created: df.Created,
		Overlap: int(webhooksapi.DefaultSecretOverlap / time.Second)}
	events := df.Events
	if d.Edit == nil {
		d.Edit = web.NewForm()
		d.Edit.Set("url", w.URL)
		d.Edit.Set("description", w.Description)
		d.Edit.Set("batch_size", strconv.Itoa(w.BatchSize))
		if w.Enabled {
			d.Edit.Set("enabled", "on")
		}
		events = w.Events
	}
	d.Events = newEventsField(d.Edit, events)
	if d.Roll == nil {
		d.Roll = web.NewForm()
	}
	log, lstatus, err := p.readLog(ctx, rc, w)
	if err != nil {
		return err
	}
	d.Log = log
	if status == http.StatusOK && lstatus != 0 {
		status = lstatus
	}
	return p.Views.Render(ctx, rc, status, "webhook", &web.Page{Title: "Webhook endpoint", Nav: navPath, Data: d})
}

// update changes the endpoint with PATCH /webhooks/{id}'s operation; refusals are said
// beside the fields and change nothing.
func (p *Pages) update(ctx context.Context, rc *fasthttp.RequestCtx) error {
	w, err := p.hookOf(ctx, rc)
	if err != nil {
		return err
	}
	f, in := readEndpoint(rc)
	enabled := f.Get("enabled") != ""
	in.Enabled = &enabled
	again := func(status int) error {
		return p.renderDetail(ctx, rc, status, w, detailForms{Edit: f, Events: *in.Events})
	}
	if f.HasErrors() {
		return again(http.StatusUnprocessableEntity)
	}
	_, err = p.Ops.Update(ctx, web.AccountID(rc), w.ID, in)
	if status, shown := f.Refused(err, nil); shown {
		return again(status)
	} else if err != nil {
		return err
	}
	p.Site.Flash(rc, "success", "Saved the endpoint’s settings.")
	return api.SeeOther(rc, hookPath(w.ID))
}

// delete removes the endpoint with DELETE /webhooks/{id}'s operation.
func (p *Pages) delete(ctx context.Context, rc *fasthttp.RequestCtx) error {
	w, err := p.hookOf(ctx, rc)
	if err != nil {
		return err
	}
	if err := p.Ops.Delete(ctx, web.AccountID(rc), w.ID); err != nil {
		return err
	}
	p.Site.Flash(rc, "success", "Deleted the endpoint "+w.URL+", with its waiting events and delivery log.")
	return api.SeeOther(rc, listPath)
}

// test queues a webhook.test event with POST /webhooks/{id}/test's operation.
func (p *Pages) test(ctx context.Context, rc *fasthttp.RequestCtx) error {
	w, err := p.hookOf(ctx, rc)
	if err != nil {
		return err
	}
	if _, err := p.Ops.Test(ctx, web.AccountID(rc), w.ID); err != nil {
		return err
	}
	msg := "A test event is on its way; its delivery is in the log below. Reload to see how it went."
	if !w.Enabled {
		msg = "A test event is queued, but the endpoint is disabled: it goes out once you enable it."
	}
	p.Site.Flash(rc, "success", msg)
	return api.SeeOther(rc, hookPath(w.ID))
}

// roll gives the endpoint a new secret with POST /webhooks/{id}/roll-secret's operation and
// shows it, this once.
func (p *Pages) roll(ctx context.Context, rc *fasthttp.RequestCtx) error {
	w, err := p.hookOf(ctx, rc)
	if err != nil {
		return err
	}
	f := web.ReadForm(rc)
	expires, ok := optInt(f, "expires_in_seconds", "must be a whole number of seconds")
	if !ok {
		return p.renderDetail(ctx, rc, http.StatusUnprocessableEntity, w, detailForms{Roll: f})
	}
	secret, err := p.Ops.RollSecret(ctx, web.AccountID(rc), w.ID, expires)
	if status, shown := f.Refused(err, nil); shown {
		return p.renderDetail(ctx, rc, status, w, detailForms{Roll: f})
	} else if err != nil {
		return err
	}
	return p.renderDetail(ctx, rc, http.StatusOK, w, detailForms{Secret: secret})
}
