package smpp

import (
	"fmt"
	"strconv"
	"strings"
)

// MessageIDForm says how an SMSC writes a message id in receipt texts compared with its
// submit_sm_resp (Kannel's msg-id-type): some write the resp's hexadecimal id in decimal, or
// the other way round (notes/telecom.md §3.4).
type MessageIDForm uint8

// The forms.
const (
	IDSame                  MessageIDForm = iota // the same id (compared normalised)
	IDHexInRespDecInReceipt                      // resp "1a2b3c", receipt "0001715004"
	IDDecInRespHexInReceipt                      // resp "1715004", receipt "1A2B3C"
)

// ParseMessageIDForm reads the configuration words same, hex-dec and dec-hex.
func ParseMessageIDForm(s string) (MessageIDForm, error) {
	switch s {
	case "same":
		return IDSame, nil
	case "hex-dec":
		return IDHexInRespDecInReceipt, nil
	case "dec-hex":
		return IDDecInRespHexInReceipt, nil
	}
	return 0, fmt.Errorf("message id form %q: want same, hex-dec or dec-hex", s)
}

func (f MessageIDForm) String() string {
	switch f {
	case IDHexInRespDecInReceipt:
		return "hex-dec"
	case IDDecInRespHexInReceipt:
		return "dec-hex"
	}
	return "same"
}

// NormalizeID is the form ids are stored and compared in: trimmed, lower-case, and without
// leading zeros when all hex digits ("0000" is "0"). Other ids are only trimmed and lowered.
func NormalizeID(id string) string {
	id = strings.ToLower(strings.TrimSpace(id))
	if id == "" || !allHex(id) {
		return id
	}
	id = strings.TrimLeft(id, "0")
	if id == "" {
		return "0"
	}
	return id
}

// ReceiptID turns a receipt text's id into the normalised id of the submit_sm_resp it is
// about. An id the form cannot read is only normalised.
func ReceiptID(id string, form MessageIDForm) string {
	id = strings.TrimSpace(id)
	switch form {
	case IDHexInRespDecInReceipt:
		if n, err := strconv.ParseUint(id, 10, 64); err == nil {
			return strconv.FormatUint(n, 16)
		}
	case IDDecInRespHexInReceipt:
		if n, err := strconv.ParseUint(id, 16, 64); err == nil {
			return strconv.FormatUint(n, 10)
		}
	}
	return NormalizeID(id)
}

func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
