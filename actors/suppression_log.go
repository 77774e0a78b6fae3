// The suppression log: which numbers each account suppressed on this node lately, so that a
// message queued before its number was suppressed is stopped before it is submitted
// (CONTRACT §15: suppressed after acceptance but before its submit, it fails OPTED_OUT).

package actors

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// suppressionMemory is how long the log keeps a suppressed number. A message screened before
// the oldest forgotten one is looked up again in the store (suppressionLog.floor): rare, as
// messages seldom wait in memory that long.
const suppressionMemory = 15 * time.Minute

// suppressionLog is one account's suppressions on this node (Engine.suppressedAt).
type suppressionLog struct {
	at atomic.Int64 // Unix ms of the latest suppression, of one number or many

	mu     sync.Mutex
	nsns   map[uint32]int64 // number → Unix ms it was suppressed
	many   int64            // Unix ms of the latest import: any number may be suppressed since
	floor  int64            // Unix ms of the newest entry forgotten
	pruned int64            // Unix ms of the last prune
}

// noteSuppressed records that the account suppressed nsn (manyNumbers: an import) now. It is
// called once the change is committed, before the tenant is told.
func (e *Engine) noteSuppressed(accountID uuid.UUID, nsn uint32) {
	v, _ := e.suppressedAt.LoadOrStore(accountID, &suppressionLog{})
	l := v.(*suppressionLog)
	now := time.Now().UnixMilli()
	l.mu.Lock()
	if nsn == manyNumbers {
		l.many = now
	} else {
		if l.nsns == nil {
			l.nsns = map[uint32]int64{}
		}
		l.nsns[nsn] = now
	}
	if now-l.pruned >= time.Minute.Milliseconds() {
		l.pruned = now
		old := now - suppressionMemory.Milliseconds()
		for n, at := range l.nsns {
			if at < old {
				delete(l.nsns, n)
				l.floor = max(l.floor, at)
			}
		}
	}
	l.mu.Unlock()
	l.at.Store(now)
	e.lastSuppression.Store(now)
}

// suppressedSince says whether the account may have suppressed nsn since a message to it was
// screened (Unix ms). False is certain for this node's suppressions; true asks for a look-up
// in the store. A screening's time is taken before it looks, so a suppression noted at or
// after it may not have been seen.
func (e *Engine) suppressedSince(accountID uuid.UUID, nsn uint32, screened int64) bool {
	if e.lastSuppression.Load() < screened { // the common case: one atomic load
		return false
	}
	v, ok := e.suppressedAt.Load(accountID)
	if !ok {
		return false
	}
	l := v.(*suppressionLog)
	if l.at.Load() < screened {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.many >= screened || l.floor >= screened {
		return true
	}
	at, ok := l.nsns[nsn]
	return ok && at >= screened
}
