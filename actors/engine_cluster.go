// Several nodes as one (DESIGN §8): protoactor's cluster (automanaged membership, disthash
// placement) gives each account one owner node, and the engine routes the account's commands
// there. Placement decides where a tenant should live, not who may spend or send: that is the
// fences' job (persistence/fences.go), so a node that wakes from a pause with its old tenants
// can do no harm.

package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/google/uuid"
	"github.com/labstack/echo"
	"google.golang.org/protobuf/types/known/emptypb"
)

// ClusterOptions place the node among others (CONTRACT §16). A zero value is a single node.
type ClusterOptions struct {
	Addr  string   // host:port this node's actor system listens on for the other nodes
	Peers []string // every node's Addr, this one included
	// Join bounds how long Start waits to see this node in the cluster's membership (30s).
	Join time.Duration
	// PauseLimit: a node that stopped running for longer (a pause, a frozen VM) stops acting
	// on its view of the cluster and asks to be restarted (engine_lapse.go); 0 turns it off.
	PauseLimit time.Duration
}

func (o ClusterOptions) on() bool { return o.Addr != "" }

// HealthAddr is where a node's membership provider answers the others' health checks: its
// cluster port plus one.
func HealthAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p >= 65535 {
		return "", fmt.Errorf("cluster address %q: the port must be 1-65534 (the next one is its health port)", addr)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+1)), nil
}

// tenantKind is the cluster kind of tenants; an account's identity is its id.
const tenantKind = "tenant"

// errMoved: the account's owner changed while a command was on its way; the caller asks again
// where it lives.
var errMoved = errors.New("the account's owner node changed; ask again")

// clusterState is the engine's view of the cluster.
type clusterState struct {
	c       *cluster.Cluster
	rdv     atomic.Pointer[cluster.Rendezvous] // the placement of the last topology; nil before the first
	members atomic.Int64
	joined  chan struct{}
	once    sync.Once
	grains  sync.Map    // uuid.UUID → *actor.PID: accounts' grains on other nodes, until the topology changes
	calls   calls       // requests waiting for other nodes' answers
	left    atomic.Bool // leave has handed the node's accounts over
}

// errMemberGone answers a request whose node left the cluster before answering: the outcome
// is unknown (ErrBusy), and waiting out the timeout would not make it known.
var errMemberGone = fmt.Errorf("%w: the account's node left the cluster before answering", ErrBusy)

// calls are the futures of requests to other nodes, by node address, so that a node's
// departure answers them at once.
type calls struct {
	mu     sync.Mutex
	byAddr map[string]map[*actor.PID]struct{}
}

func (c *calls) add(addr string, f *actor.PID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byAddr == nil {
		c.byAddr = map[string]map[*actor.PID]struct{}{}
	}
	if c.byAddr[addr] == nil {
		c.byAddr[addr] = map[*actor.PID]struct{}{}
	}
	c.byAddr[addr][f] = struct{}{}
}

func (c *calls) remove(addr string, f *actor.PID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byAddr[addr], f)
	if len(c.byAddr[addr]) == 0 {
		delete(c.byAddr, addr)
	}
}

// gone takes the futures waiting on a node.
func (c *calls) gone(addr string) []*actor.PID {
	c.mu.Lock()
	defer c.mu.Unlock()
	fs := make([]*actor.PID, 0, len(c.byAddr[addr]))
	for f := range c.byAddr[addr] {
		fs = append(fs, f)
	}
	delete(c.byAddr, addr)
	return fs
}

// startCluster joins the node to the cluster and waits until it sees itself a member.
func (e *Engine) startCluster(opts ClusterOptions) (err error) {
	host, portS, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return fmt.Errorf("cluster address: %w", err)
	}
	port, err := strconv.Atoi(portS)
	if err != nil {
		return fmt.Errorf("cluster address %q: %w", opts.Addr, err)
	}
	health, err := HealthAddr(opts.Addr)
	if err != nil {
		return err
	}
	_, healthPort, _ := net.SplitHostPort(health)
	hp, _ := strconv.Atoi(healthPort)
	var peers []string
	for _, p := range opts.Peers {
		h, err := HealthAddr(p)
		if err != nil {
			return err
		}
		peers = append(peers, h)
	}
	kind := cluster.NewKind(tenantKind, actor.PropsFromProducer(func() actor.Actor { return &tenantGrain{e: e} }))
	healthSrv, err := e.healthServer(hp)
	if err != nil {
		return err
	}
	cfg := cluster.Configure(clusterName, automanaged.NewWithTesting(time.Second, hp, healthSrv, peers...), disthash.New(),
		remote.Configure(host, port), cluster.WithKinds(kind), cluster.WithRequestTimeout(e.opts.CommandTimeout))
	cl := &clusterState{joined: make(chan struct{})}
	e.cl = cl
	cl.c = cluster.New(e.sys, cfg)
	e.sys.EventStream.Subscribe(func(evt any) {
		if t, ok := evt.(*cluster.ClusterTopology); ok {
			e.topologyChanged(t)
		}
	})
	// StartMember ends with a fixed sleep of a second (protoactor's, "let the cluster settle"):
	// this node joins once it sees itself among the members, not a second later.
	failed := make(chan error, 1)
	e.io.Add(1)
	go func() {
		defer e.io.Done()
		defer func() {
			if p := recover(); p != nil { // StartMember panics when the provider cannot start
				failed <- fmt.Errorf("join the cluster: %v", p)
			}
		}()
		cl.c.StartMember()
	}()
	join := opts.Join
	if join <= 0 {
		join = 30 * time.Second
	}
	select {
	case <-cl.joined:
		e.startWatchdog(opts.PauseLimit)
		return nil
	case err := <-failed:
		return err
	case <-time.After(join):
		return fmt.Errorf("join the cluster: this node (%s) did not appear among the members within %s", opts.Addr, join)
	}
}

// clusterName is the protoactor cluster's name: members of another name are not ours.
const clusterName = "tuma"

// healthServer is the automanaged provider's /_health endpoint, listening before the member
// starts. Left to the provider, the server started on a goroutine while the first poll of the
// members ran at once, missed this node and joining waited a whole refresh (a second of every
// restart's /readyz, bench/RESULTS.md 2026-11-27); bound here, the kernel holds that first
// poll's connection until the provider serves it (it starts this server, listener and all).
func (e *Engine) healthServer(port int) (*echo.Echo, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("0.0.0.0", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("cluster health port: %w", err)
	}
	srv := echo.New()
	srv.HideBanner, srv.HidePort, srv.Listener = true, true, ln
	srv.GET("/_health", func(c echo.Context) error {
		host, p, err := e.sys.GetHostPort()
		if err != nil {
			return c.NoContent(http.StatusServiceUnavailable)
		}
		// What the provider itself answers (its getCurrentNode).
		return c.JSON(http.StatusOK, automanaged.NewNode(clusterName, e.sys.ID, host, p, port, e.cl.c.GetClusterKinds()))
	})
	return srv, nil
}

// topologyChanged adopts a new membership: placements move, tenants this node no longer owns
// stop, and recovery wakes the accounts with unfinished jobs that it now owns.
func (e *Engine) topologyChanged(t *cluster.ClusterTopology) {
	cl := e.cl
	r := cluster.NewRendezvous()
	r.UpdateMembers(t.Members)
	cl.rdv.Store(r)
	cl.members.Store(int64(len(t.Members)))
	e.m.members.Set(float64(len(t.Members)))
	cl.grains.Clear()
	for _, m := range t.Left {
		for _, f := range cl.calls.gone(m.Address()) {
			e.root.Send(f, errMemberGone) // the future takes it as its answer
		}
	}
	for _, m := range t.Members {
		if m.Address() == e.sys.Address() {
			cl.once.Do(func() { close(cl.joined) })
		}
	}
	e.log.Info("cluster membership changed", slog.Int("members", len(t.Members)), slog.Int("joined", len(t.Joined)),
		slog.Int("left", len(t.Left)))
	if e.readyOnceDone() { // before, the actors start with this placement already
		e.root.Send(e.supervisor, &placementChanged{})
		e.root.Send(e.recovery, &rewake{placement: true})
	}
}

// owns reports whether this node holds the account's tenant: always for a single node.
func (e *Engine) owns(id uuid.UUID) bool {
	if e.cl == nil {
		return true
	}
	r := e.cl.rdv.Load()
	return r != nil && r.GetByClusterIdentity(cluster.NewClusterIdentity(id.String(), tenantKind)) == e.sys.Address()
}

// grain is the account's tenant grain on its owner node.
func (e *Engine) grain(id uuid.UUID) (*actor.PID, error) {
	if pid, ok := e.cl.grains.Load(id); ok {
		return pid.(*actor.PID), nil
	}
	pid := e.cl.c.Get(id.String(), tenantKind)
	if pid == nil {
		return nil, ErrBusy // no member owns it right now (the cluster is forming)
	}
	e.cl.grains.Store(id, pid)
	return pid, nil
}

// remoteRequest sends a command to the account's owner node and waits for its answer.
func (e *Engine) remoteRequest(ctx context.Context, id uuid.UUID, msg any) (any, error) {
	w, err := wireCommand(id, msg)
	if err != nil {
		return nil, err
	}
	pid, err := e.grain(id)
	if err != nil {
		return nil, err
	}
	e.m.crossNode.WithLabelValues("request").Inc()
	f, err := e.future(ctx, pid, w)
	if err != nil {
		return nil, err
	}
	e.cl.calls.add(pid.Address, f.PID())
	res, err := futureResult(f)
	e.cl.calls.remove(pid.Address, f.PID())
	if err != nil {
		if errors.Is(err, actor.ErrDeadLetter) {
			e.cl.grains.CompareAndDelete(id, pid)
			return nil, errMoved
		}
		return nil, err
	}
	return wireReplyOf(res)
}

// remoteTell hands a command that needs no answer to the account's owner node.
func (e *Engine) remoteTell(id uuid.UUID, msg any) {
	w, err := wireCommand(id, msg)
	if err != nil {
		e.log.Error("send to another node", slog.String("account_id", id.String()), slog.Any("error", err))
		return
	}
	e.goIO(e.opts.CommandTimeout, func(context.Context) {
		pid, err := e.grain(id)
		if err != nil {
			e.log.Warn("send to the account's node", slog.String("account_id", id.String()), slog.Any("error", err))
			return
		}
		e.m.crossNode.WithLabelValues("tell").Inc()
		e.root.Send(pid, w)
	})
}

// Members is how many nodes the cluster has now (1 for a single node; 0 while joining).
func (e *Engine) Members() int {
	if e.cl == nil {
		return 1
	}
	return int(e.cl.members.Load())
}

// leaveWait is how long a draining node keeps serving the accounts it owns after it has told
// the others it is leaving: their membership checks run every second.
const leaveWait = 2 * time.Second

// leave hands the node's accounts over before it drains: it tells the others it is going and
// closes its health endpoint, so they evict it at their next check and take its accounts (their
// tenants take the fences, and this node's tenants stop at their next write), and meanwhile it
// goes on serving what they still route here rather than answering 503.
func (e *Engine) leave(ctx context.Context) {
	if e.cl == nil || e.cl.c == nil || e.cl.c.Remote == nil || e.lapsed() {
		return // a lapsed node has been evicted already
	}
	c := e.cl.c
	c.Gossip.SetState(cluster.GracefullyLeftKey, &emptypb.Empty{})
	_ = c.Config.ClusterProvider.Shutdown(true)
	e.cl.left.Store(true)
	e.log.Info("leaving the cluster: the others take this node's accounts over while it drains", slog.Duration("wait", leaveWait))
	select {
	case <-time.After(leaveWait):
	case <-ctx.Done():
	}
}

// stopCluster leaves the cluster, telling the others, once the engine's actors are down; it
// shuts the actor system down with it.
func (e *Engine) stopCluster() {
	if e.cl != nil && e.cl.c != nil && e.cl.c.Remote != nil {
		// Having left (leave), there is no ownership left to wait for.
		e.cl.c.Shutdown(!e.cl.left.Load())
		return
	}
	e.sys.Shutdown()
}
