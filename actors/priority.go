// Accept priority: while a large send is being accepted, the carrier links hold off taking
// new submits, so its durable 202 does not queue for the two cores behind dispatch.

package actors

import "time"

// bulkRecipients is the size from which a send's accept takes priority over dispatch.
const bulkRecipients = 1000

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

// acceptingBulk counts a large send as being accepted until the returned func is called.
func (e *Engine) acceptingBulk(recipients int) func() {
	if recipients < bulkRecipients || e.opts.BulkYield <= 0 {
		return func() {}
	}
	e.bulkAccepts.Add(1)
	return func() { e.bulkAccepts.Add(-1) }
}
