// Sends and campaigns: what the front door asks of the engine to accept, schedule or cancel
// a job. Each method sends a command to the account's tenant and waits for its reply.

package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

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

// CampaignRequest is a campaign ready to price: its audience resolved to networks.
type CampaignRequest struct {
	AccountID   uuid.UUID
	Campaign    persistence.NewCampaign
	Audience    []persistence.Member // the group's active contacts at creation
	Sender      *persistence.Sender  // an explicit approved sender; nil: the default, else shared
	Idempotency *persistence.IdempotencyKey
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

// CreateCampaign prices a campaign exactly (every contact's text rendered, with the shared
// sender's prefix where it applies), reserves and debits its cost and records the campaign and
// its job durably, like Send; a campaign without a time is dispatched at once, a scheduled
// one when StartScheduled hands it over.
func (e *Engine) CreateCampaign(ctx context.Context, req CampaignRequest) (SendResult, error) {
	if !e.accepting.Load() {
		return SendResult{}, ErrStopping
	}
	res, err := e.tenantRequest(ctx, req.AccountID, &campaignCmd{req: req, at: time.Now()})
	if err != nil {
		return SendResult{}, err
	}
	return *res.(*SendResult), nil
}

// StartScheduled hands campaigns whose time came (their jobs now open) to their tenants.
func (e *Engine) StartScheduled(due []persistence.DueCampaign) {
	for _, d := range due {
		e.root.Send(e.supervisor, &toTenant{account: d.AccountID, msg: &startJob{id: d.JobID}})
	}
}

// CancelCampaign stops a queued, scheduled or sending campaign. It answers once the campaign
// is cancelled durably; what was not sent is refunded as soon as no link holds any of it
// (at once for a campaign that had not started).
func (e *Engine) CancelCampaign(ctx context.Context, accountID, campaignID uuid.UUID) error {
	if !e.accepting.Load() {
		return ErrStopping
	}
	_, err := e.tenantRequest(ctx, accountID, &cancelCmd{campaign: campaignID})
	return err
}
