// What a network is handed, and what it refuses before anything else.

package sim

import (
	"fmt"

	"github.com/tuma-sms/tuma/carriers"
)

// Submission is one message handed to the carrier.
type Submission struct {
	MessageID   string // the platform's message id (opaque to the simulator)
	Sender      string
	Destination string // E.164, e.g. "+254712345678"
	Text        string
	Parts       int
	Encoding    carriers.Encoding
}

// validate rejects what a real SMSC would refuse at submit.
func validate(s Submission) error {
	if !isE164(s.Destination) {
		return fmt.Errorf("destination %q is not E.164: %w", s.Destination, ErrRejected)
	}
	if s.Parts < 1 || s.Parts > carriers.MaxParts {
		return fmt.Errorf("%d parts: %w", s.Parts, ErrRejected)
	}
	if s.Encoding != carriers.GSM7 && s.Encoding != carriers.UCS2 {
		return fmt.Errorf("encoding %s: %w", s.Encoding, ErrRejected)
	}
	return nil
}

// isE164 reports whether s is '+' and 7 to 15 digits, the first not 0.
func isE164(s string) bool {
	if len(s) < 8 || len(s) > 16 || s[0] != '+' || s[1] == '0' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
