// Statuses and kinds: the values the schema's CHECK constraints allow, as named constants.
// TestStatusesMatchTheSchema fails when a list here and its CHECK constraint disagree.

package persistence

// MessageStatus is where a message is: queued → sent → delivered | failed (a queued message
// may also fail before it is sent).
type MessageStatus string

const (
	MessageQueued    MessageStatus = "queued"
	MessageSent      MessageStatus = "sent"
	MessageDelivered MessageStatus = "delivered"
	MessageFailed    MessageStatus = "failed"
)

// MessageStatuses are every message status.
func MessageStatuses() []MessageStatus {
	return []MessageStatus{MessageQueued, MessageSent, MessageDelivered, MessageFailed}
}

// JobStatus is where a send job is: queued (accepted) → sending (expanded) → completed
// (every message final).
type JobStatus string

const (
	JobQueued    JobStatus = "queued"
	JobSending   JobStatus = "sending"
	JobCompleted JobStatus = "completed"
)

// JobStatuses are every job status.
func JobStatuses() []JobStatus { return []JobStatus{JobQueued, JobSending, JobCompleted} }

// AccountStatus says whether an account may use the API.
type AccountStatus string

const (
	StatusActive    AccountStatus = "active"
	StatusSuspended AccountStatus = "suspended"
)

// AccountStatuses are every account status.
func AccountStatuses() []AccountStatus { return []AccountStatus{StatusActive, StatusSuspended} }

// TransactionType is the kind of a ledger entry.
type TransactionType string

const (
	TxTopup       TransactionType = "topup"         // money in: payments, operator credits, bonuses
	TxDebit       TransactionType = "debit"         // a send or campaign, charged upfront
	TxRefund      TransactionType = "refund"        // failed messages given back
	TxSenderIDFee TransactionType = "sender_id_fee" // informational: a sender ID's fee paid at checkout
)

// TransactionTypes are every ledger entry kind.
func TransactionTypes() []TransactionType {
	return []TransactionType{TxTopup, TxDebit, TxRefund, TxSenderIDFee}
}

// PaymentStatus is where a checkout is: pending → paid | abandoned | failed.
type PaymentStatus string

const (
	PaymentPending   PaymentStatus = "pending"
	PaymentAbandoned PaymentStatus = "abandoned"
	PaymentPaid      PaymentStatus = "paid"
	PaymentFailed    PaymentStatus = "failed"
)

// PaymentStatuses are every payment status.
func PaymentStatuses() []PaymentStatus {
	return []PaymentStatus{PaymentPending, PaymentAbandoned, PaymentPaid, PaymentFailed}
}

// PaymentPurpose is what a confirmed payment pays for.
type PaymentPurpose string

const (
	PurposeTopup     PaymentPurpose = "wallet_topup"  // credits the wallet
	PurposeSenderFee PaymentPurpose = "sender_id_fee" // pays a sender ID's registration fee
)

// PaymentPurposes are every payment purpose.
func PaymentPurposes() []PaymentPurpose { return []PaymentPurpose{PurposeTopup, PurposeSenderFee} }

// IdempotencyState is where an Idempotency-Key claim is: in_flight (its request is running,
// or its outcome is unknown) → done (its response is stored).
type IdempotencyState string

const (
	KeyInFlight IdempotencyState = "in_flight"
	KeyDone     IdempotencyState = "done"
)

// IdempotencyStates are every claim state.
func IdempotencyStates() []IdempotencyState { return []IdempotencyState{KeyInFlight, KeyDone} }

// SenderStatus is where a sender ID application is (see senderTransitions).
type SenderStatus string

const (
	SenderApplied            SenderStatus = "applied"
	SenderDocumentsSubmitted SenderStatus = "documents_submitted"
	SenderPaymentPending     SenderStatus = "payment_pending"
	SenderApproved           SenderStatus = "approved"
	SenderRejected           SenderStatus = "rejected"
	SenderCancelled          SenderStatus = "cancelled"
)

// SenderStatuses are every sender ID status.
func SenderStatuses() []SenderStatus {
	return []SenderStatus{SenderApplied, SenderDocumentsSubmitted, SenderPaymentPending, SenderApproved, SenderRejected, SenderCancelled}
}

// DocumentKind is one of the four documents a sender ID application needs.
type DocumentKind string

const (
	DocBusinessCert  DocumentKind = "business_cert"
	DocKRAPin        DocumentKind = "kra_pin"
	DocAuthLetter    DocumentKind = "auth_letter"
	DocRequestLetter DocumentKind = "request_letter"
)

// DocumentKinds are the four documents, in the order forms list them.
func DocumentKinds() []DocumentKind {
	return []DocumentKind{DocBusinessCert, DocKRAPin, DocAuthLetter, DocRequestLetter}
}

// SenderNetworks are the networks a sender ID may be registered on ("all" is every one).
func SenderNetworks() []string { return []string{"safaricom", "airtel", "telkom", "all"} }

// CampaignStatus is where a campaign is: queued (now) or scheduled (later) → sending →
// completed (something delivered) | failed (nothing delivered); cancelled from any but the last.
type CampaignStatus string

const (
	CampaignQueued    CampaignStatus = "queued"
	CampaignScheduled CampaignStatus = "scheduled"
	CampaignSending   CampaignStatus = "sending"
	CampaignCompleted CampaignStatus = "completed"
	CampaignFailed    CampaignStatus = "failed"
	CampaignCancelled CampaignStatus = "cancelled"
)

// CampaignStatuses are every campaign status.
func CampaignStatuses() []CampaignStatus {
	return []CampaignStatus{CampaignQueued, CampaignScheduled, CampaignSending, CampaignCompleted, CampaignFailed, CampaignCancelled}
}

// Sources are where a job came from: the API, the dashboard (a send or a campaign, by the
// call that made it), a keyword's confirmation (SourceKeyword), or a submit_sm over the SMPP
// server.
func Sources() []string { return []string{"api", "browser", SourceKeyword, SourceSMPP} }

// SourceSMPP is the source of a job sent over the SMPP server: its messages owe the client the
// delivery receipt it asked for (NewJob.Receipt), if any (smpp_receipts).
const SourceSMPP = "smpp"

// SourceKeyword is the source of the free confirmation a keyword is answered with.
const SourceKeyword = "keyword"
