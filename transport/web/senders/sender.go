// One application's page and its actions: documents, fee, default, cancellation.

package senders

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/web"
)

// sender is an application as the pages show it, with what can be done to it now.
type sender struct {
	persistence.SenderID
	NetworkName string
	StatusText  string // where it is, in words
	Fee         string
	CanUpload   bool // the first documents
	CanReapply  bool // new documents after a rejection
	CanPay      bool
	CanDefault  bool
	CanCancel   bool
}

func newSender(s persistence.SenderID) sender {
	can := func(e persistence.SenderEvent) bool { _, ok := persistence.SenderTransition(e, s.Status); return ok }
	v := sender{SenderID: s, NetworkName: networkName(s.Network), Fee: web.KES(s.FeeCents),
		CanUpload:  can(persistence.EventSubmitDocuments),
		CanReapply: can(persistence.EventReapply),
		CanPay:     can(persistence.EventPay) && !s.FeePaid,
		CanDefault: can(persistence.EventSetDefault) && s.Active && !s.Default,
		CanCancel:  can(persistence.EventCancel) && !(s.Status == persistence.SenderApproved && s.Active),
	}
	switch s.Status {
	case persistence.SenderApplied:
		v.StatusText = "Waiting for its documents"
	case persistence.SenderDocumentsSubmitted:
		v.StatusText = "Documents received: in review"
	case persistence.SenderPaymentPending:
		v.StatusText = "Documents received: waiting for the fee"
	case persistence.SenderApproved:
		v.StatusText = "Approved"
		if !s.Active {
			v.StatusText = "Approved, not active"
		}
	case persistence.SenderRejected:
		v.StatusText = "Rejected"
	default:
		v.StatusText = string(s.Status)
	}
	return v
}

// detailData is what one application's page shows.
type detailData struct {
	Sender    sender
	Shared    string
	Documents []document
	Key       string // the fee form's Idempotency-Key: one checkout however often it is sent
}

// document is one of the four files an application needs.
type document struct {
	Name, Label, Hint string
}

var documents = []document{
	{string(persistence.DocBusinessCert), "Certificate of incorporation or business registration", ""},
	{string(persistence.DocKRAPin), "KRA PIN certificate", ""},
	{string(persistence.DocAuthLetter), "Authorisation letter, signed and stamped", "The authorisation letter (the link above), on your letterhead."},
	{string(persistence.DocRequestLetter), "Request letter, signed", "The request letter (the link above), on your letterhead."},
}

// senderOf reads the application the path names; another account's is a 404 page.
func (p *Pages) senderOf(ctx context.Context, rc *fasthttp.RequestCtx) (uuid.UUID, persistence.SenderID, error) {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return uuid.Nil, persistence.SenderID{}, err
	}
	snd, err := p.Store.SenderIDByID(ctx, web.AccountID(rc), id)
	return id, snd, err
}

func (p *Pages) detail(ctx context.Context, rc *fasthttp.RequestCtx) error {
	_, snd, err := p.senderOf(ctx, rc)
	if err != nil {
		return err
	}
	return p.renderDetail(ctx, rc, snd, web.NewForm(), nil)
}

// renderDetail draws an application's page, showing err's problem in its forms when it has
// one.
func (p *Pages) renderDetail(ctx context.Context, rc *fasthttp.RequestCtx, snd persistence.SenderID, f *web.Form, err error) error {
	d := detailData{Sender: newSender(snd), Shared: p.Ops.SharedSender(), Documents: documents, Key: uuid.NewString()}
	page := &web.Page{Title: "Sender ID " + snd.Name, Nav: "/app/senders", Data: d, Form: f}
	if err != nil {
		return p.Views.RenderForm(ctx, rc, "sender", page, err)
	}
	return p.Views.Render(ctx, rc, http.StatusOK, "sender", page)
}

// refused shows an application's page again with why an action was refused (a 409: it is
// no longer in a state that allows it); other errors become error pages.
func (p *Pages) refused(ctx context.Context, rc *fasthttp.RequestCtx, id uuid.UUID, err error) error {
	snd, rerr := p.Store.SenderIDByID(ctx, web.AccountID(rc), id)
	if rerr != nil {
		return err
	}
	return p.renderDetail(ctx, rc, snd, web.NewForm(), err)
}

// documents receives the four files (first or again after a rejection); a missing or bad
// file is named beside its field.
func (p *Pages) documents(reapply bool) web.UploadHandler {
	return func(ctx context.Context, rc *fasthttp.RequestCtx, parts web.Parts) error {
		id, err := api.PathID(rc, "id")
		if err != nil {
			return err
		}
		snd, err := p.Ops.SubmitDocuments(ctx, web.AccountID(rc), id, reapply, parts)
		if err != nil {
			return p.refused(ctx, rc, id, err)
		}
		msg := "Thank you: the documents are in. We review them once the fee is paid."
		if snd.FeePaid {
			msg = "Thank you: the documents are in, and we are reviewing them."
		}
		p.Site.Flash(rc, "success", msg)
		return api.SeeOther(rc, senderPath(id))
	}
}

// pay opens the fee's checkout, once per form, and sends the payer to it.
func (p *Pages) pay(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	if k := web.ReadForm(rc).Get("idempotency_key"); k != "" {
		rc.Request.Header.Set("Idempotency-Key", k)
	}
	body, err := p.Ops.PayFee(ctx, rc, web.AccountID(rc), id)
	if err != nil {
		return p.refused(ctx, rc, id, err)
	}
	return web.ToCheckout(rc, body)
}

func (p *Pages) setDefault(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	snd, err := p.Ops.SetDefault(ctx, web.AccountID(rc), id)
	if err != nil {
		return p.refused(ctx, rc, id, err)
	}
	p.Site.Flash(rc, "success", "Your messages now go out under "+snd.Name+".")
	return api.SeeOther(rc, "/app/senders")
}

func (p *Pages) cancel(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, snd, err := p.senderOf(ctx, rc)
	if err != nil {
		return err
	}
	if err := p.Ops.Cancel(ctx, web.AccountID(rc), id); err != nil {
		return p.refused(ctx, rc, id, err)
	}
	p.Site.Flash(rc, "success", "The application for "+snd.Name+" is cancelled.")
	return api.SeeOther(rc, "/app/senders")
}
