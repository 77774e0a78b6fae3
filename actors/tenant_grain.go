// The tenant grain: an account's identity in the cluster, on the node that owns the account.
// Other nodes' front doors send it the account's commands as protobuf; it hands each to this
// node's tenant actor and answers in protobuf. The tenant actor itself stays a child of this
// node's supervisor, which starts one only for an account this node owns.

package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tuma-sms/tuma/actors/wire"
	"github.com/tuma-sms/tuma/persistence"
)

type tenantGrain struct{ e *Engine }

// Commands that reach a tenant only through the cluster's routing: on a single node they are
// engine methods acting on the live tenant directly.
type (
	accountChangedCmd     struct{}
	suppressionChangedCmd struct {
		nsn        uint32
		suppressed bool
	}
)

func (g *tenantGrain) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		// An account nobody sends for lets its grain go; the next command activates another.
		ctx.SetReceiveTimeout(g.e.opts.TenantIdle)
	case *actor.ReceiveTimeout:
		ctx.Stop(ctx.Self())
	}
	msg, ok := ctx.Message().(proto.Message)
	if !ok {
		return // lifecycle messages, cluster.ClusterInit: the grain holds no state
	}
	e := g.e
	e.m.crossNode.WithLabelValues("received").Inc()
	id, cmd, err := commandOf(msg)
	sender := ctx.Sender()
	if sender == nil { // a tell
		if err == nil {
			e.localTell(id, cmd)
		}
		return
	}
	if err != nil {
		ctx.Respond(wireReply(nil, err))
		return
	}
	e.goIO(e.opts.CommandTimeout, func(c context.Context) {
		res, err := e.localCommand(c, id, cmd)
		e.root.Send(sender, wireReply(res, err))
	})
}

// localCommand runs a command that came from another node on this node's tenant.
func (e *Engine) localCommand(ctx context.Context, id uuid.UUID, cmd any) (any, error) {
	if !e.accepting.Load() && !e.startedAccepting(ctx) {
		return nil, ErrStopping
	}
	switch c := cmd.(type) {
	case *accountChangedCmd:
		return &struct{}{}, e.accountChangedHere(ctx, id)
	case *suppressionChangedCmd:
		return &struct{}{}, e.suppressionChangedHere(ctx, id, c.nsn, c.suppressed)
	case *sendCmd:
		defer e.acceptingBulk(len(c.req.Recipients))()
	}
	return e.localTenantRequest(ctx, id, cmd)
}

// startedAccepting waits for an engine that joined the cluster and is still starting (the
// others route its accounts to it from the moment it is a member) to take commands; false
// for one that stopped taking them.
func (e *Engine) startedAccepting(ctx context.Context) bool {
	select {
	case <-e.ready:
	case <-ctx.Done():
		return false
	}
	for range 100 { // Start sets accepting just after ready
		if e.accepting.Load() {
			return true
		}
		if e.life.Err() != nil {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// localTell delivers a command that needs no answer to this node's tenant.
func (e *Engine) localTell(id uuid.UUID, cmd any) {
	switch c := cmd.(type) {
	case *walletChanged:
		e.walletChangedHere(c.wallet)
	case *startJob:
		e.root.Send(e.supervisor, &toTenant{account: id, msg: c})
	}
}

// wireCommand is the protobuf form of a command for account id.
func wireCommand(id uuid.UUID, msg any) (proto.Message, error) {
	acct := idBytes(id)
	switch m := msg.(type) {
	case *sendCmd:
		return wireSend(m.req, false), nil
	case *quoteCmd:
		return wireSend(m.req, true), nil
	case *campaignCmd:
		return wireCampaign(m.req), nil
	case *cancelCmd:
		return &wire.CancelCampaign{AccountId: acct, CampaignId: idBytes(m.campaign)}, nil
	case *creditCmd:
		return wireCredit(m.c), nil
	case *paymentCmd:
		return &wire.ConfirmPayment{AccountId: acct, Reference: m.c.Reference, PaidAtUnixNano: m.c.PaidAt.UnixNano()}, nil
	case *pricingCmd:
		return &wire.SetPricing{AccountId: acct, Tier: m.tier, Internal: m.internal}, nil
	case *accountChangedCmd:
		return &wire.AccountChanged{AccountId: acct}, nil
	case *suppressionChangedCmd:
		return &wire.SuppressionChanged{AccountId: acct, Nsn: m.nsn, Suppressed: m.suppressed}, nil
	case *walletChanged:
		return &wire.WalletChanged{Wallet: wireWallet(&m.wallet)}, nil
	case *startJob:
		return &wire.StartJob{AccountId: acct, JobId: idBytes(m.id)}, nil
	}
	return nil, fmt.Errorf("no wire form for %T", msg)
}

// commandOf decodes a command from another node: its account and the command as this node's
// tenant takes it.
func commandOf(msg proto.Message) (uuid.UUID, any, error) {
	var acct []byte
	var cmd any
	var err error
	now := time.Now()
	switch m := msg.(type) {
	case *wire.SendRequest:
		var req SendRequest
		req, err = sendOf(m)
		acct, cmd = m.AccountId, &sendCmd{req: req, at: now}
		if m.Quote {
			cmd = &quoteCmd{req: req}
		}
	case *wire.CampaignRequest:
		var req CampaignRequest
		req, err = campaignOf(m)
		acct, cmd = m.AccountId, &campaignCmd{req: req, at: now}
	case *wire.CancelCampaign:
		var c uuid.UUID
		c, err = idOf(m.CampaignId)
		acct, cmd = m.AccountId, &cancelCmd{campaign: c}
	case *wire.Credit:
		var c persistence.NewCredit
		c, err = creditOf(m)
		acct, cmd = m.AccountId, &creditCmd{c: c}
	case *wire.ConfirmPayment:
		acct, cmd = m.AccountId, &paymentCmd{c: persistence.PaymentConfirmation{Reference: m.Reference,
			PaidAt: time.Unix(0, m.PaidAtUnixNano).UTC(), Notice: topupNotice}}
	case *wire.SetPricing:
		acct, cmd = m.AccountId, &pricingCmd{tier: m.Tier, internal: m.Internal}
	case *wire.AccountChanged:
		acct, cmd = m.AccountId, &accountChangedCmd{}
	case *wire.SuppressionChanged:
		acct, cmd = m.AccountId, &suppressionChangedCmd{nsn: m.Nsn, suppressed: m.Suppressed}
	case *wire.WalletChanged:
		var w *persistence.WalletSnapshot
		if w, err = walletOf(m.Wallet); err == nil && w == nil {
			err = fmt.Errorf("%w: no wallet", errBadWire)
		}
		if err == nil {
			acct, cmd = m.Wallet.AccountId, &walletChanged{wallet: *w}
		}
	case *wire.StartJob:
		var j uuid.UUID
		j, err = idOf(m.JobId)
		acct, cmd = m.AccountId, &startJob{id: j}
	default:
		return uuid.Nil, nil, fmt.Errorf("%w: %T", errBadWire, msg)
	}
	if err != nil {
		return uuid.Nil, nil, err
	}
	id, err := idOf(acct)
	return id, cmd, err
}

// wireReply is the protobuf answer to a command.
func wireReply(res any, err error) proto.Message {
	if err != nil {
		return wireError(err)
	}
	switch r := res.(type) {
	case *SendResult:
		return wireSendResult(r)
	case *Quote:
		return wireQuote(r)
	case *persistence.WalletSnapshot:
		return wireWallet(r)
	case *persistence.ConfirmedPayment:
		return &wire.ConfirmedPayment{Payment: wirePayment(r.Payment), Applied: r.Applied, Wallet: wireWallet(r.Wallet)}
	}
	return &wire.Done{}
}

// wireReplyOf decodes another node's answer.
func wireReplyOf(res any) (any, error) {
	switch r := res.(type) {
	case *wire.Error:
		return nil, errorOf(r)
	case *wire.SendResult:
		return sendResultOf(r)
	case *wire.Quote:
		return quoteOf(r)
	case *wire.Wallet:
		w, err := walletOf(r)
		return w, err
	case *wire.ConfirmedPayment:
		p, err := paymentOf(r.Payment)
		if err != nil {
			return nil, err
		}
		w, err := walletOf(r.Wallet)
		return &persistence.ConfirmedPayment{Payment: p, Applied: r.Applied, Wallet: w}, err
	case *wire.Done:
		return &struct{}{}, nil
	}
	return nil, fmt.Errorf("%w: an answer of type %T", errBadWire, res)
}

// wireErrors are the errors callers tell apart, by code (the index; 0 is none of them). Only
// append: the codes are the wire format.
var wireErrors = []error{
	nil, ErrStopping, ErrBusy, persistence.ErrFenced, ErrAllSuppressed, ErrInvalidReference, persistence.ErrNotFound,
	persistence.ErrInsufficientBalance, persistence.ErrIdempotencyLost, persistence.ErrIdempotencyUsed,
	persistence.ErrIdempotencyBusy, persistence.ErrInvalidState, persistence.ErrPaymentClosed, errMoved, errBadWire,
	persistence.ErrDuplicateMessage,
}

// insufficientCode is an InsufficientBalanceError, with its figures.
const insufficientCode = 100

func wireError(err error) *wire.Error {
	var ib *InsufficientBalanceError
	if errors.As(err, &ib) {
		return &wire.Error{Code: insufficientCode, Message: err.Error(), AvailableCents: ib.AvailableCents, CostCents: ib.CostCents}
	}
	if persistence.Unreachable(err) {
		err = fmt.Errorf("%w: %v", ErrBusy, err) // an unknown outcome, as a timeout
	}
	for i, known := range wireErrors[1:] {
		if errors.Is(err, known) {
			return &wire.Error{Code: int32(i + 1), Message: err.Error()}
		}
	}
	return &wire.Error{Message: err.Error()}
}

// remoteError is an error another node answered: its text, and what it is.
type remoteError struct {
	msg  string
	kind error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.kind }

func errorOf(w *wire.Error) error {
	switch {
	case w.Code == insufficientCode:
		return &InsufficientBalanceError{AvailableCents: w.AvailableCents, CostCents: w.CostCents}
	case w.Code > 0 && int(w.Code) < len(wireErrors):
		return &remoteError{msg: w.Message, kind: wireErrors[w.Code]}
	}
	return &remoteError{msg: "another node: " + w.Message}
}
