// Identifiers: UUIDv7 row ids, and the order multi-row statements lock rows in.

package persistence

import (
	"encoding/binary"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// sortedIDs returns the map's keys in order: every multi-row update locks rows in this order.
func sortedIDs[V any](m map[uuid.UUID]V) []uuid.UUID {
	ids := make([]uuid.UUID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return strings.Compare(string(a[:]), string(b[:])) })
	return ids
}

// NewID returns a new UUIDv7: time-ordered, so inserts append to the primary-key index.
func NewID() uuid.UUID {
	// NewV7 fails only when the system's random source does, which nothing can recover from.
	return uuid.Must(uuid.NewV7())
}

// idSlack is how far a row's id may be earlier than its created_at: both are read from clocks
// (the node's for the id, PostgreSQL's for created_at). An id may be much later: a message's
// created_at is its job's acceptance, and a scheduled campaign's rows are written when due.
const idSlack = time.Hour

// idFloor is the smallest UUIDv7 of the millisecond t: every id minted at t or later sorts at
// or after it, so a range of created_at becomes a range of the primary key.
func idFloor(t time.Time) uuid.UUID {
	var id uuid.UUID
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(max(t.UnixMilli(), 0)))
	copy(id[:6], ms[2:])
	id[6], id[8] = 0x70, 0x80 // version 7, RFC 4122 variant, the rest zero
	return id
}
