// Package inbound is the dashboard's page of an account's inbound messages (CONTRACT §15) at
// /app/messages/inbound, beside the sent messages: what subscribers sent to the account's
// short codes and long numbers, newest first, filtered by sender and paged by cursor as
// GET /sms/inbound lists them. It reads through the JSON API's operation
// (transport/api/inbound), so only the account's own messages are ever listed: unrouted
// ones belong to no account.
package inbound

import (
	"context"
	"embed"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	apiinbound "github.com/tuma-sms/tuma/transport/api/inbound"
	"github.com/tuma-sms/tuma/transport/web"
)

//go:embed templates/*.html
var templates embed.FS

// Operations are the inbox's reads, as the JSON API runs them (inbound.Handler).
type Operations interface {
	Inbox(ctx context.Context, rc *fasthttp.RequestCtx) (apiinbound.Listing, error)
}

// Pages serve the inbox. The page reads nothing beyond its operations, so the kit holds no
// store.
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

// RegisterPages adds the route: read-only, so no form posts to it.
func (p *Pages) RegisterPages(r *web.Router) {
	r.Page("GET", listPath, p.list)
}

// listPath is the page's address; its nav entry is the messages area's.
const (
	listPath = "/app/messages/inbound"
	navPath  = "/app/messages"
)

// listData is what the page shows.
type listData struct {
	Filter   *web.Form // the sender, as asked, with its error
	Filtered bool      // a sender narrows the list
	Listed   bool      // the list was read (the filter and the link were valid)
	BadLink  bool      // the page's paging parameters were not valid (an altered cursor)
	Rows     []row
	Next     string // the older messages' page ("" at the end)
	First    string // the newest messages' page, when this is a later one
}

// row is an inbound message as the list shows it.
type row struct {
	Received time.Time
	From     string // E.164
	To       string // the short code's digits or the long number
	Network  string
	Text     string
	Keyword  string // upper-cased, "" for none
	OptOut   bool   // the keyword put the sender on the suppression list
	OptIn    bool   // the keyword took a keyword suppression off it
}

func newRow(m persistence.InboundMessage) row {
	r := row{Received: m.ReceivedAt, From: m.FromE164(), To: m.To, Network: networkName(m.Network), Text: m.Text, Keyword: m.Keyword}
	if m.Keyword != "" {
		_, action := persistence.Keyword(m.Keyword)
		r.OptOut, r.OptIn = action == persistence.KeywordOptOut, action == persistence.KeywordOptIn
	}
	return r
}

// list shows a page of the account's inbox as GET /sms/inbound reads it: a sender that is no
// phone number is said beside the filter, an altered link above the list, neither an error
// page.
func (p *Pages) list(ctx context.Context, rc *fasthttp.RequestCtx) error {
	q := rc.QueryArgs()
	d := listData{Filter: web.NewForm()}
	d.Filter.Set("from", string(q.Peek("from")))
	d.Filter.Set("page_size", string(q.Peek("page_size")))
	d.Filtered = strings.TrimSpace(d.Filter.Get("from")) != ""
	status := http.StatusOK
	l, err := p.Ops.Inbox(ctx, rc)
	var prob *api.Problem
	switch {
	case errors.As(err, &prob) && prob.Status < http.StatusInternalServerError:
		d.Filter.Fail(prob)
		d.BadLink = len(d.Filter.ErrorsOf("from")) < len(prob.Errors)
		status = prob.Status
	case err != nil:
		return err
	default:
		d.Listed = true
		for _, m := range l.Messages {
			d.Rows = append(d.Rows, newRow(m))
		}
		if l.NextCursor != nil {
			d.Next = pageURL(d.Filter, "cursor", *l.NextCursor)
		}
		if len(q.Peek("cursor")) > 0 {
			d.First = pageURL(d.Filter, "", "")
		}
	}
	return p.Views.Render(ctx, rc, status, "inbound", &web.Page{Title: "Inbound messages", Nav: navPath, Data: d})
}

// pageURL is the page with the sender (and the page size a link asked for), and one more
// parameter when key is given.
func pageURL(filter *web.Form, key, value string) string {
	return web.ListURL(listPath, filter, []string{"from", "page_size"}, key, value)
}

func networkName(n carriers.Network) string {
	switch n {
	case carriers.Safaricom:
		return "Safaricom"
	case carriers.Airtel:
		return "Airtel"
	case carriers.Telkom:
		return "Telkom"
	}
	return "Unknown network"
}
