// Accounts: money and settings changes the front door hands the engine, through each account's
// tenant actor so its view of the balance stays exact.

package actors

import (
	"context"
	"errors"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

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

// SyncWallet hands the account's wallet as the store has it now to its tenant actor, wherever
// it runs: for a caller that finds a change committed which the tenant may not have seen (a
// payment whose confirmation failed at its commit, retried and found paid).
func (e *Engine) SyncWallet(ctx context.Context, accountID uuid.UUID) error {
	w, err := e.store.WalletNow(ctx, accountID)
	if err != nil {
		return err
	}
	e.WalletChanged(w)
	return nil
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
	if !e.owns(accountID) {
		_, err := e.tenantRequest(ctx, accountID, &accountChangedCmd{})
		return err
	}
	return e.accountChangedHere(ctx, accountID)
}

func (e *Engine) accountChangedHere(ctx context.Context, accountID uuid.UUID) error {
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

// WalletChanged hands a wallet snapshot committed outside the tenant (a refund, a welcome
// bonus) to the account's tenant actor, if it is alive, on whichever node owns the account;
// otherwise it will load it when it starts.
func (e *Engine) WalletChanged(w persistence.WalletSnapshot) {
	if !e.owns(w.AccountID) {
		e.remoteTell(w.AccountID, &walletChanged{wallet: w})
		return
	}
	e.walletChangedHere(w)
}

func (e *Engine) walletChangedHere(w persistence.WalletSnapshot) {
	if pid, ok := e.tenants.Load(w.AccountID); ok {
		e.root.Send(pid.(*actor.PID), &walletChanged{wallet: w})
	}
}
