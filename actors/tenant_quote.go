// A tenant's quotes: what a send would cost and look like now, priced by the code that prices
// sends (priceSend), from the tenant's state in memory.

package actors

import (
	"unicode/utf8"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tuma-sms/tuma/carriers"
)

type quoteCmd struct{ req SendRequest }

// quote answers with what send would price for the same request, reserving nothing.
func (t *tenantActor) quote(ctx actor.Context, cmd *quoteCmd, reply *actor.PID) {
	p := t.priceSend(cmd.req)
	v := p.vars[quoted(p)]
	q := &Quote{
		Recipients: len(p.to), Suppressed: p.job.Suppressed, ByNetwork: p.job.NetworkCounts,
		MessageAsSent: v.text, Encoding: v.encoding, Characters: utf8.RuneCountInString(v.text), Parts: v.parts,
		CostCents: p.job.CostCents, AvailableCents: t.available(),
	}
	q.Sufficient = q.CostCents <= q.AvailableCents
	if v.encoding == carriers.UCS2 {
		q.Suggestion = t.suggest(cmd.req)
	}
	ctx.Send(reply, q)
}

// suggest prices the request with its look-alike characters replaced, when that makes it
// GSM-7 on every network it goes to; nil otherwise.
func (t *tenantActor) suggest(req SendRequest) *QuoteSuggestion {
	l := carriers.ReplaceLookalikes(req.Message)
	if l == nil {
		return nil
	}
	req.Message = l.Text
	p := t.priceSend(req)
	described := quoted(p)
	for _, n := range carriers.Networks() {
		if (p.job.NetworkCounts[n] > 0 || n == described) && p.vars[n].encoding != carriers.GSM7 {
			return nil // the prefix (the company name) needs UCS-2 whatever the message
		}
	}
	v := p.vars[described]
	return &QuoteSuggestion{Replacements: l.Replacements, Message: l.Text, MessageAsSent: v.text, Encoding: v.encoding,
		Parts: v.parts, CostCents: p.job.CostCents}
}

// quoted is the network whose text a quote describes: the most parts among the networks that
// have recipients, the prefixed one on a tie; Safaricom when none has any.
func quoted(p pricedSend) carriers.Network {
	best := carriers.NetworkUnknown
	for _, n := range carriers.Networks() {
		if p.job.NetworkCounts[n] == 0 {
			continue
		}
		v := p.vars[n]
		if best == carriers.NetworkUnknown || v.parts > p.vars[best].parts ||
			v.parts == p.vars[best].parts && v.prefixed && !p.vars[best].prefixed {
			best = n
		}
	}
	if best == carriers.NetworkUnknown {
		return carriers.Safaricom
	}
	return best
}
