// What a receipts shard remembers of its submissions: which message each provider id belongs
// to, so that its receipt is written by primary key instead of through provider_refs.

package actors

import (
	"hash/maphash"

	"github.com/tuma-sms/tuma/persistence"
)

// sentMemory bounds the provider ids a shard remembers: receipts mostly come within seconds,
// and this covers about ten seconds of a shard's share at full speed (~70 bytes an entry).
const sentMemory = 1 << 17

// sentIDs is a ring of the latest submissions with an index from a hash of their provider id
// to their place in it. The index holds 12-byte entries, not the ids themselves: under bulk
// load a map keyed by the id strings was a tenth of the node's CPU in probing alone. A hash
// only points; the ring's entry is compared in full, so a collision or an evicted entry makes
// a miss (the receipt takes the lookup through provider_refs), never a wrong match.
type sentIDs struct {
	seed  maphash.Seed
	index map[uint64]int32
	ring  []sentEntry
	next  int
}

type sentEntry struct {
	key lateKey
	msg msgKey
}

func newSentIDs(size int) *sentIDs {
	return &sentIDs{seed: maphash.MakeSeed(), index: make(map[uint64]int32, size), ring: make([]sentEntry, size)}
}

func (s *sentIDs) hash(k lateKey) uint64 {
	return maphash.String(s.seed, k.providerID) ^ uint64(k.network)*0x9e3779b97f4a7c15
}

// remember notes a submission's provider id, forgetting the oldest beyond the ring's size.
// A provider id given again (a carrier repeating itself) points at its latest submission.
func (s *sentIDs) remember(sub persistence.Submitted) {
	if sub.ProviderID == "" { // no answer came: no receipt can name it
		return
	}
	if old := s.ring[s.next].key; old.providerID != "" {
		if h := s.hash(old); s.index[h] == int32(s.next) {
			delete(s.index, h)
		}
	}
	k := lateKey{sub.ProviderID, sub.Network}
	s.ring[s.next] = sentEntry{key: k, msg: msgKey{sub.AccountID, sub.MessageID}}
	s.index[s.hash(k)] = int32(s.next)
	s.next = (s.next + 1) % len(s.ring)
}

// take returns the message a provider id was remembered for, and forgets it: a receipt is
// final, nothing more comes for that id.
func (s *sentIDs) take(k lateKey) (msgKey, bool) {
	h := s.hash(k)
	i, ok := s.index[h]
	if !ok || s.ring[i].key != k {
		return msgKey{}, false
	}
	m := s.ring[i].msg
	delete(s.index, h)
	s.ring[i].key = lateKey{}
	return m, true
}
