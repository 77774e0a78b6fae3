package persistence

import (
	"math/rand/v2"
	"testing"

	"github.com/google/uuid"
)

// The index agrees with a map through many turns of a ring (each new message replacing the
// oldest) with drops between, and its cells stay as few as the messages it holds.
func TestSlotIndexFollowsTheRing(t *testing.T) {
	const n = 1000
	rng := rand.New(rand.NewPCG(1, 2))
	ix := newSlotIndex(n)
	slots := make([]cachedMessage, n)
	model := map[uuid.UUID]int32{}
	newID := func() uuid.UUID {
		var id uuid.UUID
		for i := range id {
			id[i] = byte(rng.Uint32())
		}
		if rng.IntN(4) == 0 { // ids that share their first half, as version 7 ids of one moment do
			copy(id[:8], slots[0].id[:8])
		}
		return id
	}
	for turn := 0; turn < 40*n; turn++ {
		s := int32(turn % n)
		if old := slots[s].id; old != uuid.Nil {
			ix.remove(old, s)
			delete(model, old)
		}
		id := newID()
		slots[s].id = id
		ix.add(id, s)
		model[id] = s
		if rng.IntN(10) == 0 { // a drop: the slot stays, matching nothing
			d := int32(rng.IntN(n))
			if gone := slots[d].id; gone != uuid.Nil {
				ix.remove(gone, d)
				delete(model, gone)
				slots[d].id = uuid.Nil
			}
		}
		if turn%997 == 0 {
			for id, want := range model {
				if got := ix.find(id, slots); got != want {
					t.Fatalf("turn %d: %s in slot %d, want %d", turn, id, got, want)
				}
			}
			if got := ix.find(newID(), slots); got != -1 {
				t.Fatalf("turn %d: an id never added found in slot %d", turn, got)
			}
			used := 0
			for _, c := range ix.cells {
				if c != 0 {
					used++
				}
			}
			if used != len(model) {
				t.Fatalf("turn %d: %d cells used for %d messages", turn, used, len(model))
			}
		}
	}
}

// Lookups of a ring that has turned many times, the node's steady state.
func BenchmarkSlotIndexAfterTurns(b *testing.B) {
	const n = 131072
	ix := newSlotIndex(n)
	slots := make([]cachedMessage, n)
	for turn := 0; turn < 32*n; turn++ {
		s := int32(turn % n)
		if old := slots[s].id; old != uuid.Nil {
			ix.remove(old, s)
		}
		slots[s].id = uuid.New()
		ix.add(slots[s].id, s)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if ix.find(slots[i%n].id, slots) < 0 {
			b.Fatal("lost")
		}
	}
}

// The same with a Go map, as the memory's index was: its deletes leave tombstones.
func BenchmarkGoMapAfterTurns(b *testing.B) {
	const n = 131072
	m := make(map[uuid.UUID]int32, n)
	ids := make([]uuid.UUID, n)
	for turn := 0; turn < 32*n; turn++ {
		s := turn % n
		if ids[s] != uuid.Nil {
			delete(m, ids[s])
		}
		ids[s] = uuid.New()
		m[ids[s]] = int32(s)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, ok := m[ids[i%n]]; !ok {
			b.Fatal("lost")
		}
	}
}
