package carriers

import "unicode/utf8"

// Encoding is the alphabet an SMS is sent in.
type Encoding uint8

// The encodings. GSM7 is used when every character of the text is in the
// GSM 03.38 alphabet; any other character makes the whole text UCS2.
const (
	GSM7 Encoding = iota + 1 // GSM 03.38 default alphabet and extension table
	UCS2                     // UTF-16BE, surrogate pairs included
)

// String returns "gsm7", "ucs2", or "unknown" for any other value.
func (e Encoding) String() string {
	switch e {
	case GSM7:
		return "gsm7"
	case UCS2:
		return "ucs2"
	default:
		return "unknown"
	}
}

// Per-part capacities of a 140-octet message. A concatenated part gives 6
// octets to the UDH, leaving 153 septets or 67 UTF-16 code units.
const (
	gsm7Single  = 160
	gsm7Multi   = 153
	ucs2Single  = 70
	ucs2Multi   = 67
	surrogateLo = 0x10000 // runes from here on take two UTF-16 code units
)

// MaxParts is the most parts a concatenated SMS can have, since the UDH
// holds the part count in one octet. Segment and Split do not enforce it;
// callers reject longer texts.
const MaxParts = 255

// Segmentation describes how a text goes out: its encoding, and the parts it
// splits into.
type Segmentation struct {
	Encoding Encoding
	// Units is the length of the whole text in septets for GSM7 (an
	// extension character counts 2) or UTF-16 code units for UCS2.
	Units int
	// Parts is the number of SMS parts, each billed as one message.
	Parts int
}

// Segment says how text would be sent, without splitting it. It never
// allocates. It agrees with Split: Segment(t) == s where s, _ := Split(t).
//
// A text of at most 160 septets (GSM7) or 70 code units (UCS2) is one part.
// A longer text is filled greedily into parts of 153 or 67; a character that
// does not fit in the current part starts the next one, so an escape pair or
// a surrogate pair is never split. The empty text is GSM7 with 0 units and 0
// parts; callers that need a message should reject it first. Each byte of
// invalid UTF-8 counts as U+FFFD, which makes the text UCS2.
func Segment(text string) Segmentation {
	s, it := segmenter(text)
	for _, ok := it.next(); ok; _, ok = it.next() {
		s.Parts++
	}
	return s
}

// Split says how text is sent, as Segment does, and returns its parts:
// consecutive substrings of text (sharing its memory) that concatenate to
// text. Each part is to be encoded on its own, with EncodeGSM7 or
// EncodeUCS2 according to the Segmentation's encoding. The empty text has
// no parts.
func Split(text string) (Segmentation, []string) {
	s, it := segmenter(text)
	// Greedy parts but the last hold at least limit-1 units (a character
	// is at most 2), which bounds the number of parts.
	n := 1
	if !it.single {
		n = s.Units/(it.limit-1) + 1
	}
	var parts []string
	for part, ok := it.next(); ok; part, ok = it.next() {
		if parts == nil {
			parts = make([]string, 0, n)
		}
		parts = append(parts, part)
	}
	s.Parts = len(parts)
	return s, parts
}

// segmenter measures text and returns its Segmentation, without Parts, and
// an iterator over its parts. Segment and Split both count parts with it,
// which is what keeps billing and sending in step.
func segmenter(text string) (Segmentation, partIter) {
	t := gsm()
	m := measure(t, text)
	it := partIter{text: text, enc: m.enc, tables: t, oneByteUnits: m.oneByteUnits}
	switch {
	case m.enc == GSM7 && m.units <= gsm7Single, m.enc == UCS2 && m.units <= ucs2Single:
		it.limit = m.units // one part: the whole text
		it.single = true
	case m.enc == GSM7:
		it.limit = gsm7Multi
	default:
		it.limit = ucs2Multi
	}
	return Segmentation{Encoding: m.enc, Units: m.units}, it
}

type measurement struct {
	enc   Encoding
	units int
	// oneByteUnits reports that every character is one byte and one unit
	// (plain GSM7 ASCII, the common case), so parts can be cut by length.
	oneByteUnits bool
}

// measure returns the encoding text needs and its length in that encoding.
func measure(t *gsmTables, text string) measurement {
	units := 0
	oneByte := true
	for i := 0; i < len(text); {
		var c gsmChar
		if b := text[i]; b < utf8.RuneSelf {
			c = t.ascii[b]
			i++
		} else {
			// Invalid UTF-8 decodes as U+FFFD, which is not in the map.
			r, size := utf8.DecodeRuneInString(text[i:])
			c = t.nonASCII[r]
			i += size
			oneByte = false
		}
		if c.cost == 0 {
			return measurement{enc: UCS2, units: ucs2Units(text)}
		}
		units += int(c.cost)
	}
	return measurement{enc: GSM7, units: units, oneByteUnits: oneByte && units == len(text)}
}

// ucs2Units returns the length of text in UTF-16 code units, counting each
// invalid UTF-8 byte as one (U+FFFD).
func ucs2Units(text string) int {
	units := 0
	for _, r := range text {
		units += ucs2Cost(r)
	}
	return units
}

func ucs2Cost(r rune) int {
	if r >= surrogateLo {
		return 2
	}
	return 1
}

// partIter yields the parts of a text one by one.
type partIter struct {
	text   string
	enc    Encoding
	tables *gsmTables
	limit  int  // units per part
	single bool // the text is one part
	pos    int  // start of the next part

	oneByteUnits bool // see measurement
}

// next returns the next part, or false when the text is used up.
func (it *partIter) next() (string, bool) {
	if it.pos >= len(it.text) {
		return "", false
	}
	if it.single {
		it.pos = len(it.text)
		return it.text, true
	}
	start, units := it.pos, 0
	if it.oneByteUnits {
		it.pos = min(it.pos+it.limit, len(it.text))
		return it.text[start:it.pos], true
	}
	for it.pos < len(it.text) {
		var cost, size int
		if b := it.text[it.pos]; b < utf8.RuneSelf {
			cost, size = 1, 1
			if it.enc == GSM7 {
				cost = int(it.tables.ascii[b].cost)
			}
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(it.text[it.pos:])
			if it.enc == GSM7 {
				cost = int(it.tables.nonASCII[r].cost)
			} else {
				cost = ucs2Cost(r)
			}
		}
		if units+cost > it.limit {
			break
		}
		units += cost
		it.pos += size
	}
	return it.text[start:it.pos], true
}
