package sim

import "time"

// tokenBucket caps accepted submits at cfg.tps, with cfg.burst tokens.
// Times are nanoseconds on the Network's monotonic clock.
type tokenBucket struct {
	tokens float64
	last   int64
	burst  float64 // the burst tokens was last clamped to
}

func (b *tokenBucket) reset(cfg *config) {
	b.tokens, b.burst = cfg.burst, cfg.burst
}

// take refills the bucket up to now and takes a token if there is one.
func (b *tokenBucket) take(now int64, cfg *config) bool {
	if cfg.burst != b.burst { // reconfigured: a smaller burst applies at once
		b.burst = cfg.burst
		b.tokens = min(b.tokens, b.burst)
	}
	if now > b.last {
		b.tokens = min(b.burst, b.tokens+float64(now-b.last)*cfg.tps/float64(time.Second))
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Rate window geometry: windowSlots slots of slotWidth make one second.
const (
	slotWidth   = 10 * time.Millisecond
	windowSlots = int64(time.Second / slotWidth)
)

// rateWindow tracks the highest count of events in any window of the last
// windowSlots slots (0.99 to 1 s), in O(1) amortised per event.
type rateWindow struct {
	slots [windowSlots]uint64
	head  int64  // slot number (time / slotWidth) of the newest slot
	sum   uint64 // events in the window ending at head
	max   uint64
}

// add counts one event at now (monotonic nanoseconds). An event stamped
// before head, by a submit that lost the race for the lock, counts in head.
func (w *rateWindow) add(now int64) {
	if slot := now / int64(slotWidth); slot > w.head {
		if slot-w.head >= windowSlots {
			w.slots = [windowSlots]uint64{}
			w.sum = 0
		} else {
			for s := w.head + 1; s <= slot; s++ {
				i := s % windowSlots
				w.sum -= w.slots[i]
				w.slots[i] = 0
			}
		}
		w.head = slot
	}
	w.slots[w.head%windowSlots]++
	w.sum++
	w.max = max(w.max, w.sum)
}

// draws are the random draws of one Submit: splitmix64 over a counter, so
// they need no lock and depend only on the seed and the submit's sequence.
type draws struct{ base uint64 }

const golden = 0x9e3779b97f4a7c15 // splitmix64 increment

// newDraws returns the draws of submit seq. Each submit owns the counters
// seq*8+1 .. seq*8+7, so no two submits share one.
func newDraws(seed, seq uint64) draws {
	return draws{seed + seq*8*golden}
}

func (d draws) uint64(k uint64) uint64 {
	z := d.base + k*golden
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// float returns draw k as a uniform float64 in [0, 1).
func (d draws) float(k uint64) float64 {
	return float64(d.uint64(k)>>11) * 0x1p-53
}

// below returns draw k as a uniform duration in [0, limit); 0 if limit <= 0.
func (d draws) below(k uint64, limit time.Duration) time.Duration {
	if limit <= 0 {
		return 0
	}
	return time.Duration(d.uint64(k) % uint64(limit))
}
