// Package campaigns is the dashboard's campaign pages (/app/campaigns): the account's
// campaigns with their progress, live while any is running; creating one for a contact group
// with merge tags, previewed contact by contact; and each campaign's report, with its
// messages and its cancellation. Every action runs the JSON API's operation
// (transport/api/campaigns), so the rules, limits and errors are the API's.
package campaigns

import (
	"context"
	"embed"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	campaignsapi "github.com/tuma-sms/tuma/transport/api/campaigns"
	"github.com/tuma-sms/tuma/transport/web"
)

//go:embed templates/*.html
var templates embed.FS

// Operations are the campaign operations the JSON API runs too (campaigns.Handler).
type Operations interface {
	Create(ctx context.Context, accountID uuid.UUID, in campaignsapi.Input, key string) (persistence.Campaign, bool, error)
	Preview(ctx context.Context, accountID uuid.UUID, in campaignsapi.PreviewInput) (campaignsapi.Preview, error)
	Cancel(ctx context.Context, accountID, id uuid.UUID) (persistence.Campaign, error)
}

// Store is what the pages read: the same reads as GET /campaigns, /contacts/groups, /senders
// and /auth/me (the opt-out text and quiet hours of promotional campaigns).
type Store interface {
	AccountByID(ctx context.Context, id uuid.UUID) (persistence.Account, error)
	Campaigns(ctx context.Context, accountID uuid.UUID, p persistence.Page) ([]persistence.Campaign, error)
	Campaign(ctx context.Context, accountID, id uuid.UUID) (persistence.Campaign, error)
	Groups(ctx context.Context, accountID uuid.UUID) ([]persistence.Group, error)
	SenderIDs(ctx context.Context, accountID uuid.UUID) ([]persistence.SenderID, error)
}

// Pages serve the campaigns.
type Pages struct {
	web.Kit[Operations, Store]
	shared string // the shared sender ID, for an account without its own default
	now    func() time.Time
}

// New returns the pages.
func New(site *web.Site, ops Operations, store Store, shared string, now func() time.Time) (*Pages, error) {
	kit, err := web.NewKit(site, templates, ops, store)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Pages{Kit: kit, shared: shared, now: now}, nil
}

// RegisterPages adds the routes.
func (p *Pages) RegisterPages(r *web.Router) {
	r.Page("GET", listPath, p.list)
	r.Page("POST", listPath, p.create)
	r.Page("GET", "/app/campaigns/progress", p.listProgress)
	r.Page("GET", "/app/campaigns/new", p.newForm)
	r.Page("POST", "/app/campaigns/preview", p.preview)
	r.Page("GET", "/app/campaigns/{id}", p.detail)
	r.Page("GET", "/app/campaigns/{id}/progress", p.detailProgress)
	r.Page("POST", "/app/campaigns/{id}/cancel", p.cancel)
}

const listPath = "/app/campaigns"

// listLimit bounds the list: the newest campaigns; the reports API has them all.
const listLimit = 100

// pollEvery is how often a page with a running campaign asks for its counters again.
const pollEvery = "3s"

// nairobi is East Africa Time, the zone people schedule in (UTC+3 all year: no DST, so no
// time zone database is needed).
func nairobi() *time.Location { return time.FixedZone("EAT", 3*60*60) }

// eat formats a time as the pages show it: in Nairobi.
func eat(t time.Time) string { return t.In(nairobi()).Format("2 Jan 2006, 15:04") + " EAT" }

// row is a campaign as the pages show it.
type row struct {
	persistence.Campaign
	Report                                 campaignsapi.Report
	StatusText                             string
	Running                                bool // its counters still move: the page polls
	Cancellable                            bool
	Done                                   int // delivered and failed
	Max                                    int // the progress bar's end: the recipients, at least 1
	Counts                                 string
	Rate                                   string // delivered ÷ recipients
	DeliveredText, FailedText, PendingText string
	Schedule                               string
	Cost                                   string
	Refunded                               string
	PerDelivered                           string // cost less refunds over the messages delivered
	Created                                string
	Started                                string
	Completed                              string
}

func newRow(c persistence.Campaign) row {
	r := row{Campaign: c, Report: campaignsapi.NewReport(c), Done: c.Delivered + c.Failed, Cost: web.KES(c.CostCents),
		Refunded: web.KES(c.RefundedCents), Created: eat(c.CreatedAt), Schedule: "Straight away"}
	r.Max = max(c.TotalRecipients, 1)
	r.Counts = web.Thousands(int64(c.Delivered)) + " delivered, " + web.Thousands(int64(c.Failed)) + " failed, " +
		web.Thousands(int64(r.Report.Pending)) + " pending, of " + web.Thousands(int64(c.TotalRecipients))
	r.Rate = web.Percent(r.Report.DeliveryRate)
	r.PerDelivered = "None delivered yet"
	if c.Delivered > 0 {
		r.PerDelivered = web.KESEach(c.CostCents-c.RefundedCents, int64(c.Delivered))
	}
	of := " of " + web.Thousands(int64(c.TotalRecipients))
	r.DeliveredText = web.Thousands(int64(c.Delivered)) + of
	r.FailedText = web.Thousands(int64(c.Failed)) + of
	r.PendingText = web.Thousands(int64(r.Report.Pending)) + of
	if c.ScheduledAt != nil {
		r.Schedule = eat(*c.ScheduledAt)
	}
	if c.StartedAt != nil {
		r.Started = eat(*c.StartedAt)
	}
	if c.CompletedAt != nil {
		r.Completed = eat(*c.CompletedAt)
	}
	switch c.Status {
	case persistence.CampaignQueued:
		r.StatusText, r.Running, r.Cancellable = "Queued", true, true
	case persistence.CampaignScheduled:
		r.StatusText, r.Cancellable = "Scheduled", true
	case persistence.CampaignSending:
		r.StatusText, r.Running, r.Cancellable = "Sending", true, true
	case persistence.CampaignCompleted:
		r.StatusText = "Completed"
	case persistence.CampaignFailed:
		r.StatusText = "Failed"
	case persistence.CampaignCancelled:
		r.StatusText = "Cancelled"
		// Messages in flight at the cancellation still settle (and refund) after it.
		r.Running = r.Report.Pending > 0
	default:
		r.StatusText = string(c.Status)
	}
	return r
}

// listData is what the list shows.
type listData struct {
	Rows    []row
	Running bool // any campaign's counters still move
	Limited bool // more campaigns than the list shows
	Poll    string
}

func (p *Pages) readList(ctx context.Context, rc *fasthttp.RequestCtx) (listData, error) {
	list, err := p.Store.Campaigns(ctx, web.AccountID(rc), persistence.Page{Number: 1, Size: listLimit})
	if err != nil {
		return listData{}, err
	}
	d := listData{Limited: len(list) == listLimit, Poll: pollEvery}
	for _, c := range list {
		r := newRow(c)
		d.Running = d.Running || r.Running
		d.Rows = append(d.Rows, r)
	}
	return d, nil
}

// list shows the campaigns, newest first, as GET /campaigns reads them.
func (p *Pages) list(ctx context.Context, rc *fasthttp.RequestCtx) error {
	d, err := p.readList(ctx, rc)
	if err != nil {
		return err
	}
	return p.Views.Render(ctx, rc, http.StatusOK, "campaigns", &web.Page{Title: "Campaigns", Nav: listPath, Data: d})
}

// listProgress is the list's table alone, for htmx to swap in while campaigns run.
func (p *Pages) listProgress(ctx context.Context, rc *fasthttp.RequestCtx) error {
	d, err := p.readList(ctx, rc)
	if err != nil {
		return err
	}
	return p.Views.Fragment(rc, http.StatusOK, "campaigns", "table", d)
}
