package sim

import (
	"math"
	"time"
)

// State is where a message stands.
type State uint8

// The states. A message is Enroute until its receipt delay has passed, then
// Delivered or Failed for good.
const (
	Enroute State = iota + 1
	Delivered
	Failed
)

// String returns "enroute", "delivered", "failed", or "unknown" for any
// other value.
func (s State) String() string {
	switch s {
	case Enroute:
		return "enroute"
	case Delivered:
		return "delivered"
	case Failed:
		return "failed"
	default:
		return "unknown"
	}
}

// Receipt is the status of a message, as a delivery receipt reports it.
type Receipt struct {
	ProviderID string // the id Submit returned
	State      State
	// ProviderStatus is the SMPP receipt stat: "ENROUTE", "DELIVRD",
	// "UNDELIV", "EXPIRED" or "REJECTD".
	ProviderStatus string
	// ErrorCode is the receipt's 3-digit err: "000" while enroute and for
	// DELIVRD, "001" (unknown subscriber) for UNDELIV, "027" (absent
	// subscriber) for EXPIRED, "013" (call barred, e.g. the subscriber
	// blocked the sender) for REJECTD. The codes follow GSM MAP error
	// numbers, as many SMSCs report them.
	ErrorCode   string
	SubmittedAt time.Time // UTC, millisecond resolution
	DoneAt      time.Time // UTC; zero while enroute
}

// outcome is the final fate of an accepted message, fixed at submit and
// written into its provider id.
type outcome uint8

// The outcomes, in the order of their Options weights.
const (
	outDelivered outcome = iota
	outUndeliverable
	outExpired
	outRejected
)

// code is the outcome's letter in a provider id.
func (o outcome) code() byte {
	return "duer"[o]
}

func parseOutcomeCode(c byte) (outcome, bool) {
	switch c {
	case 'd':
		return outDelivered, true
	case 'u':
		return outUndeliverable, true
	case 'e':
		return outExpired, true
	case 'r':
		return outRejected, true
	default:
		return 0, false
	}
}

func enrouteReceipt(id string, submitMs int64) Receipt {
	return Receipt{
		ProviderID:     id,
		State:          Enroute,
		ProviderStatus: "ENROUTE",
		ErrorCode:      "000",
		SubmittedAt:    time.UnixMilli(submitMs).UTC(),
	}
}

// finalReceipt is the one receipt for a message: both the pusher and Query
// build it here, so they agree.
func finalReceipt(id string, submitMs, doneMs int64, o outcome) Receipt {
	r := Receipt{
		ProviderID:  id,
		State:       Failed,
		SubmittedAt: time.UnixMilli(submitMs).UTC(),
		DoneAt:      time.UnixMilli(doneMs).UTC(),
	}
	switch o {
	case outDelivered:
		r.State, r.ProviderStatus, r.ErrorCode = Delivered, "DELIVRD", "000"
	case outUndeliverable:
		r.ProviderStatus, r.ErrorCode = "UNDELIV", "001"
	case outExpired:
		r.ProviderStatus, r.ErrorCode = "EXPIRED", "027"
	default:
		r.ProviderStatus, r.ErrorCode = "REJECTD", "013"
	}
	return r
}

// pending is a receipt waiting for its DoneAt.
type pending struct {
	doneMs   int64
	order    uint64 // enqueue order, breaks ties in doneMs
	submitMs int64
	id       string
	outcome  outcome
}

func (a *pending) before(b *pending) bool {
	return a.doneMs < b.doneMs || a.doneMs == b.doneMs && a.order < b.order
}

// receiptHeap is a min-heap of pending receipts by (doneMs, order). With a
// fixed receipt delay receipts arrive in order, so push costs one compare.
type receiptHeap []pending

func (h *receiptHeap) push(p pending) {
	*h = append(*h, p)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s[i].before(&s[parent]) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (h *receiptHeap) pop() pending {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = pending{} // release the id
	s = s[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(s) && s[l].before(&s[least]) {
			least = l
		}
		if r < len(s) && s[r].before(&s[least]) {
			least = r
		}
		if least == i {
			break
		}
		s[i], s[least] = s[least], s[i]
		i = least
	}
	*h = s
	return top
}

// maxBatch bounds the receipts taken per lock, so submits are not held up
// and Close is noticed between batches.
const maxBatch = 256

// push is the receipt goroutine: it delivers due receipts in DoneAt order
// and sleeps until the next one is due or a submit enqueues an earlier one.
// It returns when Close closes stop.
func (n *Network) push() {
	defer close(n.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	batch := make([]pending, 0, maxBatch)
	for {
		now := n.clock()
		nowMs := n.unixMs(now)
		n.mu.Lock()
		batch = batch[:0]
		for len(n.pending) > 0 && n.pending[0].doneMs <= nowMs && len(batch) < maxBatch {
			batch = append(batch, n.pending.pop())
		}
		if len(batch) > 0 {
			// Later submits must not be due before what goes out now.
			n.lastMs = max(n.lastMs, batch[len(batch)-1].doneMs)
			n.wakeAt = math.MinInt64 // busy: submits need not wake us
			n.mu.Unlock()
			for i := range batch {
				if n.closed.Load() {
					return
				}
				p := &batch[i]
				n.onReceipt(finalReceipt(p.id, p.submitMs, p.doneMs, p.outcome))
				n.receipts.Add(1)
				p.id = ""
			}
			continue
		}
		var sleep time.Duration = -1 // nothing pending: wait for a submit
		if len(n.pending) > 0 {
			n.wakeAt = n.pending[0].doneMs
			sleep = time.Duration(n.wakeAt*int64(time.Millisecond) - n.startNs - now)
		} else {
			n.wakeAt = math.MaxInt64
		}
		n.mu.Unlock()
		if sleep >= 0 {
			timer.Reset(sleep)
		}
		select {
		case <-n.stop:
			return
		case <-n.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}
