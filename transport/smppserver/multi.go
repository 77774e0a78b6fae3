package smppserver

import (
	"context"
	"log/slog"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers/smpp"
)

// More statuses this server answers (README.md in this folder).
const (
	// StatusInvNumDests is ESME_RINVNUMDESTS: a submit_multi without destinations.
	StatusInvNumDests smpp.Status = 0x33
	// StatusInvDestFlag is ESME_RINVDESTFLAG: a distribution list, which Tuma does not keep,
	// among a submit_multi's destinations.
	StatusInvDestFlag smpp.Status = 0x40
)

// Multi is one submit_multi, decoded: a send of several recipients. It carries no receipt
// mode: a submit_multi's messages get no delivery receipts, whatever its registered_delivery
// (the Sender sends it as an API send). Its resp names the job, one id for every destination,
// and a receipt names its message: a client could match it to nothing.
type Multi struct {
	AccountID uuid.UUID
	To        []string // the SME destinations as the ESME wrote them
	From      string
	Text      string
}

// MultiAccepted is a submit_multi the send took for some of its destinations.
type MultiAccepted struct {
	MessageID string
	// Refused are the indexes in Multi.To of the destinations refused as not reachable
	// numbers; the others were sent.
	Refused []int
}

// sendMulti sends a submit_multi's SME destinations as one send; distribution lists and the
// numbers the send refuses are listed in unsuccess_smes.
func (ss *session) sendMulti(p *smpp.PDU) smpp.PDU {
	var resp smpp.PDU
	one := *p
	one.Dests = nil
	sub, part, st := readSubmit(&one)
	if st == smpp.StatusOK && part { // joining parts of a submit_multi is not built
		st = smpp.StatusInvESMClass
	}
	if st == smpp.StatusOK && len(p.Dests) == 0 {
		st = StatusInvNumDests
	}
	if st != smpp.StatusOK {
		resp.Status = st
		return resp
	}
	m := Multi{AccountID: ss.bind.AccountID, From: sub.From, Text: sub.Text}
	var sme []smpp.Dest // the destinations in m.To, in order
	for _, d := range p.Dests {
		if d.Flag != smpp.DestSME {
			resp.Unsuccess = append(resp.Unsuccess, smpp.Unsuccess{Addr: d.Addr, Status: StatusInvDestFlag})
			continue
		}
		m.To = append(m.To, d.Addr)
		sme = append(sme, d)
	}
	if len(m.To) == 0 {
		resp.Status = StatusInvDestFlag
		return resp
	}
	ctx, cancel := context.WithTimeout(context.Background(), ss.s.opts.SubmitTimeout)
	a, err := ss.s.deps.Sender.SubmitMulti(ctx, m)
	cancel()
	for _, i := range a.Refused {
		if i >= 0 && i < len(sme) {
			d := sme[i]
			resp.Unsuccess = append(resp.Unsuccess, smpp.Unsuccess{TON: d.TON, NPI: d.NPI, Addr: d.Addr, Status: smpp.StatusInvDstAdr})
		}
	}
	resp.Status = statusOf(err)
	if resp.Status == smpp.StatusSysErr {
		ss.s.log.Error("smpp server: submit_multi", slog.String("account", m.AccountID.String()), slog.Any("error", err))
	}
	if resp.Status == smpp.StatusOK {
		resp.MessageID = a.MessageID
	} else if resp.Status != smpp.StatusInvDstAdr {
		resp.Unsuccess = nil // the whole submit failed, for every destination alike
	}
	return resp
}
