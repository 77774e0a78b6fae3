package sim

import (
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

// Provider id layout (see the package documentation). All numbers are in
// lower-case base 32 (digits, then a to v): 5 bits a character, so encoding
// is shifts rather than divisions.
const (
	submitDigits = 9  // 45 bits of unix ms: until year 3084
	tagDigits    = 5  // 25 random bits per instance
	checkDigits  = 3  // 15 bits: 1 in 32768 corrupted ids passes
	seqDigits    = 13 // 65 bits hold any uint64
	delayDigits  = 6  // 30 bits of ms hold maxReceiptDelay
	tagSpace     = 1 << (5 * tagDigits)
	checkSpace   = 1 << (5 * checkDigits)
	fixedLen     = 2 + submitDigits + tagDigits
	minIDLen     = fixedLen + 1 + 1 + 1 + checkDigits // delay '-' seq check
	maxIDLen     = fixedLen + delayDigits + 1 + seqDigits + checkDigits
	maxDelayMs   = int64(maxReceiptDelay / time.Millisecond)
)

// idFields is what a provider id encodes.
type idFields struct {
	network  carriers.Network
	outcome  outcome
	submitMs int64
	tag      uint64
	delayMs  int64
	seq      uint64
}

// format returns the provider id for f, whose fields must be in range.
func (f idFields) format() string {
	var buf [maxIDLen]byte
	return string(f.appendID(buf[:0]))
}

func (f idFields) appendID(b []byte) []byte {
	code, _ := networkCode(f.network)
	b = append(b, code, f.outcome.code())
	b = appendFixed(b, uint64(f.submitMs), submitDigits)
	b = appendFixed(b, f.tag, tagDigits)
	b = appendNumber(b, uint64(f.delayMs))
	b = append(b, '-')
	b = appendNumber(b, f.seq)
	return appendFixed(b, checksum(b), checkDigits)
}

// parseID decodes a provider id. It accepts only the canonical form format
// produces, and never panics.
func parseID(id string) (idFields, bool) {
	var f idFields
	if len(id) < minIDLen || len(id) > maxIDLen {
		return f, false
	}
	body := id[:len(id)-checkDigits]
	check, ok := parseNumber(id[len(body):])
	if !ok || check != checksum(body) {
		return f, false
	}
	if f.network, ok = parseNetworkCode(body[0]); !ok {
		return f, false
	}
	if f.outcome, ok = parseOutcomeCode(body[1]); !ok {
		return f, false
	}
	submit, ok1 := parseNumber(body[2 : 2+submitDigits])
	tag, ok2 := parseNumber(body[2+submitDigits : fixedLen])
	rest := body[fixedLen:]
	dash := -1
	for i := 0; i < len(rest); i++ {
		if rest[i] == '-' {
			dash = i
			break
		}
	}
	if !ok1 || !ok2 || dash < 0 {
		return f, false
	}
	delay, ok3 := parseNumber(rest[:dash])
	seq, ok4 := parseNumber(rest[dash+1:])
	if !ok3 || !ok4 || delay > uint64(maxDelayMs) || seq == 0 {
		return f, false
	}
	f.submitMs, f.tag, f.delayMs, f.seq = int64(submit), tag, int64(delay), seq
	// Reject leading zeros and other non-canonical spellings, so each
	// message has exactly one id.
	var buf [maxIDLen]byte
	if string(f.appendID(buf[:0])) != id {
		return f, false
	}
	return f, true
}

// networkCode is the id letter of a simulated network.
func networkCode(n carriers.Network) (byte, bool) {
	switch n {
	case carriers.Safaricom:
		return 's', true
	case carriers.Airtel:
		return 'a', true
	case carriers.Telkom:
		return 't', true
	default:
		return 0, false
	}
}

func parseNetworkCode(c byte) (carriers.Network, bool) {
	switch c {
	case 's':
		return carriers.Safaricom, true
	case 'a':
		return carriers.Airtel, true
	case 't':
		return carriers.Telkom, true
	default:
		return carriers.NetworkUnknown, false
	}
}

// checksum is FNV-1a of b reduced to the check digits.
func checksum[T string | []byte](b T) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(b); i++ {
		h ^= uint64(b[i])
		h *= 1099511628211
	}
	return h % checkSpace
}

const digits = "0123456789abcdefghijklmnopqrstuv"

// appendFixed appends the last width (at most seqDigits) base-32 digits of
// v, zero padded.
func appendFixed(b []byte, v uint64, width int) []byte {
	for shift := 5 * (width - 1); shift >= 0; shift -= 5 {
		b = append(b, digits[v>>shift&31])
	}
	return b
}

// appendNumber appends v in base 32 without leading zeros.
func appendNumber(b []byte, v uint64) []byte {
	width := 1
	for v>>(5*width) != 0 && width < seqDigits {
		width++
	}
	return appendFixed(b, v, width)
}

// parseNumber decodes 1 to seqDigits lower-case base-32 digits, rejecting
// overflow.
func parseNumber(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > seqDigits {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'v':
			d = uint64(c-'a') + 10
		default:
			return 0, false
		}
		if v>>59 != 0 {
			return 0, false
		}
		v = v<<5 | d
	}
	return v, true
}
