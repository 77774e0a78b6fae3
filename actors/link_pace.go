// Pacing: how fast a link may submit, by its own cap and by what the network tolerates, and
// when it holds off so that a large send's accept does not queue behind dispatch.

package actors

import (
	"math"
	"time"
)

// pacer decides when a link may submit next: its configured cap (GCRA with a one-second
// window, so no second carries more than the cap) lowered to the pace the network has shown it
// tolerates through its throttles.
type pacer struct {
	cap         float64     // configured submits per second (0: none of ours)
	next        time.Time   // when the rate allows the next submit (GCRA's theoretical arrival time)
	sentAt      []time.Time // ring of the latest submit times, for the one-second window (capped links)
	sentPos     int
	pausedUntil time.Time
	pace        pace      // the rate the network tolerates, learnt from its throttles
	accepted    rateMeter // recent accepted submits, to start the pace from
}

// throttlePause is how long a link waits after a throttle answer before submitting again.
const throttlePause = 20 * time.Millisecond

func newPacer(tps float64) pacer {
	return pacer{cap: tps, next: time.Now(), sentAt: make([]time.Time, min(int(math.Ceil(tps)), maxWindowRing))}
}

// ready reports whether a submit may go now, or when to look again.
func (p *pacer) ready(now time.Time) (time.Time, bool) {
	if now.Before(p.pausedUntil) {
		return p.pausedUntil, false
	}
	tps := p.rate()
	if tps <= 0 {
		return time.Time{}, true
	}
	if now.Before(p.next) {
		return p.next, false
	}
	if oldest, full := p.windowFull(now, tps); full {
		return oldest.Add(time.Second), false
	}
	return time.Time{}, true
}

// took records a submit going now. The schedule keeps its own time, so a late wake-up (a
// timer, a busy CPU) is made up and the average holds at the rate; the one-second window
// bounds the catching up, so no second ever carries more than the rate. After an idle spell at
// most rateCatchUp's worth goes at once.
func (p *pacer) took(now time.Time) {
	if tps := p.rate(); tps > 0 {
		p.next = later(p.next, now.Add(-rateCatchUp)).Add(time.Duration(float64(time.Second) / tps))
		p.record(now)
	}
}

// resume notes that submits are waiting again after none were: time nothing waited is not
// made up (only late wake-ups are), so the submits of a slow mark do not go out at once.
func (p *pacer) resume(now time.Time) {
	p.next = later(p.next, now)
}

// ok notes an accepted submit: quiet time raises the pace again.
func (p *pacer) ok(now time.Time) {
	p.accepted.add(now)
	ceiling := p.cap
	if ceiling == 0 {
		ceiling = 100_000 // beyond this the pace no longer matters
	}
	p.pace.ok(now, ceiling)
}

// throttled notes a throttle answer: the pace drops and the link pauses briefly.
func (p *pacer) throttled(now time.Time) {
	if p.pace.throttled(now, p.accepted.perSecond(now)) {
		p.next = now // no catching up at the old pace
		p.pausedUntil = now.Add(throttlePause)
	}
}

// windowFull reports whether the last second already holds rate submits, and when the
// oldest of them was.
func (p *pacer) windowFull(now time.Time, tps float64) (time.Time, bool) {
	k := int(math.Ceil(tps))
	if k > len(p.sentAt) {
		return time.Time{}, false // a rate above the configured cap: the pace, not ours
	}
	oldest := p.sentAt[(p.sentPos-k+len(p.sentAt))%len(p.sentAt)]
	return oldest, !oldest.IsZero() && now.Sub(oldest) < time.Second
}

// record notes a submit in the one-second window.
func (p *pacer) record(at time.Time) {
	if len(p.sentAt) == 0 {
		return
	}
	p.sentAt[p.sentPos] = at
	p.sentPos = (p.sentPos + 1) % len(p.sentAt)
}

// rateCatchUp is the most time a link's schedule makes up after its wake-ups ran late.
const rateCatchUp = 250 * time.Millisecond

// maxWindowRing bounds the memory of the one-second window (a rate cap above it is paced,
// and trusted not to burst).
const maxWindowRing = 100_000

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// rate is the link's submit rate now: its configured cap, lowered to the pace the network has
// shown it tolerates (0: no limit).
func (p *pacer) rate() float64 {
	switch {
	case p.pace.rate == 0:
		return p.cap
	case p.cap == 0:
		return p.pace.rate
	}
	return min(p.cap, p.pace.rate)
}

// pace adapts a link's rate to a network's throttling, additive-increase/multiplicative-
// decrease style: a throttle cuts the rate (once per epoch, however many submits were
// throttled at once); quiet time raises it again until it no longer binds.
type pace struct {
	rate      float64 // submits/s; 0 = unlimited
	lastCut   time.Time
	lastRaise time.Time
}

const (
	paceEpoch = 100 * time.Millisecond
	paceCut   = 0.7
	paceRaise = 1.05
)

// throttled lowers the pace; recent is the accepted rate just before the throttle.
func (p *pace) throttled(now time.Time, recent float64) bool {
	if now.Sub(p.lastCut) < paceEpoch {
		return false
	}
	p.lastCut = now
	if p.rate == 0 {
		p.rate = max(recent, 1)
	} else {
		p.rate = max(p.rate*paceCut, 1)
	}
	return true
}

// ok raises the pace after a quiet spell; ceiling is the rate beyond which it stops mattering.
func (p *pace) ok(now time.Time, ceiling float64) {
	if p.rate == 0 || now.Sub(p.lastCut) < 5*paceEpoch || now.Sub(p.lastRaise) < paceEpoch {
		return
	}
	p.lastRaise = now
	p.rate *= paceRaise
	if ceiling > 0 && p.rate >= ceiling {
		p.rate = 0
	}
}

// rateMeter counts events over the last second in ten 100 ms buckets.
type rateMeter struct {
	buckets [10]int
	at      [10]int64 // which 100 ms slot each bucket holds
}

func (r *rateMeter) add(now time.Time) {
	slot := now.UnixMilli() / 100
	i := slot % 10
	if r.at[i] != slot {
		r.at[i], r.buckets[i] = slot, 0
	}
	r.buckets[i]++
}

func (r *rateMeter) perSecond(now time.Time) float64 {
	slot := now.UnixMilli() / 100
	n := 0
	for i := range r.buckets {
		if slot-r.at[i] < 10 {
			n += r.buckets[i]
		}
	}
	return float64(n)
}

// yielding tells the links when to hold off. Holding off is bounded: after yieldFor of it, a
// link takes work for at least as long again, so a stream of bulk sends slows dispatch by at
// most half and never stops it.
type yielding struct {
	since time.Time // when this hold began (zero: not holding)
	until time.Time // no hold before this
}

// hold reports whether a link should take no new work now. accepting is how many bulk sends
// are being accepted; yieldFor 0 turns holding off.
func (y *yielding) hold(now time.Time, accepting int32, yieldFor time.Duration) bool {
	if accepting == 0 || yieldFor <= 0 || now.Before(y.until) {
		y.since = time.Time{}
		return false
	}
	if y.since.IsZero() {
		y.since = now
	}
	if now.Sub(y.since) >= yieldFor {
		y.since, y.until = time.Time{}, now.Add(yieldFor)
		return false
	}
	return true
}
