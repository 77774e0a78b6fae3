// Asking a network about messages: their status by provider id, or whether it took one.

package sim

import (
	"context"
	"fmt"
	"sync"
)

// submitMemory remembers which provider id the latest accepted submits of each platform
// message id got, so Lookup can answer "did you take this one?" after a lost answer. It is
// bounded: the oldest entries are forgotten first.
type submitMemory struct {
	mu   sync.Mutex
	ids  map[string]string // message id → provider id
	ring []string          // message ids, oldest at next
	next int
}

// lookupMemory is how many recent accepts Lookup can find: a lost answer is asked about
// within seconds.
const lookupMemory = 1 << 16

func (n *Network) remember(messageID, providerID string) {
	if messageID == "" {
		return
	}
	m := &n.memory
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ids == nil {
		m.ids, m.ring = make(map[string]string, lookupMemory), make([]string, lookupMemory)
	}
	if old := m.ring[m.next]; old != "" {
		delete(m.ids, old)
	}
	m.ring[m.next] = messageID
	m.next = (m.next + 1) % len(m.ring)
	m.ids[messageID] = providerID
}

// Lookup returns the provider id the network gave the platform's message messageID, if it
// accepted it recently (the last 65,536 accepts); otherwise an error wrapping
// ErrUnknownMessage. After Close it returns ErrClosed.
func (n *Network) Lookup(ctx context.Context, messageID string) (string, error) {
	if err := ctxErr(ctx); err != nil {
		return "", err
	}
	if n.closed.Load() {
		return "", ErrClosed
	}
	n.memory.mu.Lock()
	id, ok := n.memory.ids[messageID]
	n.memory.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("no recent submission of %s: %w", messageID, ErrUnknownMessage)
	}
	return id, nil
}

// Query returns the live status of the message submitted under providerID:
// Enroute until its receipt delay has passed, then its final state, equal to
// the receipt pushed for it. It works for ids issued by earlier instances of
// the same network. An id this network cannot have issued (malformed, or
// issued by another network) gives an error wrapping ErrUnknownMessage;
// after Close, Query returns ErrClosed.
func (n *Network) Query(ctx context.Context, providerID string) (Receipt, error) {
	if err := ctxErr(ctx); err != nil {
		return Receipt{}, err
	}
	if n.closed.Load() {
		return Receipt{}, ErrClosed
	}
	f, ok := parseID(providerID)
	if !ok {
		return Receipt{}, ErrUnknownMessage
	}
	if f.network != n.network {
		return Receipt{}, fmt.Errorf("id issued by %s, not %s: %w", f.network, n.network, ErrUnknownMessage)
	}
	if now := n.unixMs(n.clock()); now < f.submitMs+f.delayMs {
		return enrouteReceipt(providerID, f.submitMs), nil
	}
	return finalReceipt(providerID, f.submitMs, f.submitMs+f.delayMs, f.outcome), nil
}
