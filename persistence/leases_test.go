package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

func TestHoldLeaseOneNodeAtATime(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	hold := func(node string, ttl time.Duration) bool {
		t.Helper()
		ok, err := st.HoldLease(ctx, "sweeper", node, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !hold("a", 300*time.Millisecond) {
		t.Fatal("the first node did not get a free lease")
	}
	if hold("b", time.Minute) {
		t.Fatal("a second node took a lease that runs")
	}
	if !hold("a", 300*time.Millisecond) {
		t.Fatal("the holder could not renew its lease")
	}
	if ok, _ := st.HoldLease(ctx, "reconciler", "b", time.Minute); !ok {
		t.Error("another worker's lease was not free")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !hold("b", time.Minute) { // a takes no more rounds: its lease runs out
		if time.Now().After(deadline) {
			t.Fatal("the lease never passed on after its holder stopped renewing it")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if hold("a", time.Minute) {
		t.Error("the old holder took the lease back while the new one's runs")
	}
}

// A node that stops releases its leases: another takes them at once, not after they lapse;
// another node's leases stay.
func TestReleaseLeasesHandsWorkOver(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	for _, l := range []struct{ name, node string }{{"sweeper", "a"}, {"reconciler", "c"}} {
		if ok, err := st.HoldLease(ctx, l.name, l.node, time.Hour); !ok || err != nil {
			t.Fatalf("%s for %s: %v, %v", l.name, l.node, ok, err)
		}
	}
	if err := st.ReleaseLeases(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.HoldLease(ctx, "sweeper", "b", time.Hour); !ok || err != nil {
		t.Errorf("the released sweeper lease: %v, %v; want b to take it at once", ok, err)
	}
	if ok, _ := st.HoldLease(ctx, "reconciler", "b", time.Hour); ok {
		t.Error("a's release ended c's lease")
	}
}

// A node reads back only its own earlier marks at a restart.
func TestMarksAreReadBackByTheirNode(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 1000)
	j := job(acct, 10)
	if _, err := st.AcceptJobs(ctx, []persistence.NewJob{j}); err != nil {
		t.Fatal(err)
	}
	msg := j.Inline[0].ID
	for _, node := range []string{"a", "b"} {
		if _, err := markOne(ctx, st, persistence.NewID(), node, []persistence.SubmitKey{{AccountID: acct, ID: msg}}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := st.Marks(ctx, persistence.NewID(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Marks) != 1 || len(m.Unsettled) != 1 || m.Unsettled[0].ID != msg {
		t.Errorf("node a read %d marks, unsettled %v; want its one mark over %s", len(m.Marks), m.Unsettled, msg)
	}
	marked, err := st.AccountMarks(ctx, acct)
	if err != nil || len(marked) != 1 || marked[0].ID != msg {
		t.Fatalf("the account's marks: %v, %v; want %s once (both nodes' marks cover it)", marked, err, msg)
	}
	if age := marked[0].Age; age < 0 || age > time.Minute {
		t.Errorf("the newest mark's age %s; want the moments since this test wrote it", age)
	}
	if q, err := st.StillQueued(ctx, acct, msg); err != nil || !q {
		t.Errorf("StillQueued of a queued message: %v, %v; want true", q, err)
	}
	if q, err := st.StillQueued(ctx, acct, persistence.NewID()); err != nil || q {
		t.Errorf("StillQueued of no message: %v, %v; want false", q, err)
	}
}
