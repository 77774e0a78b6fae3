// An endpoint's delivery log on its page: filtered by status, paged by cursor, each delivery
// with its redelivery.

package webhooks

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/web"
)

// logSize is how many deliveries a page of the log shows.
const logSize = 20

// logData is the delivery log as the page shows it.
type logData struct {
	Filter   *web.Form
	Statuses []statusChoice
	Status   string // the filter in effect ("" for all)
	Listed   bool   // the query was good and the log is read
	Rows     []deliveryRow
	Next     string // the next (older) page's address, "" at the end
	First    string // the newest page's address, when this is a later one
}

type statusChoice struct {
	Value, Label string
	Selected     bool
}

// deliveryRow is one delivery as the log shows it.
type deliveryRow struct {
	persistence.DeliveryRecord
	StatusText string
	Types      string
	Code       string
}

func newDeliveryRow(d persistence.DeliveryRecord) deliveryRow {
	r := deliveryRow{DeliveryRecord: d, Code: "None yet"}
	types := make([]string, len(d.EventTypes))
	for i, t := range d.EventTypes {
		types[i] = string(t)
	}
	r.Types = strings.Join(types, ", ")
	if d.LastStatusCode != nil {
		r.Code = strconv.Itoa(*d.LastStatusCode)
	}
	switch d.Status {
	case persistence.DeliveryPending:
		r.StatusText = "Pending"
	case persistence.DeliverySucceeded:
		r.StatusText = "Succeeded"
	case persistence.DeliveryFailed:
		r.StatusText = "Failed"
	default:
		r.StatusText = string(d.Status)
	}
	return r
}

// readLog reads the page of the log the query asks for, as GET /webhooks/{id}/deliveries
// does; a bad query is said beside the filter, with its status.
func (p *Pages) readLog(ctx context.Context, rc *fasthttp.RequestCtx, w persistence.Webhook) (logData, int, error) {
	acct := web.AccountID(rc)
	d := logData{Filter: web.NewForm()}
	var q *api.Query
	if string(rc.Method()) == http.MethodGet {
		q = api.NewQuery(rc)
	} else {
		q = api.NewQuery(&fasthttp.RequestCtx{}) // a form's answer shows the newest page
	}
	status := api.Enum(q, "status", persistence.DeliveryStatuses()...)
	if q.Text("page") != "" {
		q.Malformed("page", "the delivery log pages by cursor: follow its Older link")
	}
	d.Status = string(status)
	d.Filter.Set("status", d.Status)
	d.Statuses = []statusChoice{{Value: "", Label: "All", Selected: status == ""}}
	for _, s := range persistence.DeliveryStatuses() {
		d.Statuses = append(d.Statuses, statusChoice{Value: string(s), Label: newDeliveryRow(persistence.DeliveryRecord{Status: s}).StatusText, Selected: s == status})
	}
	l := p.Ops.DeliveryList(acct, w.ID, status)
	pg := q.Page(l)
	pg.Size, pg.Number = logSize, 0
	if err := q.Err(); err != nil {
		var prob *api.Problem
		if !errors.As(err, &prob) {
			return logData{}, 0, err
		}
		d.Filter.Fail(prob)
		for _, e := range prob.Errors {
			if e.Field != "status" { // the cursor or page_size of an altered address
				d.Filter.Message = "This address of the log is not one it gave (altered, or of another filter). Start again from its newest page."
			}
		}
		return d, prob.Status, nil
	}
	list, err := p.Ops.Deliveries(ctx, acct, w.ID, status, pg)
	if err != nil {
		return logData{}, 0, err
	}
	d.Listed = true
	for _, r := range list {
		d.Rows = append(d.Rows, newDeliveryRow(r))
	}
	if len(list) == pg.Size {
		d.Next = logURL(w.ID, d.Status, l.Cursor(list[len(list)-1].ID))
	}
	if pg.After != nil {
		d.First = logURL(w.ID, d.Status, "")
	}
	return d, 0, nil
}

// logURL is the endpoint's page showing the log of a status, after a cursor when given.
func logURL(id uuid.UUID, status, cursor string) string {
	v := url.Values{}
	if status != "" {
		v.Set("status", status)
	}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	if len(v) == 0 {
		return hookPath(id) + "#log"
	}
	return hookPath(id) + "?" + v.Encode() + "#log"
}

// retry makes a delivery due now with POST /webhooks/{id}/deliveries/{delivery_id}/retry's
// operation, and goes back to the log as it was filtered (or to the delivery's page, from there).
func (p *Pages) retry(ctx context.Context, rc *fasthttp.RequestCtx) error {
	w, did, err := p.deliveryOf(ctx, rc)
	if err != nil {
		return err
	}
	if err := p.Ops.Retry(ctx, web.AccountID(rc), w.ID, did); err != nil {
		return err
	}
	f := web.ReadForm(rc)
	status := f.Get("status")
	if !slices.Contains(persistence.DeliveryStatuses(), persistence.DeliveryStatus(status)) {
		status = ""
	}
	msg := "The delivery is due again now. Reload to see how it went."
	if !w.Enabled {
		msg = "The delivery is due again, but the endpoint is disabled: it goes out once you enable it."
	}
	p.Site.Flash(rc, "success", msg)
	if f.Get("back") == "delivery" { // sent from the delivery's own page
		return api.SeeOther(rc, deliveryPath(w.ID, did))
	}
	return api.SeeOther(rc, logURL(w.ID, status, ""))
}
