// The body of a webhook delivery as the bench receiver reads it: a validating JSON scanner that
// picks out the four fields the receiver counts. encoding/json, decoding every event into a
// struct, cost the load tool about as much CPU per event as the server spent making it, on
// the same two cores as the server under test.

package bench

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf8"
)

// hookEvent is what the receiver reads of an event: its id, type and created_at, and its
// data's message_id (empty when absent). Each is the body's own bytes where the JSON string
// holds no escape, so reading a delivery allocates nothing per event.
type hookEvent struct {
	ID, Type, CreatedAt, MessageID []byte
}

// String shows the four fields as text.
func (e hookEvent) String() string {
	return fmt.Sprintf("{%q %q %q %q}", e.ID, e.Type, e.CreatedAt, e.MessageID)
}

// errHookBody says a body is not {"events":[…]} of event objects, or not JSON at all.
var errHookBody = errors.New("not a webhook body")

// scanHookBody reads a delivery's body, appending its events to out. It accepts what
// encoding/json accepts (RFC 8259), reads keys exactly (a repeated key: the last wins; null:
// empty), and rejects a document whose events, or their four fields, are not of the right
// kind.
func scanHookBody(body []byte, out []hookEvent) ([]hookEvent, error) {
	p := hookParser{b: body}
	base := len(out)
	err := p.object(func(key []byte) error {
		if string(key) != "events" {
			return p.skip(0)
		}
		out = out[:base]
		return p.array(func() error {
			var ev hookEvent
			err := p.object(func(key []byte) error {
				switch string(key) {
				case "id":
					return p.stringInto(&ev.ID)
				case "type":
					return p.stringInto(&ev.Type)
				case "created_at":
					return p.stringInto(&ev.CreatedAt)
				case "data":
					ev.MessageID = nil
					if p.peek() == 'n' {
						return p.literal("null")
					}
					return p.object(func(key []byte) error {
						if string(key) == "message_id" {
							return p.stringInto(&ev.MessageID)
						}
						return p.skip(0)
					})
				}
				return p.skip(0)
			})
			out = append(out, ev)
			return err
		})
	})
	if err != nil {
		return out, err
	}
	if p.ws(); p.i != len(p.b) {
		return out, fmt.Errorf("%w: data after the document at byte %d", errHookBody, p.i)
	}
	return out, nil
}

// maxHookDepth bounds nesting, as encoding/json does (it allows 10,000).
const maxHookDepth = 10_000

type hookParser struct {
	b []byte
	i int
}

func (p *hookParser) fail(what string) error {
	return fmt.Errorf("%w: %s at byte %d", errHookBody, what, p.i)
}

func (p *hookParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *hookParser) peek() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// object reads {"key": value, …}, calling member with each key and the parser at its value.
func (p *hookParser) object(member func(key []byte) error) error {
	return p.list('{', '}', "an object", func() error {
		if p.peek() != '"' {
			return p.fail("want a key")
		}
		start := p.i
		key, err := p.str()
		if err != nil {
			return err
		}
		if bytes.IndexByte(key, '\\') >= 0 {
			key = decoded(key, p.b[start:p.i])
		}
		if p.peek() != ':' {
			return p.fail("want :")
		}
		p.i++
		return member(key)
	})
}

// array reads [value, …], calling elem with the parser at each value.
func (p *hookParser) array(elem func() error) error {
	return p.list('[', ']', "an array", elem)
}

// list reads open, items separated by commas, then closing; item reads one.
func (p *hookParser) list(open, closing byte, what string, item func() error) error {
	if p.peek() != open {
		return p.fail("want " + what)
	}
	p.i++
	if p.peek() == closing {
		p.i++
		return nil
	}
	for {
		if err := item(); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.i++
		case closing:
			p.i++
			return nil
		default:
			return p.fail("want , or " + string(closing))
		}
	}
}

// stringInto reads a string value into s; null makes it empty.
func (p *hookParser) stringInto(s *[]byte) error {
	if p.peek() == 'n' {
		*s = nil
		return p.literal("null")
	}
	if p.peek() != '"' {
		return p.fail("want a string")
	}
	start := p.i
	raw, err := p.str()
	if err != nil {
		return err
	}
	*s = decoded(raw, p.b[start:p.i])
	return nil
}

// decoded is a string's value: its raw contents, or, with escapes or bytes that are not UTF-8,
// what encoding/json makes of the quoted string.
func decoded(raw, quoted []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return raw
	}
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return raw // str has checked it; not reached
	}
	return []byte(s)
}

// str reads a string at p.i (its opening quote), returning its raw contents.
func (p *hookParser) str() ([]byte, error) {
	p.i++
	start := p.i
	for p.i < len(p.b) {
		p.i += plainRun(p.b[p.i:])
		if p.i >= len(p.b) {
			break
		}
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return p.b[start : p.i-1], nil
		case c < 0x20:
			return nil, p.fail("control character in a string")
		case c == '\\':
			if p.i+1 >= len(p.b) {
				return nil, p.fail("unfinished escape")
			}
			switch p.b[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if p.i+6 > len(p.b) || !isHex4(p.b[p.i+2:p.i+6]) {
					return nil, p.fail("bad \\u escape")
				}
				p.i += 6
			default:
				return nil, p.fail("bad escape")
			}
		default:
			p.i++
		}
	}
	return nil, p.fail("unfinished string")
}

// plainRun is how many bytes at the start of b need no look inside a string: none is a quote,
// a backslash or a control character. It tests eight at a time (SWAR): a body is nearly all
// such bytes, and a byte at a time was the load tool's costliest loop.
func plainRun(b []byte) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	n := 0
	for len(b)-n >= 8 {
		x := binary.LittleEndian.Uint64(b[n:])
		q := x ^ ('"' * ones)   // a zero byte where x has a quote
		bs := x ^ ('\\' * ones) // … a backslash
		// A byte's high bit set where it is zero (quote, backslash) or below 0x20; bytes of 0x80
		// and more are masked out by ^x.
		t := ((q - ones) &^ q) | ((bs - ones) &^ bs) | ((x - 0x20*ones) &^ x)
		if t &= highs; t != 0 {
			return n + bits.TrailingZeros64(t)/8
		}
		n += 8
	}
	for n < len(b) {
		if c := b[n]; c == '"' || c == '\\' || c < 0x20 {
			return n
		}
		n++
	}
	return n
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// skip reads any value.
func (p *hookParser) skip(depth int) error {
	if depth > maxHookDepth {
		return p.fail("nested too deep")
	}
	switch c := p.peek(); {
	case c == '{':
		return p.object(func([]byte) error { return p.skip(depth + 1) })
	case c == '[':
		return p.array(func() error { return p.skip(depth + 1) })
	case c == '"':
		_, err := p.str()
		return err
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	}
	return p.fail("want a value")
}

func (p *hookParser) literal(word string) error {
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		return p.fail("want " + word)
	}
	p.i += len(word)
	return nil
}

// number reads -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *hookParser) number() error {
	digits := func() int {
		n := 0
		for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.b) && p.b[p.i] == '0':
		p.i++
	case digits() == 0:
		return p.fail("bad number")
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return p.fail("bad number")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return p.fail("bad number")
		}
	}
	return nil
}
