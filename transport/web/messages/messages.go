// Package messages is the dashboard's Messages page (/app/messages): the account's messages,
// newest first, filtered and paged by cursor as GET /sms/messages lists them; each message's
// page with its timeline (accepted, sent, delivered or failed with the network's status, the
// refund of a failed one); and a live delivery check, as GET /sms/delivery/{id} makes it.
// Each read and action is the JSON API's operation (transport/api/sms).
package messages

import (
	"context"
	"embed"
	"errors"
	"net/http"
	"net/url"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/web"
)

//go:embed templates/*.html
var templates embed.FS

// Operations are the message reads and the live check the JSON API runs too (sms.Handler).
type Operations interface {
	Messages(ctx context.Context, rc *fasthttp.RequestCtx, accountID uuid.UUID) (api.Envelope[persistence.Message], error)
	Message(ctx context.Context, accountID, id uuid.UUID) (persistence.Message, error)
	CheckDelivery(ctx context.Context, accountID uuid.UUID, providerID string) (persistence.Message, error)
}

// Page serves the messages.
type Page struct {
	site  *web.Site
	views *web.Views
	ops   Operations
}

// New returns the page.
func New(site *web.Site, ops Operations) (*Page, error) {
	v, err := site.Views(templates)
	if err != nil {
		return nil, err
	}
	return &Page{site: site, views: v, ops: ops}, nil
}

// RegisterPages adds the routes.
func (p *Page) RegisterPages(r *web.Router) {
	r.Page("GET", "/app/messages", p.list)
	r.Page("GET", "/app/messages/{id}", p.detail)
	r.Page("POST", "/app/messages/{id}/check", p.check)
}

// filters are the list's filters, as the address and the API name them.
var filters = []string{"status", "network", "from", "to", "job_id", "campaign_id", "reference"}

type option struct{ Value, Label string }

var statuses = []option{
	{"", "Any status"},
	{string(persistence.MessageQueued), "Queued"},
	{string(persistence.MessageSent), "Sent"},
	{string(persistence.MessageDelivered), "Delivered"},
	{string(persistence.MessageFailed), "Failed"},
}

var networks = []option{{"", "Any network"}, {"safaricom", "Safaricom"}, {"airtel", "Airtel"}, {"telkom", "Telkom"}}

// listData is what the list shows.
type listData struct {
	Filter   *web.Form
	Statuses []option
	Networks []option
	Filtered bool // a filter is set
	Rows     []row
	Total    int64
	Older    string // the next page's address, "" on the last
	Newest   string // the first page's address, when a later page is shown
}

// row is a message as the list shows it.
type row struct {
	persistence.Message
	Status  string
	Network string
	Cost    string
}

func newRow(m persistence.Message) row {
	return row{Message: m, Status: statusName(m.Status), Network: networkName(m.Network.String()), Cost: web.KES(m.CostCents)}
}

func (p *Page) list(ctx context.Context, rc *fasthttp.RequestCtx) error {
	q := rc.QueryArgs()
	d := listData{Filter: web.NewForm(), Statuses: statuses, Networks: networks}
	keep := url.Values{}
	for _, f := range filters {
		if v := string(q.Peek(f)); v != "" {
			d.Filter.Set(f, v)
			keep.Set(f, v)
			d.Filtered = true
		}
	}
	status := http.StatusOK
	e, err := p.ops.Messages(ctx, rc, web.AccountID(rc))
	var prob *api.Problem
	switch {
	case errors.As(err, &prob) && prob.Status < http.StatusInternalServerError:
		d.Filter.Fail(prob)
		shown := false
		for _, f := range filters {
			shown = shown || len(d.Filter.ErrorsOf(f)) > 0
		}
		if !shown { // the cursor or page of an old or altered address
			d.Filter.Message = "This list's address is not valid any more."
		}
		status = prob.Status
	case err != nil:
		return err
	default:
		d.Total = e.Total
		for _, m := range e.Data {
			d.Rows = append(d.Rows, newRow(m))
		}
		if e.NextCursor != nil {
			next := url.Values{"cursor": {*e.NextCursor}}
			for k, v := range keep {
				next[k] = v
			}
			d.Older = "/app/messages?" + next.Encode()
		}
	}
	if len(q.Peek("cursor")) > 0 {
		d.Newest = "/app/messages"
		if len(keep) > 0 {
			d.Newest += "?" + keep.Encode()
		}
	}
	return p.views.Render(ctx, rc, status, "messages", &web.Page{Title: "Messages", Nav: "/app/messages", Data: d})
}

func statusName(s persistence.MessageStatus) string {
	for _, o := range statuses {
		if o.Value == string(s) && o.Value != "" {
			return o.Label
		}
	}
	return string(s)
}

func networkName(n string) string {
	switch n {
	case "safaricom":
		return "Safaricom"
	case "airtel":
		return "Airtel"
	case "telkom":
		return "Telkom"
	}
	return n
}
