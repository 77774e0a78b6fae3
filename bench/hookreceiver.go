// The webhook receiver of `tuma-lab bench --webhooks ADDR`: it plays the tenants' systems,
// verifies every delivery's signature on its own (not with the server's code), and counts
// what a receiver cares about: events lost, duplicated, out of order, and how late.

package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Bits of what the receiver has seen of one message.
const (
	seenSent      = 1 << iota // message.sent arrived
	seenDelivered             // message.delivered arrived
	seenFailed                // message.failed arrived
)

// hookReceiver is the HTTP server the endpoints point at: /hook/<n> is tenant n's endpoint.
type hookReceiver struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
	seed maphash.Seed

	reads sync.Pool // of *hookRead

	mu       sync.Mutex
	secrets  map[int][]byte // tenant → signing key, once its endpoint exists
	events   map[uint64]struct{}
	messages map[uuid.UUID]uint8
	log      []arrival       // arrivals not yet settled, in the order they came
	lat      []time.Duration // event created_at → received, one per first arrival
	stats    hookCounts
	first    time.Time // first delivery received
	last     time.Time // last first-arrival of an event
}

// hookCounts are the receiver's tallies.
type hookCounts struct {
	Deliveries    int64 `json:"deliveries"`     // POSTs answered 2xx
	Events        int64 `json:"events"`         // events received, duplicates included
	Unique        int64 `json:"unique_events"`  // distinct event ids
	Duplicates    int64 `json:"duplicates"`     // events received again (at least once allows them)
	BadSignatures int64 `json:"bad_signatures"` // deliveries whose signature did not verify (answered 401)
	BadBodies     int64 `json:"bad_bodies"`     // deliveries that were not {"events":[…]} (answered 400)
	Broken        int64 `json:"broken"`         // requests whose body did not arrive whole (the sender gave up)
	OutOfOrder    int64 `json:"out_of_order"`   // a message's final event before its message.sent
}

// startHookReceiver listens on addr (host:port) and serves until stop. expect is about how
// many events the run will send (0: unknown): the log of arrivals is made that large at once
// rather than grown (copying millions of entries while the server is measured), and the
// tables that book them after the load too.
func startHookReceiver(addr string, expect int) (*hookReceiver, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("webhook receiver: %w", err)
	}
	expect = min(max(expect, 0), maxHookExpect)
	r := &hookReceiver{ln: ln, done: make(chan error, 1), seed: maphash.MakeSeed(), secrets: map[int][]byte{},
		events: make(map[uint64]struct{}, expect), messages: make(map[uuid.UUID]uint8, expect/2),
		log: make([]arrival, 0, expect), lat: make([]time.Duration, 0, expect)}
	r.reads.New = func() any { return &hookRead{} }
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hook/{n}", r.receive)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { r.done <- r.srv.Serve(ln) }()
	return r, nil
}

// url is the endpoint URL of tenant n, as the server must reach it.
func (r *hookReceiver) url(host string, n int) string {
	_, port, _ := net.SplitHostPort(r.ln.Addr().String())
	if host == "" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/hook/" + strconv.Itoa(n)
}

// stop closes the server and waits for its loop.
func (r *hookReceiver) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	if serr := <-r.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// setSecret records tenant n's signing secret (whsec_<base64>).
func (r *hookReceiver) setSecret(n int, secret string) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		return fmt.Errorf("webhook secret %q is not whsec_<base64>", secret)
	}
	r.mu.Lock()
	r.secrets[n] = key
	r.mu.Unlock()
	return nil
}

// verified checks the Standard Webhooks signature: any v1 signature in the header that is the
// HMAC-SHA256 of "<id>.<timestamp>.<body>".
func verified(key []byte, h http.Header, body []byte) bool {
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	if id == "" || ts == "" {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	want := m.Sum(nil)
	for _, s := range strings.Fields(h.Get("webhook-signature")) {
		v, sig, ok := strings.Cut(s, ",")
		if !ok || v != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

func (r *hookReceiver) receive(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	n, _ := strconv.Atoi(req.PathValue("n"))
	rd := r.reads.Get().(*hookRead)
	defer r.reads.Put(rd)
	body, err := rd.body(req)
	if err != nil {
		r.count(func(c *hookCounts) { c.Broken++ })
		http.Error(w, "incomplete body", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	key := r.secrets[n]
	r.mu.Unlock()
	if key == nil || !verified(key, req.Header, body) {
		r.count(func(c *hookCounts) { c.BadSignatures++ })
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	rd.events, err = scanHookBody(body, rd.events[:0])
	events := rd.events
	got := rd.got[:0]
	var stamp []byte // the events of a delivery mostly share their created_at: parsed once
	var created time.Time
	for i, e := range events {
		if err != nil {
			break
		}
		a := arrival{id: maphash.Bytes(r.seed, e.ID)}
		if i == 0 || !bytes.Equal(e.CreatedAt, stamp) {
			if created, err = time.Parse(time.RFC3339, string(e.CreatedAt)); err != nil {
				break
			}
			stamp = e.CreatedAt
		}
		a.created = created.UnixNano()
		switch string(e.Type) {
		case "message.sent":
			a.bit = seenSent
		case "message.delivered":
			a.bit = seenDelivered
		case "message.failed":
			a.bit = seenFailed
		}
		if len(e.MessageID) > 0 {
			a.message, err = uuid.ParseBytes(e.MessageID)
		}
		got = append(got, a)
	}
	rd.got = got
	if err != nil || len(events) == 0 {
		r.count(func(c *hookCounts) { c.BadBodies++ })
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	if r.first.IsZero() {
		r.first = now
	}
	r.stats.Deliveries++
	r.stats.Events += int64(len(got))
	at := now.UnixNano()
	for _, a := range got {
		a.at = at
		r.log = append(r.log, a)
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// settle books the arrivals logged since it last ran, in the order they came: duplicates by
// event id, latency and the last time of first arrivals, a message's final event before its
// message.sent. It runs when the tallies are read, which a run does once its messages are
// final: the tables of millions of ids it probes at random missed the caches on nearly every
// event, and cost the load tool, on the server's two cores, a microsecond an event while the
// server was measured. r.mu is held.
func (r *hookReceiver) settle() {
	for _, a := range r.log {
		n := len(r.events)
		r.events[a.id] = struct{}{}
		if len(r.events) == n { // it was there: one probe, not two
			r.stats.Duplicates++
			continue
		}
		r.stats.Unique++
		r.last = time.Unix(0, a.at)
		r.lat = append(r.lat, time.Duration(a.at-a.created))
		if a.bit == 0 {
			continue
		}
		seen := r.messages[a.message]
		if a.bit != seenSent && seen&seenSent == 0 {
			r.stats.OutOfOrder++
		}
		r.messages[a.message] = seen | a.bit
	}
	r.log = r.log[:0]
}

// counts are the receiver's tallies of what has arrived.
func (r *hookReceiver) counts() hookCounts {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settle()
	return r.stats
}

// arrival is what the receiver keeps of an event it read: no pointers, so a log of millions
// is nothing for the collector to scan.
type arrival struct {
	id          uint64
	created, at int64 // Unix nanoseconds
	message     uuid.UUID
	bit         uint8
}

// hookRead is one request's working memory, reused: a bulk run's deliveries are tens of
// thousands of bodies of tens of kilobytes, which the load tool, on the same cores as the
// server under test, otherwise allocated and collected.
type hookRead struct {
	buf    []byte
	events []hookEvent
	got    []arrival
}

// body reads the request's body whole into the reused buffer.
func (rd *hookRead) body(req *http.Request) ([]byte, error) {
	if req.ContentLength > maxHookBody {
		return nil, errors.New("body too large")
	}
	if req.ContentLength >= 0 {
		if int64(cap(rd.buf)) < req.ContentLength {
			rd.buf = make([]byte, req.ContentLength)
		}
		b := rd.buf[:req.ContentLength]
		_, err := io.ReadFull(req.Body, b)
		return b, err
	}
	buf := bytes.NewBuffer(rd.buf[:0])
	_, err := buf.ReadFrom(io.LimitReader(req.Body, maxHookBody))
	rd.buf = buf.Bytes()
	return rd.buf, err
}

// maxHookBody is the largest body the receiver reads.
const maxHookBody = 64 << 20

// maxHookExpect bounds the events the receiver makes room for at its start (about 100 bytes
// each, with its log); past it, its tables grow as they fill.
const maxHookExpect = 8_000_000

func (r *hookReceiver) count(f func(*hookCounts)) {
	r.mu.Lock()
	f(&r.stats)
	r.mu.Unlock()
}

// tally is the receiver's view of the messages: how many have each event.
func (r *hookReceiver) tally() (sent, delivered, deliveredWithoutSent int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settle()
	for _, s := range r.messages {
		if s&seenSent != 0 {
			sent++
		}
		if s&seenDelivered != 0 {
			delivered++
			if s&seenSent == 0 {
				deliveredWithoutSent++
			}
		}
	}
	return sent, delivered, deliveredWithoutSent
}
