package persistence_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

// A cluster's nodes share the database, each with an id of its own: a second node with a
// taken id is refused naming it, and so is a single node beside the cluster, or a cluster
// node beside a single one.
func TestNodeLockOfClusterNodes(t *testing.T) {
	_, url := pgtest.NewStore(t)
	ctx := context.Background()
	lock := func(name, member string) (*persistence.NodeLock, error) {
		l, err := persistence.LockNode(ctx, url, name, member, 0)
		if err == nil {
			t.Cleanup(l.Close)
		}
		return l, err
	}
	n1, err := lock("tuma node-1", "node-1")
	if err != nil {
		t.Fatal(err)
	}
	n2, err := lock("tuma node-2", "node-2")
	if err != nil {
		t.Fatalf("a second cluster node: %v", err)
	}
	var running *persistence.NodeRunningError
	if _, err := lock("tuma node-1 again", "node-1"); !errors.As(err, &running) || running.SameID != "node-1" || running.Holder != "tuma node-1" {
		t.Fatalf("a node with a taken id: %v; want it refused naming tuma node-1", err)
	}
	if _, err := lock("tuma single", ""); !errors.As(err, &running) || running.SameID != "" || running.Holder != "tuma node-1" {
		t.Fatalf("a single node beside the cluster: %v; want it refused", err)
	}
	n1.Close()
	n2.Close()
	if _, err := lock("tuma single", ""); err != nil {
		t.Fatalf("a single node once the cluster stopped: %v", err)
	}
	if _, err := lock("tuma node-3", "node-3"); !errors.As(err, &running) || running.Holder != "tuma single" {
		t.Fatalf("a cluster node beside a single node: %v; want it refused naming it", err)
	}
}
