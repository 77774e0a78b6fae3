// Budgets the engine's actors share: the messages handed-off jobs may leave with the links,
// the slots for expanding large jobs, and the bulk accepts the links give way to (see
// yielding).

package actors

import (
	"context"
)

// takeHandOff takes n messages' worth of the hand-off budget, if it is there.
func (e *Engine) takeHandOff(n int) bool {
	if e.opts.HandOffBudget < 0 {
		return false
	}
	for {
		cur := e.handedOff.Load()
		if cur+int64(n) > e.opts.HandOffBudget {
			return false
		}
		if e.handedOff.CompareAndSwap(cur, cur+int64(n)) {
			return true
		}
	}
}

// takeExpansion waits for one of the engine's expansion slots (give it back by receiving
// from e.expansions).
func (e *Engine) takeExpansion(ctx context.Context) error {
	select {
	case e.expansions <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// bulkRecipients is the size from which a send's accept takes priority over dispatch.
const bulkRecipients = 1000

// acceptingBulk counts a large send as being accepted until the returned func is called.
func (e *Engine) acceptingBulk(recipients int) func() {
	if recipients < bulkRecipients || e.opts.BulkYield <= 0 {
		return func() {}
	}
	e.bulkAccepts.Add(1)
	return func() { e.bulkAccepts.Add(-1) }
}
