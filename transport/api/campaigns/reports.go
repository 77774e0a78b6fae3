// Reports: spend by day, and how campaigns and the groups they went to performed.

package campaigns

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

type spendDayJSON struct {
	Date       string  `json:"date"`
	Label      string  `json:"label"`
	SpendKES   api.KES `json:"spend_kes"`
	SMSCount   int64   `json:"sms_count"`
	CostPerSMS float64 `json:"cost_per_sms"`
}

// perUnit is cents ÷ n in KES, to the cent (0 when n is 0): a ratio for display, never money
// that moves.
func perUnit(cents, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return math.Round(float64(cents)/float64(n)) / 100
}

func (h *Handler) spendTrend(ctx context.Context, rc *fasthttp.RequestCtx) error {
	q := api.NewQuery(rc)
	period := q.IntIn("period", 7, 7, 30, 90)
	if err := q.Err(); err != nil {
		return err
	}
	days, err := h.store.SpendTrend(ctx, api.Principal(rc).AccountID, h.now(), period)
	if err != nil {
		return err
	}
	out := make([]spendDayJSON, len(days))
	for i, d := range days {
		out[i] = spendDayJSON{Date: d.Day.Format(time.DateOnly), Label: d.Day.Format("Jan 2"), SpendKES: api.KES(d.SpendCents),
			SMSCount: d.SMS, CostPerSMS: perUnit(d.SpendCents, d.SMS)}
	}
	return api.WriteJSON(rc, http.StatusOK, out)
}

type campaignPerformanceJSON struct {
	ID               uuid.UUID     `json:"id"`
	Name             string        `json:"name"`
	Status           string        `json:"status"`
	GroupName        string        `json:"group_name"`
	TotalRecipients  int           `json:"total_recipients"`
	TotalDelivered   int           `json:"total_delivered"`
	TotalFailed      int           `json:"total_failed"`
	CostKES          api.KES       `json:"cost_kes"`
	DeliveryRate     float64       `json:"delivery_rate"`
	CostPerDelivered float64       `json:"cost_per_delivered"`
	CreatedAt        api.Timestamp `json:"created_at"`
}

func (h *Handler) campaignPerformance(ctx context.Context, rc *fasthttp.RequestCtx) error {
	list, err := h.store.Campaigns(ctx, api.Principal(rc).AccountID, persistence.Page{})
	if err != nil {
		return err
	}
	out := make([]campaignPerformanceJSON, len(list))
	for i, c := range list {
		out[i] = campaignPerformanceJSON{ID: c.ID, Name: c.Name, Status: string(c.Status), GroupName: c.GroupName,
			TotalRecipients: c.TotalRecipients, TotalDelivered: c.Delivered, TotalFailed: c.Failed, CostKES: api.KES(c.CostCents),
			DeliveryRate:     DeliveryRate(c.Delivered, c.TotalRecipients),
			CostPerDelivered: perUnit(c.CostCents-c.RefundedCents, int64(c.Delivered)), CreatedAt: api.Timestamp(c.CreatedAt)}
	}
	return api.WriteJSON(rc, http.StatusOK, out)
}

type groupPerformanceJSON struct {
	ID              uuid.UUID `json:"id"`
	Name            string    `json:"name"`
	CampaignCount   int       `json:"campaign_count"`
	TotalRecipients int64     `json:"total_recipients"`
	TotalDelivered  int64     `json:"total_delivered"`
	TotalFailed     int64     `json:"total_failed"`
	TotalSpend      api.KES   `json:"total_spend"`
	AvgDeliveryRate float64   `json:"avg_delivery_rate"`
}

func (h *Handler) groupPerformance(ctx context.Context, rc *fasthttp.RequestCtx) error {
	list, err := h.store.GroupResults(ctx, api.Principal(rc).AccountID)
	if err != nil {
		return err
	}
	out := make([]groupPerformanceJSON, len(list))
	for i, g := range list {
		out[i] = groupPerformanceJSON{ID: g.GroupID, Name: g.Name, CampaignCount: g.Campaigns, TotalRecipients: g.Recipients,
			TotalDelivered: g.Delivered, TotalFailed: g.Failed, TotalSpend: api.KES(g.SpendCents), AvgDeliveryRate: g.AvgDeliveryRate}
	}
	return api.WriteJSON(rc, http.StatusOK, out)
}
