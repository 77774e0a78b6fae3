// A delivery's page: its events and its attempts, newest first, with its redelivery.

package webhooks

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/web"
)

// deliveryData is what a delivery's page shows.
type deliveryData struct {
	Hook     endpoint
	Delivery deliveryRow
	Events   []deliveryEvent
	Attempts []attemptRow
	Earlier  int // attempts older than those shown
}

type deliveryEvent struct{ ID, Type string }

// attemptRow is an attempt as the page shows it: times to the second, since a schedule's
// first retries come seconds apart.
type attemptRow struct {
	persistence.AttemptRecord
	Answer    string // the status code, or that none came
	Succeeded bool
	Took      string
	AtText    string
	RetryText string // "" when it scheduled none
}

const attemptTime = "2 Jan 2006, 15:04:05 UTC"

func newAttemptRow(a persistence.AttemptRecord) attemptRow {
	r := attemptRow{AttemptRecord: a, Answer: "No answer", AtText: a.At.UTC().Format(attemptTime), Took: "under 1 ms"}
	if a.StatusCode != nil {
		r.Answer = strconv.Itoa(*a.StatusCode)
		r.Succeeded = *a.StatusCode >= 200 && *a.StatusCode < 300 && a.Error == nil
	}
	if a.Duration >= time.Millisecond {
		r.Took = a.Duration.Round(time.Millisecond).String()
	}
	if a.NextAttemptAt != nil {
		r.RetryText = a.NextAttemptAt.UTC().Format(attemptTime)
	}
	return r
}

func deliveryPath(hook, delivery uuid.UUID) string {
	return hookPath(hook) + "/deliveries/" + delivery.String()
}

// deliveryOf is the endpoint and the delivery id the address names; another account's
// endpoint is 404 (the delivery's owner is checked by the operation).
func (p *Pages) deliveryOf(ctx context.Context, rc *fasthttp.RequestCtx) (persistence.Webhook, uuid.UUID, error) {
	w, err := p.hookOf(ctx, rc)
	if err != nil {
		return persistence.Webhook{}, uuid.Nil, err
	}
	did, err := api.PathID(rc, "delivery_id")
	return w, did, err
}

// delivery shows one of the endpoint's deliveries; another endpoint's, or another account's,
// is 404.
func (p *Pages) delivery(ctx context.Context, rc *fasthttp.RequestCtx) error {
	w, did, err := p.deliveryOf(ctx, rc)
	if err != nil {
		return err
	}
	rec, attempts, err := p.Ops.Delivery(ctx, web.AccountID(rc), w.ID, did)
	if err != nil {
		return err
	}
	d := deliveryData{Hook: newEndpoint(w), Delivery: newDeliveryRow(rec), Earlier: max(0, rec.Attempts-len(attempts))}
	for i, id := range rec.EventIDs {
		d.Events = append(d.Events, deliveryEvent{ID: id, Type: string(rec.EventTypes[i])})
	}
	for _, a := range attempts {
		d.Attempts = append(d.Attempts, newAttemptRow(a))
	}
	return p.Views.Render(ctx, rc, http.StatusOK, "delivery", &web.Page{Title: "Webhook delivery", Nav: navPath, Data: d})
}
