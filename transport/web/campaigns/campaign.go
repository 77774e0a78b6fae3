// One campaign's page: its report, live while it runs, its messages and its cancellation.

package campaigns

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/web"
)

func campaignPath(id uuid.UUID) string { return listPath + "/" + id.String() }

// detailData is what a campaign's page shows.
type detailData struct {
	Row      row
	Sender   string // the sender ID it names, "" for the account's default route
	Messages string // the messages page of the campaign
	Poll     string
}

// campaignOf reads the campaign the path names; another account's is a 404 page.
func (p *Pages) campaignOf(ctx context.Context, rc *fasthttp.RequestCtx) (persistence.Campaign, error) {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return persistence.Campaign{}, err
	}
	return p.Store.Campaign(ctx, web.AccountID(rc), id)
}

func (p *Pages) detailOf(ctx context.Context, rc *fasthttp.RequestCtx, c persistence.Campaign) (detailData, error) {
	d := detailData{Row: newRow(c), Messages: "/app/messages?campaign_id=" + c.ID.String(), Poll: pollEvery}
	if c.SenderID != nil {
		list, err := p.Store.SenderIDs(ctx, web.AccountID(rc))
		if err != nil {
			return detailData{}, err
		}
		for _, s := range list {
			if s.ID == *c.SenderID {
				d.Sender = s.Name
			}
		}
	}
	return d, nil
}

// detail shows a campaign's report, as GET /campaigns/{id}/report gives it.
func (p *Pages) detail(ctx context.Context, rc *fasthttp.RequestCtx) error {
	c, err := p.campaignOf(ctx, rc)
	if err != nil {
		return err
	}
	return p.renderDetail(ctx, rc, http.StatusOK, c, nil)
}

func (p *Pages) renderDetail(ctx context.Context, rc *fasthttp.RequestCtx, status int, c persistence.Campaign, f *web.Form) error {
	d, err := p.detailOf(ctx, rc, c)
	if err != nil {
		return err
	}
	return p.Views.Render(ctx, rc, status, "campaign", &web.Page{Title: "Campaign " + c.Name, Nav: listPath, Data: d, Form: f})
}

// detailProgress is the report's figures alone, for htmx to swap in while the campaign runs.
func (p *Pages) detailProgress(ctx context.Context, rc *fasthttp.RequestCtx) error {
	c, err := p.campaignOf(ctx, rc)
	if err != nil {
		return err
	}
	d, err := p.detailOf(ctx, rc, c)
	if err != nil {
		return err
	}
	return p.Views.Fragment(rc, http.StatusOK, "campaign", "figures", d)
}

// cancel stops the campaign with POST /campaigns/{id}/cancel's operation and shows what was
// refunded; a campaign that can no longer be cancelled says so on its page.
func (p *Pages) cancel(ctx context.Context, rc *fasthttp.RequestCtx) error {
	c, err := p.campaignOf(ctx, rc)
	if err != nil {
		return err
	}
	done, err := p.Ops.Cancel(ctx, web.AccountID(rc), c.ID)
	if err != nil {
		prob := api.ProblemOf(err)
		if prob.Status != http.StatusConflict {
			return err
		}
		f := web.NewForm()
		f.Fail(prob)
		return p.renderDetail(ctx, rc, prob.Status, c, f)
	}
	msg := "Cancelled the campaign “" + done.Name + "”. "
	if done.RefundedCents > 0 {
		msg += web.KES(done.RefundedCents) + " is refunded to your wallet."
	} else {
		msg += "What was not sent is refunded to your wallet as soon as the messages already sent are settled."
	}
	p.Site.Flash(rc, "success", msg)
	return api.SeeOther(rc, campaignPath(c.ID))
}
