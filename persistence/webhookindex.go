// The index of the node's message memory: message id → ring slot.

package persistence

import (
	"encoding/binary"

	"github.com/google/uuid"
)

// slotIndex finds a message's slot in the ring by its id: open addressing with linear probing
// and backward-shift deletion, at most half full. A ring replaces its oldest message at every
// flush; Go's maps leave a tombstone at each delete, and a lookup in a map of the memory's size
// took 105 ns after 32 turns of the ring, against 57 here (bench/RESULTS.md, 2026-11-28
// 01:30). A delete moves the cells after it back instead, so the table never ages.
//
// A cell holds the id's hash (its low 32 bits) and its slot + 1 (0: empty); a lookup compares
// hashes before it reads a slot's id.
type slotIndex struct {
	mask  uint32
	cells []uint64
}

func newSlotIndex(n int) slotIndex {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	return slotIndex{mask: uint32(size - 1), cells: make([]uint64, size)}
}

// hashID mixes both halves of an id: ids of version 7 begin with their time.
func hashID(id uuid.UUID) uint32 {
	x := binary.LittleEndian.Uint64(id[:8]) ^ binary.LittleEndian.Uint64(id[8:])*0x9e3779b97f4a7c15
	x ^= x >> 32
	x *= 0xd6e8feca66d6d3e5
	return uint32(x >> 32)
}

// find returns the slot of id (whose ids are in slots), or -1.
func (x *slotIndex) find(id uuid.UUID, slots []cachedMessage) int32 {
	h := hashID(id)
	for i := h & x.mask; ; i = (i + 1) & x.mask {
		c := x.cells[i]
		if c == 0 {
			return -1
		}
		if uint32(c>>32) == h {
			if s := int32(uint32(c)) - 1; slots[s].id == id {
				return s
			}
		}
	}
}

// add records that id is in slot s; id is not in the index.
func (x *slotIndex) add(id uuid.UUID, s int32) {
	h := hashID(id)
	i := h & x.mask
	for x.cells[i] != 0 {
		i = (i + 1) & x.mask
	}
	x.cells[i] = uint64(h)<<32 | uint64(uint32(s+1))
}

// remove forgets that id is in slot s, if the index has it so.
func (x *slotIndex) remove(id uuid.UUID, s int32) {
	h := hashID(id)
	want := uint64(h)<<32 | uint64(uint32(s+1))
	i := h & x.mask
	for x.cells[i] != want {
		if x.cells[i] == 0 {
			return
		}
		i = (i + 1) & x.mask
	}
	// Backward shift: each later cell of the run that may sit at i (its home is not in
	// (i, j]) moves there, and its old place is the next hole.
	for j := (i + 1) & x.mask; x.cells[j] != 0; j = (j + 1) & x.mask {
		home := uint32(x.cells[j]>>32) & x.mask
		if (j-home)&x.mask >= (j-i)&x.mask {
			x.cells[i] = x.cells[j]
			i = j
		}
	}
	x.cells[i] = 0
}
