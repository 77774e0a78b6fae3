// Carriers: what a network driver gives the links (Carrier, Looker), and what networks tell the
// engine back (pushed receipts, late answers, a live status).

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

// Carrier is what a link needs from a network driver (the simulator, an SMPP bind).
type Carrier interface {
	// Submit hands one message to the network and returns its id there. It fails with
	// ErrThrottled, ErrTemporary or ErrRejected when the network said so, with
	// ErrUnknownOutcome when the answer never came (the network may have taken it), or with
	// another error (treated as temporary). A driver answers within its own response timeout
	// (an SMPP session's response timer); ctx only ends it early when the engine stops.
	// Outgoing.MessageID is our reference for the message, passed to the network.
	Submit(ctx context.Context, m Outgoing) (providerID string, err error)
	// Query asks the network for a message's status now (ErrUnknownMessage if it has none).
	Query(ctx context.Context, providerID string) (CarrierStatus, error)
}

// Looker is a Carrier that can say whether it took a message, by our reference: after a lost
// answer or a crash, a link asks instead of submitting again. Drivers without it (plain SMPP)
// get the message again, and the resend is counted.
type Looker interface {
	// Lookup returns the network's id for the message we submitted as messageID, or
	// ErrUnknownMessage if the network never took it.
	Lookup(ctx context.Context, messageID uuid.UUID) (providerID string, err error)
}

// Outgoing is a message as a link submits it.
type Outgoing struct {
	AccountID   uuid.UUID // whose message: a late answer is recorded with it (Engine.LateAnswer)
	MessageID   uuid.UUID
	Sender      string
	Destination string // E.164
	Text        string
	Parts       int
	Encoding    carriers.Encoding
}

// CarrierStatus is a network's word on a message.
type CarrierStatus struct {
	Final          bool
	Delivered      bool
	ProviderStatus string // DELIVRD, UNDELIV, EXPIRED, REJECTD, ENROUTE …
	Error          string
	At             time.Time
}

// Errors a Carrier returns; drivers map their own onto these.
var (
	ErrThrottled      = errors.New("carrier asks to slow down")
	ErrTemporary      = errors.New("carrier temporarily failed")
	ErrRejected       = errors.New("carrier rejected the message")
	ErrUnknownMessage = errors.New("carrier does not know the message")
	ErrUnknownOutcome = errors.New("carrier's answer to a submit never came")
	// ErrUnavailable means the network could not be reached at all: nothing was submitted, so
	// the message waits (the breaker opens) however long the outage, and is never failed for it.
	ErrUnavailable = errors.New("carrier unreachable")
)

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
