package carriers

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// gsmBasic is the GSM 03.38 default alphabet (3GPP TS 23.038 §6.2.1) in code
// order: the rune at index i has septet code i. Code 0x1B is the escape to
// the extension table, not a character. Code 0x09 is capital Ç as in ETSI's
// table; the Unicode mapping file's small ç would make a text that has ç
// GSM7 and silently change it.
const gsmBasic = "@£$¥èéùìòÇ\nØø\rÅå" +
	"Δ_ΦΓΛΩΠΨΣΘΞ\x1bÆæßÉ" +
	" !\"#¤%&'()*+,-./" +
	"0123456789:;<=>?" +
	"¡ABCDEFGHIJKLMNO" +
	"PQRSTUVWXYZÄÖÑÜ§" +
	"¿abcdefghijklmno" +
	"pqrstuvwxyzäöñüà"

// gsmEscape introduces a character from the extension table.
const gsmEscape = 0x1b

// The extension table (TS 23.038 §6.2.1.1): the i-th character of
// gsmExtChars is coded as the escape followed by gsmExtCodes[i], so each
// costs two septets.
const (
	gsmExtChars = "\f^{}\\[~]|€"
	gsmExtCodes = "\x0a\x14\x28\x29\x2f\x3c\x3d\x3e\x40\x65"
)

// gsmChar is one character's GSM 03.38 coding. cost is 0 for a character
// outside the alphabet, 1 in the basic table, 2 in the extension table.
type gsmChar struct {
	code byte
	cost uint8
}

type gsmTables struct {
	ascii     [utf8.RuneSelf]gsmChar // by ASCII rune: the common case, without a map look-up
	nonASCII  map[rune]gsmChar
	basic     [128]rune // by code
	extension [128]rune // by code; 0 where the code has no character
}

// lookup returns the coding of r; cost 0 means r is not in the alphabet.
func (t *gsmTables) lookup(r rune) gsmChar {
	if 0 <= r && r < utf8.RuneSelf {
		return t.ascii[r]
	}
	return t.nonASCII[r]
}

// gsm builds the lookup tables from the constants above once, so that
// the alphabet is written down in one place and no table is mutable.
var gsm = sync.OnceValue(func() *gsmTables {
	t := &gsmTables{nonASCII: make(map[rune]gsmChar)}
	set := func(r rune, c gsmChar) {
		if r < utf8.RuneSelf {
			t.ascii[r] = c
		} else {
			t.nonASCII[r] = c
		}
	}
	code := 0
	for _, r := range gsmBasic {
		t.basic[code] = r
		if code != gsmEscape {
			set(r, gsmChar{code: byte(code), cost: 1})
		}
		code++
	}
	if code != len(t.basic) {
		panic(fmt.Sprintf("carriers: gsmBasic has %d characters, want %d", code, len(t.basic)))
	}
	i := 0
	for _, r := range gsmExtChars {
		code := gsmExtCodes[i]
		t.extension[code] = r
		set(r, gsmChar{code: code, cost: 2})
		i++
	}
	return t
})

// EncodeGSM7 codes s in the GSM 03.38 alphabet, unpacked: one septet per
// octet, and extension characters as the escape 0x1B followed by their code.
// It fails if s has a character outside the alphabet, or invalid UTF-8.
func EncodeGSM7(s string) ([]byte, error) {
	t := gsm()
	m := measure(t, s)
	if m.enc != GSM7 {
		for i, r := range s {
			if t.lookup(r).cost == 0 {
				if r == utf8.RuneError {
					if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
						return nil, fmt.Errorf("carriers: invalid UTF-8 at byte %d", i)
					}
				}
				return nil, fmt.Errorf("carriers: %q (%U) at byte %d is not in the GSM 03.38 alphabet", r, r, i)
			}
		}
	}
	out := make([]byte, 0, m.units)
	for _, r := range s {
		c := t.lookup(r)
		if c.cost == 2 {
			out = append(out, gsmEscape)
		}
		out = append(out, c.code)
	}
	return out, nil
}

// DecodeGSM7 is the inverse of EncodeGSM7. Following TS 23.038, an escape
// before a code with no extension character decodes as the basic-table
// character, and a double escape (reserved) as a space. Octets above 0x7F
// and a trailing escape are errors.
func DecodeGSM7(b []byte) (string, error) {
	t := gsm()
	var sb strings.Builder
	sb.Grow(len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c >= 0x80 {
			return "", fmt.Errorf("carriers: octet %#02x at %d is not a GSM septet", c, i)
		}
		if c != gsmEscape {
			sb.WriteRune(t.basic[c])
			continue
		}
		i++
		if i == len(b) {
			return "", errors.New("carriers: escape at end of GSM text")
		}
		e := b[i]
		switch {
		case e >= 0x80:
			return "", fmt.Errorf("carriers: octet %#02x at %d is not a GSM septet", e, i)
		case t.extension[e] != 0:
			sb.WriteRune(t.extension[e])
		case e == gsmEscape:
			sb.WriteByte(' ')
		default:
			sb.WriteRune(t.basic[e])
		}
	}
	return sb.String(), nil
}

// EncodeUCS2 codes s as UTF-16BE, the SMPP data_coding 0x08 payload.
// Characters outside the BMP become surrogate pairs; each invalid UTF-8 byte
// becomes U+FFFD, as Segment counts it.
func EncodeUCS2(s string) []byte {
	out := make([]byte, 0, 2*ucs2Units(s))
	for _, r := range s {
		if r >= surrogateLo {
			r1, r2 := utf16.EncodeRune(r)
			out = binary.BigEndian.AppendUint16(out, uint16(r1))
			out = binary.BigEndian.AppendUint16(out, uint16(r2))
			continue
		}
		out = binary.BigEndian.AppendUint16(out, uint16(r))
	}
	return out
}
