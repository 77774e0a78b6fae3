// Commands: what the front door asks of the engine. Each sends a command to an actor and
// waits for its reply with a deadline; receipts pushed by networks are fed in the same way.

package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// InsufficientBalanceError says a send costs more than the spendable balance.
type InsufficientBalanceError struct {
	AvailableCents, CostCents int64
}

func (e *InsufficientBalanceError) Error() string {
	return fmt.Sprintf("balance %s KES cannot cover %s KES", centsString(e.AvailableCents), centsString(e.CostCents))
}

// Is makes errors.Is(err, persistence.ErrInsufficientBalance) hold.
func (e *InsufficientBalanceError) Is(target error) bool {
	return target == persistence.ErrInsufficientBalance
}

// SendRequest is one accepted-for-validation send.
type SendRequest struct {
	AccountID   uuid.UUID
	Recipients  []persistence.Recipient // normalised and unique
	Message     string
	Sender      *persistence.Sender // an explicit approved sender; nil: the default, else shared
	Source      string              // api | browser
	Idempotency *persistence.IdempotencyKey
}

// SendResult describes the durably accepted job.
type SendResult struct {
	JobID      uuid.UUID
	Recipients int
	CostCents  int64
}

// Send prices the send, reserves and debits its cost and records the job durably; it returns
// only once all of that is committed.
func (e *Engine) Send(ctx context.Context, req SendRequest) (SendResult, error) {
	if !e.accepting.Load() {
		return SendResult{}, ErrStopping
	}
	defer e.acceptingBulk(len(req.Recipients))()
	res, err := e.tenantRequest(ctx, req.AccountID, &sendCmd{req: req, at: time.Now()})
	if err != nil {
		return SendResult{}, err
	}
	return *res.(*SendResult), nil
}

// Credit adds money to an account's wallet through its tenant actor, so the actor's view of
// the balance stays exact.
func (e *Engine) Credit(ctx context.Context, c persistence.NewCredit) (persistence.WalletSnapshot, error) {
	if !e.accepting.Load() {
		return persistence.WalletSnapshot{}, ErrStopping
	}
	res, err := e.tenantRequest(ctx, c.AccountID, &creditCmd{c: c})
	if err != nil {
		return persistence.WalletSnapshot{}, err
	}
	return *res.(*persistence.WalletSnapshot), nil
}

// ConfirmPayment applies a payment the provider has confirmed, through the account's tenant
// actor so its view of the balance stays exact. Applying is idempotent: the store moves a
// payment to paid once, and only that confirmation credits (Applied).
func (e *Engine) ConfirmPayment(ctx context.Context, accountID uuid.UUID, c persistence.PaymentConfirmation) (persistence.ConfirmedPayment, error) {
	if !e.accepting.Load() {
		return persistence.ConfirmedPayment{}, ErrStopping
	}
	if c.Notice == nil {
		c.Notice = topupNotice
	}
	res, err := e.tenantRequest(ctx, accountID, &paymentCmd{c: c})
	if err != nil {
		return persistence.ConfirmedPayment{}, err
	}
	return *res.(*persistence.ConfirmedPayment), nil
}

// SetPricing pins (or unpins, tier nil) an account's tier and sets it internal or not.
func (e *Engine) SetPricing(ctx context.Context, accountID uuid.UUID, tier *string, internal bool) error {
	_, err := e.tenantRequest(ctx, accountID, &pricingCmd{tier: tier, internal: internal})
	return err
}

// AccountChanged makes a live tenant actor reload its account (company name, default sender)
// after a change committed elsewhere, and returns once it has: the caller's next send is priced
// and sent with the change. A tenant not alive will load the change when it starts.
func (e *Engine) AccountChanged(ctx context.Context, accountID uuid.UUID) error {
	pid, ok := e.tenants.Load(accountID)
	if !ok {
		return nil
	}
	_, err := e.request(ctx, pid.(*actor.PID), &reloadTenant{})
	if errors.Is(err, actor.ErrDeadLetter) {
		return nil // it stopped meanwhile; its successor loads afresh
	}
	return err
}

// WalletChanged hands a wallet snapshot committed outside the engine (a welcome bonus) to the
// account's tenant actor, if it is alive; otherwise it will load it when it starts.
func (e *Engine) WalletChanged(w persistence.WalletSnapshot) {
	if pid, ok := e.tenants.Load(w.AccountID); ok {
		e.root.Send(pid.(*actor.PID), &walletChanged{wallet: w})
	}
}

// LiveStatus asks a network now about a message it accepted.
func (e *Engine) LiveStatus(ctx context.Context, network carriers.Network, providerID string) (CarrierStatus, error) {
	if network < carriers.Safaricom || network > carriers.Telkom {
		return CarrierStatus{}, fmt.Errorf("no link for network %d", network)
	}
	res, err := e.request(ctx, e.links[network], &queryCmd{providerID: providerID})
	if err != nil {
		return CarrierStatus{}, err
	}
	return *res.(*CarrierStatus), nil
}

// Sync records a carrier status for a message now (from a live check) and returns once it is
// durable. A non-final status changes nothing.
func (e *Engine) Sync(ctx context.Context, network carriers.Network, providerID string, st CarrierStatus) error {
	if !st.Final {
		return nil
	}
	_, err := e.request(ctx, e.receiptsFor(network, providerID), &syncCmd{receipt: receiptFrom(network, providerID, st)})
	return err
}

// LateAnswer records the answer to a submit that came after the driver stopped waiting for it
// (an SMPP submit_sm_resp past its response timeout). The message is already sent with an
// unknown outcome; now it has its network id, so its receipt correlates.
func (e *Engine) LateAnswer(network carriers.Network, account, messageID uuid.UUID, providerID string) {
	if providerID == "" {
		return
	}
	e.root.Send(e.receiptsFor(network, providerID), &submittedEv{s: persistence.Submitted{
		AccountID: account, MessageID: messageID, ProviderID: providerID, Network: network, At: time.Now(), Late: true}})
}

// Receipt feeds a delivery receipt pushed by a network into the engine.
func (e *Engine) Receipt(network carriers.Network, providerID string, st CarrierStatus) {
	if st.Final {
		e.root.Send(e.receiptsFor(network, providerID), &receiptEv{r: receiptFrom(network, providerID, st)})
	}
}

func receiptFrom(n carriers.Network, providerID string, st CarrierStatus) persistence.Receipt {
	at := st.At
	if at.IsZero() {
		at = time.Now()
	}
	return persistence.Receipt{ProviderID: providerID, Network: n, Delivered: st.Delivered,
		ProviderStatus: st.ProviderStatus, Error: st.Error, At: at}
}
