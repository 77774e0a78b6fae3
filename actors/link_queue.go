// Link queues: a link's waiting submits, served tenant by tenant, and the message ids it has
// in hand or finished lately, so no message is submitted twice from two requests.

package actors

import (
	"github.com/google/uuid"
)

// fairQueue holds a link's waiting submits in one FIFO per tenant and serves the tenants in
// turn. One tenant's backlog of a million messages then delays another tenant's new message
// by at most one submit per tenant with work waiting, not by the backlog.
type fairQueue struct {
	byTenant map[uuid.UUID]*fifo
	ring     []uuid.UUID // tenants with work waiting, in turn order
	turn     int
	size     int
}

type fifo struct {
	reqs []*submitReq
	head int
}

func (q *fairQueue) len() int { return q.size }

func (q *fairQueue) push(r *submitReq) {
	if q.byTenant == nil {
		q.byTenant = map[uuid.UUID]*fifo{}
	}
	f := q.byTenant[r.account]
	if f == nil {
		f = &fifo{}
		q.byTenant[r.account] = f
		// A tenant that had nothing waiting joins just before the current turn: it is served
		// after every tenant already waiting has had one more turn.
		q.ring = append(q.ring, uuid.Nil)
		copy(q.ring[q.turn+1:], q.ring[q.turn:])
		q.ring[q.turn] = r.account
		q.turn = (q.turn + 1) % len(q.ring)
	}
	f.reqs = append(f.reqs, r)
	q.size++
}

// pop takes the next submit: the oldest of the tenant whose turn it is.
func (q *fairQueue) pop() *submitReq {
	if q.size == 0 {
		return nil
	}
	q.turn %= len(q.ring)
	acct := q.ring[q.turn]
	f := q.byTenant[acct]
	r := f.reqs[f.head]
	f.reqs[f.head] = nil
	f.head++
	q.size--
	if f.head == len(f.reqs) {
		delete(q.byTenant, acct)
		q.ring = append(q.ring[:q.turn], q.ring[q.turn+1:]...)
		return r // the next tenant moved into this turn
	}
	if f.head >= 1024 && f.head*2 >= len(f.reqs) { // let the served part go
		f.reqs = append([]*submitReq(nil), f.reqs[f.head:]...)
		f.head = 0
	}
	q.turn++
	return r
}

// withdraw takes out of the queue a tenant's waiting submits that match, in order.
func (q *fairQueue) withdraw(account uuid.UUID, match func(*submitReq) bool) []*submitReq {
	f := q.byTenant[account]
	if f == nil {
		return nil
	}
	var out []*submitReq
	kept := f.reqs[:f.head]
	for _, r := range f.reqs[f.head:] {
		if match(r) {
			out = append(out, r)
		} else {
			kept = append(kept, r)
		}
	}
	clear(f.reqs[len(kept):])
	f.reqs = kept
	q.size -= len(out)
	if f.head == len(f.reqs) { // nothing left: the tenant leaves the turns
		delete(q.byTenant, account)
		i := 0
		for i < len(q.ring) && q.ring[i] != account {
			i++
		}
		q.ring = append(q.ring[:i], q.ring[i+1:]...)
		if i < q.turn {
			q.turn--
		}
		if len(q.ring) > 0 {
			q.turn %= len(q.ring)
		} else {
			q.turn = 0
		}
	}
	return out
}

// recentIDs remembers the last ids added, forgetting the oldest first.
type recentIDs struct {
	set  map[uuid.UUID]struct{}
	ring []uuid.UUID
	next int
}

// recentSubmits is how many finished submits a link remembers: enough for the seconds a
// resumed job may take to ask again for a message whose outcome is not yet durable.
const recentSubmits = 1 << 16

func (r *recentIDs) add(id uuid.UUID) {
	if r.ring == nil {
		r.set, r.ring = make(map[uuid.UUID]struct{}, recentSubmits), make([]uuid.UUID, recentSubmits)
	}
	if old := r.ring[r.next]; old != uuid.Nil {
		delete(r.set, old)
	}
	r.ring[r.next] = id
	r.next = (r.next + 1) % len(r.ring)
	r.set[id] = struct{}{}
}

func (r *recentIDs) has(id uuid.UUID) bool {
	_, ok := r.set[id]
	return ok
}
