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

	mu       sync.Mutex
	secrets  map[int][]byte // tenant → signing key, once its endpoint exists
	events   map[uint64]struct{}
	messages map[uuid.UUID]uint8
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

// startHookReceiver listens on addr (host:port) and serves until stop.
func startHookReceiver(addr string) (*hookReceiver, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("webhook receiver: %w", err)
	}
	r := &hookReceiver{ln: ln, done: make(chan error, 1), seed: maphash.MakeSeed(),
		secrets: map[int][]byte{}, events: map[uint64]struct{}{}, messages: map[uuid.UUID]uint8{}}
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
	var buf bytes.Buffer
	if req.ContentLength > 0 && req.ContentLength <= maxHookBody {
		buf.Grow(int(req.ContentLength))
	}
	if _, err := buf.ReadFrom(io.LimitReader(req.Body, maxHookBody)); err != nil {
		r.count(func(c *hookCounts) { c.Broken++ })
		http.Error(w, "incomplete body", http.StatusBadRequest)
		return
	}
	body := buf.Bytes()
	r.mu.Lock()
	key := r.secrets[n]
	r.mu.Unlock()
	if key == nil || !verified(key, req.Header, body) {
		r.count(func(c *hookCounts) { c.BadSignatures++ })
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	events, err := scanHookBody(body, make([]hookEvent, 0, 128))
	type arrival struct {
		id      uint64
		bit     uint8
		created time.Time
		message uuid.UUID
	}
	got := make([]arrival, len(events))
	var stamp string // the events of a delivery mostly share their created_at: parsed once
	var created time.Time
	for i, e := range events {
		if err != nil {
			break
		}
		a := &got[i]
		a.id = maphash.String(r.seed, e.ID)
		if e.CreatedAt != stamp || i == 0 {
			if created, err = time.Parse(time.RFC3339, e.CreatedAt); err != nil {
				break
			}
			stamp = e.CreatedAt
		}
		a.created = created
		switch e.Type {
		case "message.sent":
			a.bit = seenSent
		case "message.delivered":
			a.bit = seenDelivered
		case "message.failed":
			a.bit = seenFailed
		}
		if e.MessageID != "" {
			a.message, err = uuid.Parse(e.MessageID)
		}
	}
	if err != nil || len(events) == 0 {
		r.count(func(c *hookCounts) { c.BadBodies++ })
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first.IsZero() {
		r.first = now
	}
	r.stats.Deliveries++
	for _, a := range got {
		r.stats.Events++
		n := len(r.events)
		r.events[a.id] = struct{}{}
		if len(r.events) == n { // it was there: one probe, not two
			r.stats.Duplicates++
			continue
		}
		r.stats.Unique++
		r.last = now
		r.lat = append(r.lat, now.Sub(a.created))
		if a.bit == 0 {
			continue
		}
		seen := r.messages[a.message]
		if a.bit != seenSent && seen&seenSent == 0 {
			r.stats.OutOfOrder++
		}
		r.messages[a.message] = seen | a.bit
	}
	w.WriteHeader(http.StatusNoContent)
}

// maxHookBody is the largest body the receiver reads.
const maxHookBody = 64 << 20

func (r *hookReceiver) count(f func(*hookCounts)) {
	r.mu.Lock()
	f(&r.stats)
	r.mu.Unlock()
}

// tally is the receiver's view of the messages: how many have each event.
func (r *hookReceiver) tally() (sent, delivered, deliveredWithoutSent int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
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
