package smppserver

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers/smpp"
	"github.com/tuma-sms/tuma/persistence"
)

// Statuses this server answers beyond SMPP 3.4's (README.md in this folder).
const (
	// StatusInvDCS is SMPP 5.0's ESME_RINVDCS: a data_coding this server does not read, or
	// a short_message that does not decode with it.
	StatusInvDCS smpp.Status = 0x104
	// StatusSuppressed (vendor-specific range) refuses a destination on the account's
	// suppression list: nothing is sent or charged.
	StatusSuppressed smpp.Status = 0x400
)

// submit sends one submit_sm, data_sm or submit_multi and answers it once the send has
// returned.
func (ss *session) submit(p *smpp.PDU) {
	defer func() { <-ss.window }()
	defer ss.subs.Done()
	start := time.Now()
	var resp smpp.PDU
	switch {
	case !ss.s.tps.allow(ss.bind.AccountID, time.Now()):
		resp.Status = smpp.StatusThrottled
	case p.ID == smpp.SubmitMulti:
		resp = ss.sendMulti(p)
	default:
		resp = ss.sendOne(p)
	}
	resp.ID, resp.Seq = p.ID.Response(), p.Seq
	_ = ss.c.Send(&resp)
	ss.s.m.submitted(p.ID, resp.Status, start)
}

// sendOne sends a submit_sm or data_sm (one destination), or holds it as a part of a
// concatenated message.
func (ss *session) sendOne(p *smpp.PDU) smpp.PDU {
	var resp smpp.PDU
	sub, part, st := readSubmit(p)
	var j joined
	if st == smpp.StatusOK && part {
		j, st = ss.join(p)
		sub = j.sub
	}
	switch {
	case st != smpp.StatusOK:
	case j.held: // answered on receipt with the message's id; the message is sent with its last part
		resp.MessageID = j.id.String()
	default:
		sub.AccountID = ss.bind.AccountID
		ctx, cancel := context.WithTimeout(context.Background(), ss.s.opts.SubmitTimeout)
		a, err := ss.s.deps.Sender.Submit(ctx, sub)
		cancel()
		resp.MessageID, st = a.MessageID, statusOf(err)
		if st == smpp.StatusSysErr {
			ss.s.log.Error("smpp server: submit", slog.String("account", sub.AccountID.String()), slog.Any("error", err))
		}
		if st != smpp.StatusOK {
			ss.unjoin(j)
		}
	}
	if st != smpp.StatusOK {
		resp.MessageID = ""
	}
	resp.Status = st
	return resp
}

// readSubmit decodes a submit_sm's text by its data_coding: the default alphabet (GSM 03.38,
// unpacked), IA5, Latin-1 or UCS-2, from short_message or message_payload. A part of a
// concatenated message (part true) is checked but not decoded: its message is, once joined.
func readSubmit(p *smpp.PDU) (sub Submit, part bool, st smpp.Status) {
	payload, hasPayload := p.TLV(smpp.TagMessagePayload)
	if hasPayload && len(p.ShortMessage) > 0 { // the spec allows one or the other
		return Submit{}, false, smpp.StatusInvMsgLen
	}
	q := *p
	if hasPayload {
		q.ShortMessage = payload
	}
	seg, err := smpp.ReadSegment(&q)
	if err != nil {
		return Submit{}, false, smpp.StatusInvESMClass
	}
	switch p.DataCoding {
	case smpp.CodingDefault, 0x01, 0x03, smpp.CodingUCS2:
	default:
		return Submit{}, false, StatusInvDCS
	}
	if seg.Concatenated && seg.Total > 1 {
		switch {
		case len(seg.Body) == 0:
			return Submit{}, false, smpp.StatusInvMsgLen
		case p.DataCoding == smpp.CodingDefault && slices.ContainsFunc(seg.Body, func(c byte) bool { return c >= 0x80 }),
			p.DataCoding == smpp.CodingUCS2 && len(seg.Body)%2 != 0:
			return Submit{}, false, StatusInvDCS // no text in its coding, whatever the other parts hold
		}
		return Submit{}, true, smpp.StatusOK
	}
	text, err := smpp.DecodeText(p.DataCoding, seg.Body)
	if err != nil {
		return Submit{}, false, StatusInvDCS
	}
	return Submit{To: p.Dest, From: p.Source, Text: text, Receipt: receiptOf(p.RegisteredDelivery)}, false, smpp.StatusOK
}

// receiptOf is the SMSC delivery receipt a submit_sm's or data_sm's registered_delivery asks
// for (SMPP 3.4 §5.2.17, bits 1-0): 0 none, 1 on the final outcome, 2 on failure only, and 3,
// reserved, taken as 1. Its other bits (SME acknowledgements, intermediate notifications) ask
// for what this server does not send.
func receiptOf(registeredDelivery byte) persistence.ReceiptMode {
	switch registeredDelivery & 0x03 {
	case 0:
		return persistence.ReceiptNone
	case 2:
		return persistence.ReceiptFailure
	}
	return persistence.ReceiptFinal
}

// statusOf is the submit_sm_resp status of a send's outcome.
func statusOf(err error) smpp.Status {
	switch {
	case err == nil:
		return smpp.StatusOK
	case errors.Is(err, ErrBadDestination):
		return smpp.StatusInvDstAdr
	case errors.Is(err, ErrBadSource):
		return smpp.StatusInvSrcAdr
	case errors.Is(err, ErrBadText):
		return smpp.StatusInvMsgLen
	case errors.Is(err, persistence.ErrInsufficientBalance):
		return smpp.StatusSubmitFail
	case errors.Is(err, actors.ErrAllSuppressed):
		return StatusSuppressed
	case errors.Is(err, actors.ErrBusy), errors.Is(err, context.DeadlineExceeded), errors.Is(err, persistence.ErrFenced):
		return smpp.StatusThrottled
	}
	return smpp.StatusSysErr
}
