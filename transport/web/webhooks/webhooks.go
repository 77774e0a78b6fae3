// Package webhooks is the dashboard's webhook pages (/app/developers/webhooks): the account's
// endpoints and a form to add one, whose signing secret is shown once; each endpoint's page
// with its settings, deletion, test event, secret roll and delivery log with redelivery, and
// each delivery's page with its events and attempts.
// Every action runs the JSON API's operation (transport/api/webhooks), so the rules, limits
// and errors are the API's.
package webhooks

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
	webhooksapi "github.com/tuma-sms/tuma/transport/api/webhooks"
	"github.com/tuma-sms/tuma/transport/web"
)

//go:embed templates/*.html
var templates embed.FS

// Operations are the webhook operations the JSON API runs too (webhooks.Handler).
type Operations interface {
	web.Owned[persistence.Webhook, webhooksapi.Endpoint]
	CreateOnce(ctx context.Context, accountID uuid.UUID, in webhooksapi.Endpoint, key string) (persistence.Webhook, string, bool, error)
	Deliveries(ctx context.Context, accountID, endpointID uuid.UUID, status persistence.DeliveryStatus, p persistence.Page) ([]persistence.DeliveryRecord, error)
	DeliveryList(accountID, endpointID uuid.UUID, status persistence.DeliveryStatus) api.List
	Delivery(ctx context.Context, accountID, endpointID, deliveryID uuid.UUID) (persistence.DeliveryRecord, []persistence.AttemptRecord, error)
	Retry(ctx context.Context, accountID, endpointID, deliveryID uuid.UUID) error
	Test(ctx context.Context, accountID, endpointID uuid.UUID) (uuid.UUID, error)
	RollSecret(ctx context.Context, accountID, endpointID uuid.UUID, expiresIn *int) (string, error)
}

// Pages serve the webhook endpoints.
type Pages struct {
	web.Kit[Operations, struct{}]
}

// New returns the pages.
func New(site *web.Site, ops Operations) (*Pages, error) {
	kit, err := web.NewKit(site, templates, ops, struct{}{})
	if err != nil {
		return nil, err
	}
	return &Pages{Kit: kit}, nil
}

const (
	listPath = "/app/developers/webhooks"
	// navPath is the nav entry the pages belong under: Developers.
	navPath = "/app/developers"
)

func hookPath(id uuid.UUID) string { return listPath + "/" + id.String() }

// RegisterPages adds the routes.
func (p *Pages) RegisterPages(r *web.Router) {
	r.Page("GET", listPath, p.list)
	r.Page("POST", listPath, p.create)
	r.Page("GET", listPath+"/{id}", p.detail)
	r.Page("POST", listPath+"/{id}", p.update)
	r.Page("POST", listPath+"/{id}/delete", p.delete)
	r.Page("POST", listPath+"/{id}/test", p.test)
	r.Page("POST", listPath+"/{id}/roll-secret", p.roll)
	r.Page("GET", listPath+"/{id}/deliveries/{delivery_id}", p.delivery)
	r.Page("POST", listPath+"/{id}/deliveries/{delivery_id}/retry", p.retry)
}

// endpoint is an endpoint as the pages show it.
type endpoint struct {
	persistence.Webhook
	EventsText string
}

func newEndpoint(w persistence.Webhook) endpoint {
	text := strings.Join(w.Events, ", ")
	if len(w.Events) == 1 && w.Events[0] == "*" {
		text = "All events"
	}
	return endpoint{Webhook: w, EventsText: text}
}

// choice is one checkbox of the events field.
type choice struct {
	Value, Label, ID string
	Checked          bool
}

// eventsField is the events fieldset: its checkboxes and its errors.
type eventsField struct {
	Choices []choice
	Errors  []string
}

func newEventsField(f *web.Form, picked []string) eventsField {
	return eventsField{Choices: eventChoices(picked), Errors: f.ErrorsOf("events")}
}

// eventChoices are the events field's checkboxes, those in picked ticked.
func eventChoices(picked []string) []choice {
	on := map[string]bool{}
	for _, e := range picked {
		on[e] = true
	}
	out := []choice{{Value: "*", Label: "All events, present and future", ID: "f-events-all", Checked: on["*"]}}
	for _, t := range persistence.EventTypes() {
		out = append(out, choice{Value: string(t), Label: string(t), ID: "f-events-" + strings.ReplaceAll(string(t), ".", "-"), Checked: on[string(t)]})
	}
	return out
}

// listData is what the list shows.
type listData struct {
	Hooks  []endpoint
	Max    int
	Full   bool // the account has its most endpoints: the form says so
	Events eventsField
	Key    string // the create form's key, new each time it is drawn (CreateOnce)
}

func (p *Pages) list(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := web.NewForm()
	f.Set("batch_size", "1")
	return p.renderList(ctx, rc, http.StatusOK, f, []string{"*"})
}

// renderList draws the endpoints with the create form (its values and errors in f, its
// events ticked).
func (p *Pages) renderList(ctx context.Context, rc *fasthttp.RequestCtx, status int, f *web.Form, events []string) error {
	list, err := p.Ops.List(ctx, web.AccountID(rc))
	if err != nil {
		return err
	}
	d := listData{Max: persistence.MaxWebhooks, Full: len(list) >= persistence.MaxWebhooks, Events: newEventsField(f, events),
		Key: uuid.NewString()}
	for _, w := range list {
		d.Hooks = append(d.Hooks, newEndpoint(w))
	}
	return p.Views.Render(ctx, rc, status, "webhooks", &web.Page{Title: "Webhooks", Nav: navPath, Data: d, Form: f})
}

// create adds an endpoint with POST /webhooks's operation and shows its secret, this once:
// the page is the answer to the form, never a page to come back to.
func (p *Pages) create(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f, in := readEndpoint(rc)
	if f.HasErrors() {
		return p.renderList(ctx, rc, http.StatusUnprocessableEntity, f, *in.Events)
	}
	w, secret, replayed, err := p.Ops.CreateOnce(ctx, web.AccountID(rc), in, f.Get("form_key"))
	if status, shown := f.Refused(err, nil); shown {
		return p.renderList(ctx, rc, status, f, *in.Events)
	} else if err != nil {
		return err
	}
	if replayed { // the form sent again (a reload of the page with the secret): no second endpoint
		p.Site.Flash(rc, "info", "This form was sent already: here is the endpoint it added. Its signing secret was shown "+
			"once, then; if it was not copied, roll a new one below.")
		return api.SeeOther(rc, listPath+"/"+w.ID.String())
	}
	return p.renderDetail(ctx, rc, http.StatusCreated, w, detailForms{Secret: secret, Created: true})
}

// readEndpoint reads the create or edit form as the API's fields: every field is given (an
// empty description clears it, no event ticked is no events). A batch size that is not a
// number is said beside it here, as the API says of JSON that is not.
func readEndpoint(rc *fasthttp.RequestCtx) (*web.Form, webhooksapi.Endpoint) {
	f := web.ReadForm(rc)
	var events []string
	for _, v := range rc.PostArgs().PeekMulti("events") {
		events = append(events, string(v))
	}
	f.Set("events", strings.Join(events, ","))
	url, desc := strings.TrimSpace(f.Get("url")), f.Get("description")
	in := webhooksapi.Endpoint{URL: &url, Events: &events, Description: &desc}
	if n, ok := optInt(f, "batch_size", "must be a whole number from 1 to 100"); ok {
		in.BatchSize = n
	}
	return f, in
}

// optInt reads an optional whole-number field (nil when empty); text that is not one is an
// error beside it.
func optInt(f *web.Form, name, msg string) (*int, bool) {
	raw := strings.TrimSpace(f.Get(name))
	if raw == "" {
		return nil, true
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		f.AddError(name, msg)
		return nil, false
	}
	return &n, true
}
