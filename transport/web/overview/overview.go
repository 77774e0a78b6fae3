// Package overview is the dashboard's home page (/app/): the wallet and pricing tier, this
// month's spend, the last 30 days as a chart, delivery by network, running campaigns and
// unread notifications. Every figure comes from a running counter or a bounded read (no
// scan of the account's messages), so the page costs the same at a million messages.
package overview

import (
	"context"
	"embed"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/web"
)

//go:embed templates/*.html
var templates embed.FS

// Store is what the page reads: the same reads as GET /wallet, /wallet/pricing,
// /reports/spend-trend, /campaigns and /notifications.
type Store interface {
	Wallet(ctx context.Context, accountID uuid.UUID) (persistence.Wallet, error)
	SpendTrend(ctx context.Context, accountID uuid.UUID, now time.Time, days int) ([]persistence.SpendDay, error)
	RecentDelivery(ctx context.Context, accountID uuid.UUID, limit int) ([]persistence.NetworkDelivery, error)
	Campaigns(ctx context.Context, accountID uuid.UUID, p persistence.Page) ([]persistence.Campaign, error)
	Notifications(ctx context.Context, accountID uuid.UUID, limit int) ([]persistence.Notification, error)
	UnreadCount(ctx context.Context, accountID uuid.UUID) (int64, error)
}

// Bounds of what the page reads.
const (
	chartDays        = 30
	deliverySample   = 1000 // newest messages summed by network
	campaignsScanned = 20   // newest campaigns looked at for running ones
	unreadShown      = 5
)

// Page serves the overview.
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
	r.Page("GET", "/app/", p.overview)
}

// data is what the template shows.
type data struct {
	Wallet        persistence.Wallet
	Pricing       actors.Pricing
	Next          *actors.Tier
	ToNext        int64
	TierProgress  float64 // percent of the way from this tier's start to the next one's
	MonthSpend    int64
	MonthSMS      int64
	MonthName     string
	Chart         web.BarChart
	Networks      []networkRate
	SampleSize    int64
	Campaigns     []campaign
	Unread        []persistence.Notification
	UnreadCount   int64
	NoMessagesYet bool
}

// campaign is a running campaign with its progress.
type campaign struct {
	ID                uuid.UUID
	Name              string
	Status            persistence.CampaignStatus
	ScheduledAt       *time.Time
	Total, Finished   int64
	Delivered, Failed int64
}

type networkRate struct {
	Name              string
	Messages          int64
	Delivered, Failed int64
	Pending           int64
	Rate              web.HBar
	Finished          bool // some of its messages reached a final state
}

func (p *Page) overview(ctx context.Context, rc *fasthttp.RequestCtx) error {
	// A payer back from a checkout (TUMA_DASHBOARD_URL?topup=…) is shown the wallet.
	if q := rc.QueryArgs(); len(q.Peek("topup")) > 0 {
		return api.SeeOther(rc, "/app/wallet?"+string(q.QueryString()))
	}
	id := web.AccountID(rc)
	now := p.now().UTC()
	d := data{MonthName: now.Format("January")}
	var err error
	if d.Wallet, err = p.store.Wallet(ctx, id); err != nil {
		return err
	}
	d.Pricing = actors.PricingFor(d.Wallet.LifetimeSMS, d.Wallet.PricingTier, d.Wallet.Internal)
	tiers := actors.Tiers()
	if i := actors.TierIndex(d.Wallet.LifetimeSMS); i+1 < len(tiers) {
		next := tiers[i+1]
		d.Next, d.ToNext = &next, next.MinSMS-d.Wallet.LifetimeSMS
		d.TierProgress = 100 * float64(d.Wallet.LifetimeSMS-tiers[i].MinSMS) / float64(next.MinSMS-tiers[i].MinSMS)
	}

	// One read covers both the chart (30 days) and the month so far (up to 31 days).
	days, err := p.store.SpendTrend(ctx, id, now, max(chartDays, now.Day()))
	if err != nil {
		return err
	}
	points := make([]web.Point, 0, chartDays)
	for i, day := range days {
		if day.Day.Month() == now.Month() && day.Day.Year() == now.Year() {
			d.MonthSpend += day.SpendCents
			d.MonthSMS += day.SMS
		}
		if i >= len(days)-chartDays {
			points = append(points, web.Point{Label: day.Day.Format("Jan 2"), Value: float64(day.SpendCents) / 100, Shown: web.KES(day.SpendCents)})
		}
	}
	d.Chart = web.NewBarChart("spend", "Spend over the last 30 days",
		"SMS spend per day in KES, from "+points[0].Label+" to "+points[len(points)-1].Label+" (UTC).",
		points, func(v float64) string { return web.KES(int64(v * 100)) })

	if d.Networks, d.SampleSize, err = p.delivery(ctx, id); err != nil {
		return err
	}
	d.NoMessagesYet = d.SampleSize == 0
	cs, err := p.store.Campaigns(ctx, id, persistence.Page{Size: campaignsScanned})
	if err != nil {
		return err
	}
	for _, c := range cs {
		switch c.Status {
		case persistence.CampaignQueued, persistence.CampaignScheduled, persistence.CampaignSending:
			d.Campaigns = append(d.Campaigns, campaign{ID: c.ID, Name: c.Name, Status: c.Status, ScheduledAt: c.ScheduledAt,
				Total: int64(c.TotalRecipients), Finished: int64(c.Delivered + c.Failed), Delivered: int64(c.Delivered), Failed: int64(c.Failed)})
		}
	}
	if d.UnreadCount, err = p.store.UnreadCount(ctx, id); err != nil {
		return err
	}
	if d.UnreadCount > 0 {
		ns, err := p.store.Notifications(ctx, id, 20)
		if err != nil {
			return err
		}
		for _, n := range ns {
			if !n.Read && len(d.Unread) < unreadShown {
				d.Unread = append(d.Unread, n)
			}
		}
	}
	return p.views.Render(ctx, rc, http.StatusOK, "overview", &web.Page{Title: "Overview", Nav: "/app/", Data: d,
		Banners: web.LandingBanners(rc)})
}

// delivery is the newest messages' delivery rate on each network: delivered of those that
// reached a final state.
func (p *Page) delivery(ctx context.Context, id uuid.UUID) ([]networkRate, int64, error) {
	ds, err := p.store.RecentDelivery(ctx, id, deliverySample)
	if err != nil {
		return nil, 0, err
	}
	var out []networkRate
	var total int64
	for _, d := range ds {
		total += d.Messages
		name := networkName(d.Network)
		r := networkRate{Name: name, Messages: d.Messages, Delivered: d.Delivered, Failed: d.Failed,
			Pending: d.Messages - d.Delivered - d.Failed, Finished: d.Delivered+d.Failed > 0}
		rate := 0.0
		if r.Finished {
			rate = 100 * float64(d.Delivered) / float64(d.Delivered+d.Failed)
		}
		r.Rate = web.NewHBar(name+" delivery rate", rate)
		out = append(out, r)
	}
	return out, total, nil
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
	return n.String()
}
