package actors

import (
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
)

// Withdrawing a job's submits takes exactly those, keeps the others in their order, and
// keeps the turns of the tenants still waiting.
func TestFairQueueWithdraw(t *testing.T) {
	a, b := uuid.New(), uuid.New()
	jobA, jobB := actor.NewPID("local", "a"), actor.NewPID("local", "b")
	var q fairQueue
	var ids []uuid.UUID
	for i := range 6 {
		id := uuid.New()
		ids = append(ids, id)
		job := jobA
		if i%2 == 1 {
			job = jobB
		}
		q.push(&submitReq{account: a, job: job, msg: dispatchMsg{id: id, unsettled: i == 4}})
	}
	q.push(&submitReq{account: b, job: jobB, msg: dispatchMsg{id: uuid.New()}})
	out := q.withdraw(a, func(r *submitReq) bool { return r.job.Equal(jobA) && !r.msg.unsettled })
	if len(out) != 2 || out[0].msg.id != ids[0] || out[1].msg.id != ids[2] {
		t.Fatalf("withdrew %d submits; want ids 0 and 2 (4 may have reached the network)", len(out))
	}
	if q.len() != 5 {
		t.Fatalf("queue holds %d; want 5", q.len())
	}
	var got []uuid.UUID
	accounts := map[uuid.UUID]int{}
	for q.len() > 0 {
		r := q.pop()
		accounts[r.account]++
		if r.account == a {
			got = append(got, r.msg.id)
		}
	}
	if len(got) != 4 || got[0] != ids[1] || got[1] != ids[3] || got[2] != ids[4] || got[3] != ids[5] {
		t.Errorf("tenant a's remaining submits out of order: %v", got)
	}
	if accounts[b] != 1 {
		t.Errorf("tenant b served %d times; want 1", accounts[b])
	}
	// Withdrawing everything of a tenant removes it from the turns.
	q.push(&submitReq{account: a, job: jobA, msg: dispatchMsg{id: uuid.New()}})
	q.push(&submitReq{account: b, job: jobB, msg: dispatchMsg{id: uuid.New()}})
	if out := q.withdraw(a, func(*submitReq) bool { return true }); len(out) != 1 {
		t.Fatalf("withdrew %d; want 1", len(out))
	}
	if r := q.pop(); r == nil || r.account != b || q.len() != 0 {
		t.Fatalf("after withdrawing tenant a, pop = %+v, %d left; want tenant b's, none left", r, q.len())
	}
}
