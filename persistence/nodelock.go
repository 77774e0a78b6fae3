// Node lock: one node per database unless they run as a cluster. Two nodes started on one
// database both resume its open jobs and dispatch them (measured: 34,739 of 114,739
// submissions sent twice), so a single node holds a PostgreSQL advisory lock on a connection
// of its own for its whole life, and a second one refuses to start. A cluster's nodes hold the
// same lock shared (a single node beside them is refused, and refuses them), and each its
// node id's lock alone: two nodes with one TUMA_NODE_ID would take each other's submits for
// their own and send them again.

package persistence

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// nodeLockKey is the advisory lock a single node holds ("tumanode" in ASCII). Advisory locks
// are scoped to their database, so nodes of other databases on the same server do not meet.
const nodeLockKey int64 = 0x74756d616e6f6465

// ErrNodeLockLost is returned by NodeLock.Keep when the lock's connection was lost and another
// node took the lock before this one could take it back: this node must stop dispatching.
var ErrNodeLockLost = errors.New("the node lock was taken by another node while this one was disconnected")

// NodeRunningError says which node holds the database, as PostgreSQL knows it.
type NodeRunningError struct {
	Holder string     // the holder's application_name: "tuma <http address> pid <n> on <host>"
	Client netip.Addr // where it connects from; invalid over a Unix socket
	Since  time.Time  // when its lock connection was opened
	// SameID: the holder is a cluster node with this node's TUMA_NODE_ID ("": the holder is a
	// single node, or a cluster beside this single node).
	SameID string
}

func (e *NodeRunningError) Error() string {
	from := ""
	if e.Client.IsValid() {
		from = " from " + e.Client.String()
	}
	if e.SameID != "" {
		return fmt.Sprintf("another node of the cluster has TUMA_NODE_ID %q: %q%s, up since %s; two nodes with one id "+
			"send each other's messages twice: give this one an id of its own", e.SameID, e.Holder, from, e.Since.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("another Tuma node is running on this database: %q%s, up since %s; "+
		"several nodes on one database send messages twice unless all run as one cluster (TUMA_CLUSTER_ADDR): stop that node, "+
		"or give this one its own TUMA_DATABASE_URL", e.Holder, from, e.Since.UTC().Format(time.RFC3339))
}

// NodeLock is this node's hold on its database.
type NodeLock struct {
	url    string
	name   string
	member string // a cluster node's id; "": a single node

	mu   sync.Mutex
	conn *pgx.Conn // nil while lost
}

// LockNode takes the node lock on the database at url, naming this node name (PostgreSQL's
// application_name, at most 63 bytes). While another node holds it, it tries again every
// quarter second for up to wait (a node killed a moment ago leaves its lock until PostgreSQL
// notices), then returns a *NodeRunningError naming the holder.
//
// member is a cluster node's id (TUMA_NODE_ID): the lock is then taken shared, with the id's
// own; "" is a single node's.
func LockNode(ctx context.Context, url, name, member string, wait time.Duration) (*NodeLock, error) {
	l := &NodeLock{url: url, name: truncate(name, 63), member: member}
	deadline := time.Now().Add(wait)
	for {
		conn, err := l.connect(ctx)
		if err != nil {
			return nil, err
		}
		held, err := l.take(ctx, conn)
		if err == nil && held {
			l.conn = conn
			return l, nil
		}
		if err == nil {
			err = l.holder(ctx, conn)
		}
		conn.Close(context.Background())
		var running *NodeRunningError
		if !errors.As(err, &running) || time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (l *NodeLock) connect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(l.url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	cfg.RuntimeParams["application_name"] = l.name
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("node lock: connect: %w", err)
	}
	return conn, nil
}

// take takes the lock on conn: alone for a single node; shared, with its id's alone, for a
// cluster's. A lock not taken stays with conn, which the caller then closes.
func (l *NodeLock) take(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var held bool
	q, args := `SELECT pg_try_advisory_lock($1)`, []any{nodeLockKey}
	if l.member != "" {
		q, args = `SELECT pg_try_advisory_lock_shared($1) AND pg_try_advisory_lock(`+memberKey+`)`, []any{nodeLockKey, l.member}
	}
	if err := conn.QueryRow(ctx, q, args...).Scan(&held); err != nil {
		return false, fmt.Errorf("node lock: %w", err)
	}
	return held, nil
}

// memberKey is the advisory lock of the cluster node id $2.
const memberKey = `hashtextextended('tuma-node:' || $2::text, 0)`

// holder describes the session holding what this node could not take as a *NodeRunningError:
// another node with its id, else the node holding the database alone, or one of the cluster's.
func (l *NodeLock) holder(ctx context.Context, conn *pgx.Conn) error {
	if l.member != "" {
		if err := holderOf(ctx, conn, strings.ReplaceAll(memberKey, "$2", "$1"), l.member); err != nil {
			var e *NodeRunningError
			if errors.As(err, &e) && e.Holder != "" {
				e.SameID = l.member
			}
			return err
		}
	}
	return holderOf(ctx, conn, `$1::bigint`, nodeLockKey)
}

// holderOf describes the session holding the advisory lock keyExpr (of $1) as a
// *NodeRunningError; nil when none holds it (a cluster node: its id's lock is free).
func holderOf(ctx context.Context, conn *pgx.Conn, keyExpr string, arg any) error {
	e := &NodeRunningError{}
	var client *netip.Addr
	err := conn.QueryRow(ctx, `SELECT a.application_name, a.client_addr, a.backend_start
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND a.pid <> pg_backend_pid() AND l.objsubid = 1 AND ((l.classid::bigint << 32) | l.objid::bigint) = `+keyExpr+`
		ORDER BY a.backend_start LIMIT 1`, arg).Scan(&e.Holder, &client, &e.Since)
	if errors.Is(err, pgx.ErrNoRows) { // released between the two statements, or free
		if keyExpr != `$1::bigint` {
			return nil // a cluster node's id: free
		}
		e.Holder = "(a node that has just stopped)"
		return e
	}
	if err != nil {
		return fmt.Errorf("node lock: who holds it: %w", err)
	}
	if client != nil {
		e.Client = *client
	}
	return e
}

// Keep holds the lock until ctx ends, checking its connection every interval. A lost
// connection (PostgreSQL restarted, a network fault) is reopened and the lock taken again;
// if another node took it meanwhile Keep returns ErrNodeLockLost.
func (l *NodeLock) Keep(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := l.check(ctx, interval); err != nil {
			return err
		}
	}
}

// check pings the lock's connection, or, when it was lost, tries once to take the lock back.
func (l *NodeLock) check(ctx context.Context, timeout time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if l.conn != nil {
		if err := l.conn.Ping(cctx); err == nil {
			return nil
		}
		l.conn.Close(context.Background())
		l.conn = nil
	}
	conn, err := l.connect(cctx)
	if err != nil {
		return nil // still unreachable: nobody else can take it through a database that is down
	}
	held, err := l.take(cctx, conn)
	if err != nil {
		conn.Close(context.Background())
		return nil
	}
	if !held {
		err := l.holder(cctx, conn)
		conn.Close(context.Background())
		return fmt.Errorf("%w: %w", ErrNodeLockLost, err)
	}
	l.conn = conn
	return nil
}

// Lost reports whether the lock's connection is down (for readiness and logs).
func (l *NodeLock) Lost() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn == nil
}

// Close releases the lock by closing its connection.
func (l *NodeLock) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		l.conn.Close(context.Background())
		l.conn = nil
	}
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
