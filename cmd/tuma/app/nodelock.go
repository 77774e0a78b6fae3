// The node lock: a single node holds its database alone; a cluster's nodes share it, each
// with a node id of its own.

package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/tuma-sms/tuma/persistence"
)

// nodeLockCheck is how often the lock's connection is checked, and how soon a lost one is
// reopened.
const nodeLockCheck = 2 * time.Second

// WithoutNodeLock lets the node share its database with another node (tests that check what
// crosses nodes, such as cache invalidation through Redis). Two such nodes both dispatch the
// database's open jobs, so nothing but those tests may use it.
func WithoutNodeLock() Option { return func(a *App) { a.shareDatabase = true } }

// nodeName is how this node names itself to PostgreSQL, and so to a node refused because of it.
func (a *App) nodeName() string {
	host, _ := os.Hostname()
	return "tuma " + a.Addr() + " pid " + strconv.Itoa(os.Getpid()) + " on " + host
}

// lockNode takes the node lock and keeps it in the background until stopLock; a lock taken
// by another node in a database outage ends the node through lockLost.
func (a *App) lockNode(ctx context.Context) error {
	if a.shareDatabase {
		return nil
	}
	member := "" // a single node holds the database alone; a cluster's nodes share it, fenced
	if a.cfg.ClusterAddr != "" {
		member = a.cfg.NodeID
	}
	a.front.SetStage("taking the node lock")
	lock, err := persistence.LockNode(ctx, a.cfg.DatabaseURL, a.nodeName(), member, a.cfg.NodeLockWait)
	var running *persistence.NodeRunningError
	if errors.As(err, &running) {
		return err
	}
	if err != nil {
		return fmt.Errorf("postgresql: %w: %w", errUnreachable, err)
	}
	kctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	a.lock, a.stopLock = lock, func() { cancel(); <-done; lock.Close() }
	go func() {
		defer close(done)
		if err := lock.Keep(kctx, nodeLockCheck); err != nil {
			a.log.Error("stopping: this node no longer holds its database", slog.Any("error", err))
			a.lockLost <- err
		}
	}()
	return nil
}

// unlockNode stops keeping the lock and releases it.
func (a *App) unlockNode() {
	if a.stopLock != nil {
		a.stopLock()
		a.lock, a.stopLock = nil, nil
	}
}
