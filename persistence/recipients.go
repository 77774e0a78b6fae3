package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tuma-sms/tuma/carriers"
)

// Recipient is a normalised destination in its compact form: the 9-digit national significant
// number (the digits after +254) and its network.
type Recipient struct {
	NSN     uint32
	Network carriers.Network
}

// E164 renders the recipient as +254XXXXXXXXX.
func (r Recipient) E164() string {
	var b [13]byte
	b[0], b[1], b[2], b[3] = '+', '2', '5', '4'
	n := r.NSN
	for i := 12; i >= 4; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[:])
}

// ParseE164 is the inverse of E164.
func ParseE164(s string) (uint32, error) {
	if len(s) != 13 || s[:4] != "+254" {
		return 0, fmt.Errorf("not a +254 number: %q", s)
	}
	var n uint32
	for i := 4; i < 13; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("not a +254 number: %q", s)
		}
		n = n*10 + uint32(c-'0')
	}
	return n, nil
}

// recipientSize is the bytes each recipient takes in a job's pending list.
const recipientSize = 5

// EncodeRecipients packs recipients for a job's pending_recipients: 5 bytes each, so a
// 10,000-recipient job is one 50 KB value written in the accepting transaction.
func EncodeRecipients(rs []Recipient) []byte {
	b := make([]byte, len(rs)*recipientSize)
	for i, r := range rs {
		binary.BigEndian.PutUint32(b[i*recipientSize:], r.NSN)
		b[i*recipientSize+4] = byte(r.Network)
	}
	return b
}

// DecodeRecipients unpacks EncodeRecipients.
func DecodeRecipients(b []byte) ([]Recipient, error) {
	if len(b)%recipientSize != 0 {
		return nil, errors.New("pending recipients: truncated")
	}
	rs := make([]Recipient, len(b)/recipientSize)
	for i := range rs {
		rs[i] = Recipient{NSN: binary.BigEndian.Uint32(b[i*recipientSize:]), Network: carriers.Network(b[i*recipientSize+4])}
		if rs[i].NSN > 999_999_999 || rs[i].Network < carriers.Safaricom || rs[i].Network > carriers.Telkom {
			return nil, fmt.Errorf("pending recipients: bad entry %d", i)
		}
	}
	return rs, nil
}
