// One message's page: its timeline, and the live delivery check.

package messages

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/web"
)

// event is one step of a message's timeline.
type event struct {
	At     *time.Time // nil: not yet
	What   string
	Detail string
}

// detailData is what a message's page shows.
type detailData struct {
	row
	Events   []event
	CanCheck bool // the network knows it and it is not final: a live check may move it on
}

// timeline is what happened to a message, from what is stored: accepted (and charged) with
// its job, sent to its network, then delivered or failed. A failed message's cost is refunded
// in the same write that marks it failed (one ledger entry per job).
func timeline(m persistence.Message) []event {
	ev := []event{{At: &m.CreatedAt, What: "Accepted", Detail: "Charged " + web.KES(m.CostCents) + " for " + parts(m.Parts) + "."}}
	network := networkName(m.Network.String())
	switch {
	case m.SentAt != nil:
		d := "Handed to " + network + "."
		if m.ProviderMessageID != nil {
			d = "Handed to " + network + ", which knows it as " + *m.ProviderMessageID + "."
		}
		ev = append(ev, event{At: m.SentAt, What: "Sent", Detail: d})
	case m.Status == persistence.MessageQueued:
		ev = append(ev, event{What: "Waiting to be sent", Detail: "It goes to " + network + " shortly."})
	}
	switch {
	case m.DeliveredAt != nil:
		ev = append(ev, event{At: m.DeliveredAt, What: "Delivered", Detail: "The phone received it (" + network + ": " + m.ProviderStatus + ")."})
	case m.Status == persistence.MessageFailed:
		d := "Not delivered."
		if m.ProviderStatus != "" {
			d = "Not delivered (" + network + ": " + m.ProviderStatus + ")."
		}
		ev = append(ev, event{At: m.FailedAt, What: "Failed", Detail: d})
		if m.CostCents > 0 {
			ev = append(ev, event{At: m.FailedAt, What: "Refunded", Detail: web.KES(m.CostCents) + " back to your wallet."})
		}
	case m.Status == persistence.MessageSent:
		ev = append(ev, event{What: "Waiting for the delivery report", Detail: network + " reports delivery when the phone receives it."})
	}
	return ev
}

func parts(n int) string {
	if n == 1 {
		return "1 SMS"
	}
	return web.Thousands(int64(n)) + " SMS parts"
}

// messageOf reads the message the path names; another account's is a 404 page.
func (p *Page) messageOf(ctx context.Context, rc *fasthttp.RequestCtx) (persistence.Message, error) {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return persistence.Message{}, err
	}
	return p.ops.Message(ctx, web.AccountID(rc), id)
}

func (p *Page) detail(ctx context.Context, rc *fasthttp.RequestCtx) error {
	m, err := p.messageOf(ctx, rc)
	if err != nil {
		return err
	}
	d := detailData{row: newRow(m), Events: timeline(m),
		CanCheck: m.ProviderMessageID != nil && m.Status == persistence.MessageSent}
	return p.views.Render(ctx, rc, http.StatusOK, "message", &web.Page{Title: "Message to " + m.Recipient, Nav: "/app/messages", Data: d})
}

// check asks the message's network for its status now, records the answer, and shows the
// message again saying what the network said; a check refused (too many, or the network not
// answering) says why.
func (p *Page) check(ctx context.Context, rc *fasthttp.RequestCtx) error {
	m, err := p.messageOf(ctx, rc)
	if err != nil {
		return err
	}
	to := messagePath(m.ID)
	if m.ProviderMessageID == nil {
		p.site.Flash(rc, "info", "The message has not reached its network yet: there is nothing to check.")
		return api.SeeOther(rc, to)
	}
	m, err = p.ops.CheckDelivery(ctx, web.AccountID(rc), *m.ProviderMessageID)
	if err != nil {
		prob := api.ProblemOf(err)
		if prob.Status >= http.StatusInternalServerError && prob.Status != http.StatusServiceUnavailable {
			return err
		}
		why := prob.Detail + "."
		if prob.Code == "too_many_status_checks" {
			why = "too many live checks in the last minute; try again shortly."
		}
		p.site.Flash(rc, "error", "The check did not go through: "+why+" The status shown is the one last recorded.")
		return api.SeeOther(rc, to)
	}
	p.site.Flash(rc, "success", "Checked with "+networkName(m.Network.String())+" just now: "+statusName(m.Status)+".")
	return api.SeeOther(rc, to)
}

func messagePath(id uuid.UUID) string { return "/app/messages/" + id.String() }
