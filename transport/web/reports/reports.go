// Package reports is the dashboard's reports page (/app/reports): spend by day over 7, 30 or
// 90 days, every campaign's results with its cost per delivered message, and the results of
// the account's campaigns by contact group; the page of GET /reports/spend-trend,
// /reports/campaign-performance and /reports/group-performance. Every figure comes from a
// kept counter (account_days, the jobs' counters), never a scan of the account's messages.
package reports

import (
	"context"
	"embed"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	campaignsapi "github.com/tuma-sms/tuma/transport/api/campaigns"
	"github.com/tuma-sms/tuma/transport/web"
)

//go:embed templates/*.html
var templates embed.FS

// Store is what the page reads: the same reads as the three report endpoints.
type Store interface {
	SpendTrend(ctx context.Context, accountID uuid.UUID, now time.Time, days int) ([]persistence.SpendDay, error)
	Campaigns(ctx context.Context, accountID uuid.UUID, p persistence.Page) ([]persistence.Campaign, error)
	GroupResults(ctx context.Context, accountID uuid.UUID) ([]persistence.GroupResult, error)
}

// Periods are the spend trend's choices, in days (the API's), and the page's default.
var periods = []int{7, 30, 90}

const defaultPeriod = 30

// campaignsShown bounds the campaigns table: the newest ones (the API lists every campaign).
const campaignsShown = 100

// Page serves the reports.
type Page struct {
	views *web.Views
	store Store
	now   func() time.Time
}

// New returns the page.
func New(site *web.Site, store Store, now func() time.Time) (*Page, error) {
	v, err := site.Views(templates)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Page{views: v, store: store, now: now}, nil
}

// RegisterPages adds the route.
func (p *Page) RegisterPages(r *web.Router) {
	r.Page("GET", "/app/reports", p.reports)
}

// data is what the template shows.
type data struct {
	Period     int
	Periods    []period
	Problem    string // the address's period is not one of the choices
	Chart      web.BarChart
	Spend, SMS int64
	Campaigns  []campaignRow
	Limited    bool // more campaigns than shown
	Groups     []groupRow
}

type period struct {
	Days    int
	Label   string
	Current bool
}

type campaignRow struct {
	persistence.Campaign
	Status, Recipients, Delivered, Failed, Rate, Cost, PerDelivered string
}

type groupRow struct {
	persistence.GroupResult
	Count, Rate, Spend string
}

func (p *Page) reports(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id := web.AccountID(rc)
	status := http.StatusOK
	d := data{}
	q := api.NewQuery(rc)
	d.Period = q.IntIn("period", defaultPeriod, periods...)
	if err := q.Err(); err != nil {
		var prob *api.Problem
		if !errors.As(err, &prob) {
			return err
		}
		status, d.Period = prob.Status, defaultPeriod
		d.Problem = "That address asks for a period this page does not have: choose 7, 30 or 90 days."
	}
	for _, n := range periods {
		d.Periods = append(d.Periods, period{Days: n, Label: "Last " + strconv.Itoa(n) + " days", Current: n == d.Period})
	}
	days, err := p.store.SpendTrend(ctx, id, p.now(), d.Period)
	if err != nil {
		return err
	}
	points := make([]web.Point, 0, len(days))
	for _, day := range days {
		d.Spend += day.SpendCents
		d.SMS += day.SMS
		points = append(points, web.Point{Label: day.Day.Format("Jan 2"), Value: float64(day.SpendCents) / 100, Shown: web.KES(day.SpendCents)})
	}
	d.Chart = web.NewBarChart("trend", "Spend over the last "+strconv.Itoa(d.Period)+" days",
		"SMS spend per day in KES, from "+points[0].Label+" to "+points[len(points)-1].Label+" (UTC).",
		points, func(v float64) string { return web.KES(int64(v * 100)) })

	cs, err := p.store.Campaigns(ctx, id, persistence.Page{Size: campaignsShown + 1})
	if err != nil {
		return err
	}
	if len(cs) > campaignsShown {
		cs, d.Limited = cs[:campaignsShown], true
	}
	for _, c := range cs {
		r := campaignRow{Campaign: c, Status: statusText(c.Status), Recipients: web.Thousands(int64(c.TotalRecipients)),
			Delivered: web.Thousands(int64(c.Delivered)), Failed: web.Thousands(int64(c.Failed)),
			Rate: web.Percent(campaignsapi.DeliveryRate(c.Delivered, c.TotalRecipients)), Cost: web.KES(c.CostCents - c.RefundedCents),
			PerDelivered: "—"}
		if c.Delivered > 0 {
			r.PerDelivered = web.KESEach(c.CostCents-c.RefundedCents, int64(c.Delivered))
		}
		d.Campaigns = append(d.Campaigns, r)
	}
	gs, err := p.store.GroupResults(ctx, id)
	if err != nil {
		return err
	}
	for _, g := range gs {
		d.Groups = append(d.Groups, groupRow{GroupResult: g, Count: web.Thousands(int64(g.Campaigns)), Rate: web.Percent(g.AvgDeliveryRate), Spend: web.KES(g.SpendCents)})
	}
	return p.views.Render(ctx, rc, status, "reports", &web.Page{Title: "Reports", Nav: "/app/reports", Data: d})
}

// statusText is a campaign's status as a word of a sentence's start.
func statusText(s persistence.CampaignStatus) string {
	if s == "" {
		return ""
	}
	return strings.ToUpper(string(s[:1])) + string(s[1:])
}
