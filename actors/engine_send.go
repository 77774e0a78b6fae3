// Sends and campaigns: what the front door asks of the engine to accept, schedule or cancel
// a job. Each method sends a command to the account's tenant and waits for its reply.

package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// SendRequest is one accepted-for-validation send.
type SendRequest struct {
	AccountID   uuid.UUID
	Recipients  []persistence.Recipient // normalised and unique
	Message     string
	Sender      *persistence.Sender // an explicit approved sender; nil: the default, else shared
	Source      string              // api | browser | smpp
	Idempotency *persistence.IdempotencyKey
	Reference   *string // the caller's correlation id (ValidReference); nil: none
	// Promotional: marketing (CONTRACT §15): the account's opt-out text is appended, and its
	// messages wait out the account's quiet hours.
	Promotional bool
	// MessageID, for a send to one recipient, is the id its message takes: a fresh UUIDv7
	// the caller made (the SMPP server answers a long message's first parts with it before the
	// message exists). Nil: one is made here.
	MessageID uuid.UUID
	// Receipt is the delivery receipt a send of source smpp owes its client (the PDU's
	// registered_delivery), written on its messages; other sources' owe none.
	Receipt persistence.ReceiptMode
}

// MaxReferenceLen is the longest reference a send or campaign may carry.
const MaxReferenceLen = 64

// ErrInvalidReference refuses a send or campaign whose reference ValidReference rejects; the
// front door checks first, so that it can name the field.
var ErrInvalidReference = errors.New("a reference must be 1-64 printable ASCII characters")

// ValidReference reports whether ref may be a send's or campaign's reference: 1 to
// MaxReferenceLen printable ASCII characters (space to tilde), so that it can go unchanged
// into a query string, a log line or a webhook header.
func ValidReference(ref string) bool {
	if len(ref) == 0 || len(ref) > MaxReferenceLen {
		return false
	}
	for i := range len(ref) {
		if ref[i] < ' ' || ref[i] > '~' {
			return false
		}
	}
	return true
}

func checkReference(ref *string) error {
	if ref != nil && !ValidReference(*ref) {
		return ErrInvalidReference
	}
	return nil
}

// SendResult describes the durably accepted job.
type SendResult struct {
	JobID      uuid.UUID
	Recipients int   // the ones it messages
	Suppressed int   // left out: on the account's suppression list
	Units      int64 // SMS parts billed: each recipient's text as sent, summed (CostCents = Units × price)
	CostCents  int64
	// MessageIDs are the messages written with the job, in recipient order, when it was
	// small enough to be written inline (nil otherwise): the id a one-recipient send
	// answers with over SMPP.
	MessageIDs []uuid.UUID
}

// Quote is what Send would store and debit for the same request at this moment, worked out by
// the account's tenant with the code that prices sends, reserving nothing.
//
// A send's text can differ by network: a sender registered on some networks only leaves the
// others to the shared sender, whose text carries the company prefix. MessageAsSent, Encoding,
// Characters and Parts describe one of the texts: the one with the most parts among the
// networks that have recipients (on a tie, the prefixed one); with no recipients, the one a
// Safaricom number would get. CostCents counts each recipient's own text.
type Quote struct {
	Recipients    int                        // the ones a send would message
	Suppressed    int                        // left out: on the account's suppression list
	ByNetwork     [carriers.NetworkSlots]int // recipients per network, indexed by carriers.Network
	MessageAsSent string
	Encoding      carriers.Encoding
	Characters    int // code points of MessageAsSent
	Parts         int // SMS parts of MessageAsSent, each billed
	CostCents     int64
	// AvailableCents is the balance Send would check the cost against: the wallet less what
	// sends waiting for their commit have reserved.
	AvailableCents int64
	Sufficient     bool // CostCents <= AvailableCents: Send would not refuse for want of money
	Suggestion     *QuoteSuggestion
}

// QuoteSuggestion is the same send with look-alike characters replaced (carriers.
// ReplaceLookalikes), offered when that makes every text the send would go out with GSM-7.
// Its text and parts describe the text Quote describes, and its cost is what Send would debit
// for Message.
type QuoteSuggestion struct {
	Replacements  []carriers.Replacement // made in the request's message, in first-seen order
	Message       string                 // the request's message with the replacements: what to send instead
	MessageAsSent string                 // as it would go out (the prefix included where it applies)
	Encoding      carriers.Encoding      // carriers.GSM7
	Parts         int
	CostCents     int64
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
	Reference   *string // the caller's correlation id (ValidReference); nil: none
	Promotional bool    // as for SendRequest
	Source      string  // api | browser, as the call that created it was made (CONTRACT §1; "": api)
}

// Send prices the send, reserves and debits its cost and records the job durably; it returns
// only once all of that is committed.
func (e *Engine) Send(ctx context.Context, req SendRequest) (SendResult, error) {
	if !e.accepting.Load() {
		return SendResult{}, ErrStopping
	}
	if err := checkReference(req.Reference); err != nil {
		return SendResult{}, err
	}
	defer e.acceptingBulk(len(req.Recipients))()
	res, err := e.tenantRequest(ctx, req.AccountID, &sendCmd{req: req, at: time.Now()})
	if err != nil {
		return SendResult{}, err
	}
	return *res.(*SendResult), nil
}

// Quote says what Send would store and debit for req now (see Quote), writing and reserving
// nothing. It asks the account's tenant, which sees the company name, default sender, tier and
// balance that its next send would use, and which answers from memory once it is loaded.
// req.Recipients are the valid, unique recipients; req.Sender is resolved as for Send.
func (e *Engine) Quote(ctx context.Context, req SendRequest) (Quote, error) {
	if !e.accepting.Load() {
		return Quote{}, ErrStopping
	}
	res, err := e.tenantRequest(ctx, req.AccountID, &quoteCmd{req: req})
	if err != nil {
		return Quote{}, err
	}
	return *res.(*Quote), nil
}

// CreateCampaign prices a campaign exactly (every contact's text rendered, with the shared
// sender's prefix where it applies), reserves and debits its cost and records the campaign and
// its job durably, like Send; a campaign without a time is dispatched at once, a scheduled
// one when StartScheduled hands it over.
func (e *Engine) CreateCampaign(ctx context.Context, req CampaignRequest) (SendResult, error) {
	if !e.accepting.Load() {
		return SendResult{}, ErrStopping
	}
	if err := checkReference(req.Reference); err != nil {
		return SendResult{}, err
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
		e.StartJob(d.AccountID, d.JobID)
	}
}

// StartJob hands a job the store opened outside the engine (a keyword's confirmation, written
// with the inbound message) to its account's tenant to dispatch. A job it never reaches (the
// node stopped first) is resumed with the account's other open jobs when the node starts.
func (e *Engine) StartJob(accountID, jobID uuid.UUID) {
	e.root.Send(e.supervisor, &toTenant{account: accountID, msg: &startJob{id: jobID}}) // forwarded if not ours
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
