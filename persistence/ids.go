// Identifiers: UUIDv7 row ids, and the order multi-row statements lock rows in.

package persistence

import (
	"slices"
	"strings"

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
