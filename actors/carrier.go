package actors

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
)

// Carrier is what a link needs from a network driver (the simulator, an SMPP bind).
type Carrier interface {
	// Submit hands one message to the network and returns its id there. It fails with
	// ErrThrottled, ErrTemporary, ErrRejected, or another error (treated as temporary). A
	// driver answers within its own response timeout (an SMPP session's response timer);
	// ctx only ends it early when the engine stops.
	Submit(ctx context.Context, m Outgoing) (providerID string, err error)
	// Query asks the network for a message's status now (ErrUnknownMessage if it has none).
	Query(ctx context.Context, providerID string) (CarrierStatus, error)
}

// Outgoing is a message as a link submits it.
type Outgoing struct {
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
)
