// The list's search (the start of a number, in any form a number is accepted in) and its
// cursors.

package suppressions

import (
	"encoding/binary"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

const nsnLen = 9 // the digits after +254

// searchRange turns the start of a number into the NSNs that begin with it: 0712, 254712,
// +254 712 and 712 all select 712000000 to 712999999. The separators a number may have are
// ignored; a start that no Kenyan mobile number has is not ok. The start of the country code
// alone ("+25") selects every number, as every number begins with it.
func searchRange(s string) (from, to uint32, ok bool) {
	var digits []byte
	plus := false
	for i := range len(s) {
		switch c := s[i]; {
		case '0' <= c && c <= '9':
			digits = append(digits, c)
		case c == ' ' || c == '-' || c == '.' || c == '(' || c == ')':
		case c == '+' && len(digits) == 0 && !plus:
			plus = true
		default:
			return 0, 0, false
		}
	}
	d := string(digits)
	var nsn string
	switch {
	case !plus && d == "":
		return 0, 0, false
	case strings.HasPrefix("254", d): // "", "2", "25", "254"
		nsn = ""
	case strings.HasPrefix(d, "254"):
		nsn = d[3:]
	case plus:
		return 0, 0, false // +0712, +712: no international form looks like that
	case d[0] == '0':
		nsn = d[1:]
	default:
		nsn = d
	}
	if len(nsn) > nsnLen || (nsn != "" && nsn[0] != '1' && nsn[0] != '7') {
		return 0, 0, false
	}
	var p uint64
	if nsn != "" {
		p, _ = strconv.ParseUint(nsn, 10, 32) // at most nine digits
	}
	scale := uint64(1)
	for range nsnLen - len(nsn) {
		scale *= 10
	}
	return uint32(p * scale), uint32((p+1)*scale - 1), true
}

// encodeCursor packs the last suppression of a page (created_at to the microsecond, as the
// store keeps it, and the number) into the 16 bytes an api.List cursor carries and signs.
func encodeCursor(s persistence.Suppression) uuid.UUID {
	var id uuid.UUID
	binary.BigEndian.PutUint64(id[0:8], uint64(s.CreatedAt.UnixMicro()))
	binary.BigEndian.PutUint32(id[8:12], s.NSN)
	return id
}

// decodeCursor is the inverse of encodeCursor, for a cursor whose signature checked.
func decodeCursor(id uuid.UUID) persistence.SuppressionCursor {
	return persistence.SuppressionCursor{
		CreatedAt: time.UnixMicro(int64(binary.BigEndian.Uint64(id[0:8]))).UTC(),
		NSN:       binary.BigEndian.Uint32(id[8:12]),
	}
}
