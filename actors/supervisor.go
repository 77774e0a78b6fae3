package actors

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
)

// supervisorActor owns the tenants: it spawns them on demand, forgets them when they stop,
// and supervises them (a panicking tenant is restarted and resumes its jobs from the store).
//
// The fixed actors (writers, receipts, links, progress, sweeper, recovery) are not its
// children: each is a top-level actor restarted on its own, because stopping one would drop
// the mail it has not read yet (outcomes of submits, commits to answer), and only its own
// restart keeps its mailbox. So when this actor is restarted after a panic, protoactor stops
// the tenants (and their jobs) only: everything they held is in the store, and the recovery
// actor wakes every tenant with unfinished work again.
type supervisorActor struct {
	e       *Engine
	tenants map[uuid.UUID]*actor.PID
	byPID   map[string]uuid.UUID
}

// To the supervisor.
type (
	// getTenant → *actor.PID of the tenant, spawned if needed. orphan: asked by the orphan
	// sweep (recovery_sweep.go), which a spawn means found jobs nobody ran.
	getTenant struct {
		id     uuid.UUID
		orphan bool
	}
	// passivating: a tenant with nothing to do (or fenced) asks to be stopped. It names
	// itself: a Send carries no sender, and a successor may hold the account by then.
	passivating struct {
		id  uuid.UUID
		pid *actor.PID
	}
	// toTenant is delivered to an account's tenant, spawned if needed. The supervisor owns
	// tenant PIDs, and holds its mail while it restarts, so nothing sent this way falls into
	// the gap between a tenant's death and its successor.
	toTenant struct {
		account uuid.UUID
		msg     any
	}
	// placementChanged: the cluster's membership changed; tenants of accounts another node
	// owns now retire.
	placementChanged struct{}
)

func (s *supervisorActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		s.start(ctx)
	case *getTenant:
		if !s.e.owns(msg.id) { // a retiring tenant takes no new commands either
			ctx.Respond(errMoved)
			return
		}
		pid, ok := s.tenants[msg.id]
		if !ok {
			var err error
			if pid, err = s.spawnTenant(ctx, msg.id); err != nil {
				ctx.Respond(err)
				return
			}
			if msg.orphan {
				s.e.m.orphans.Inc()
				s.e.log.Warn("recovery sweep: an account of this node had unfinished jobs and no tenant; woke it",
					slog.String("account_id", msg.id.String()))
			}
		}
		ctx.Respond(pid)
	case *toTenant:
		pid, ok := s.tenants[msg.account]
		if !ok && !s.e.owns(msg.account) {
			s.forward(msg)
			return
		}
		if !ok {
			var err error
			if pid, err = s.spawnTenant(ctx, msg.account); err != nil {
				s.e.log.Error("deliver to a tenant", slog.String("account_id", msg.account.String()), slog.Any("error", err))
				return
			}
		}
		ctx.Send(pid, msg.msg)
	case *placementChanged:
		for id, pid := range s.tenants {
			if !s.e.owns(id) {
				ctx.Send(pid, &retire{})
			}
		}
	case *passivating:
		if pid, ok := s.tenants[msg.id]; ok && pid.Equal(msg.pid) {
			s.forget(msg.id, pid)
			ctx.Stop(pid)
		}
	case *actor.Terminated:
		if id, ok := s.byPID[msg.Who.Id]; ok && msg.Who.Equal(s.tenants[id]) {
			s.forget(id, msg.Who)
		}
	case *panicNow:
		panic("supervisor: panic requested")
	}
}

// forward hands what was meant for a tenant another node owns to that node, when it is a
// command the cluster carries; the rest (answers to a tenant that retired) has nobody to go to.
func (s *supervisorActor) forward(msg *toTenant) {
	switch m := msg.msg.(type) {
	case *startJob, *walletChanged:
		s.e.remoteTell(msg.account, m)
	case *acceptDone:
		// Its tenant retired with the send uncommitted and stopped before the answer came (a
		// restart of this supervisor): the caller times out, and its retry finds the outcome.
	}
}

func (s *supervisorActor) start(ctx actor.Context) {
	e := s.e
	s.tenants, s.byPID = map[uuid.UUID]*actor.PID{}, map[string]uuid.UUID{}
	// After a restart the tenants of the previous incarnation are gone (stopped with it), and
	// recovery wakes the ones with unfinished work.
	restarted := false
	e.tenants.Range(func(k, _ any) bool {
		e.tenants.Delete(k)
		restarted = true
		return true
	})
	e.m.tenants.Set(0)
	if restarted || s.e.readyOnceDone() {
		ctx.Send(e.recovery, &rewake{})
	}
	e.readyOnce.Do(func() { close(e.ready) })
}

func (s *supervisorActor) spawnTenant(ctx actor.Context, id uuid.UUID) (*actor.PID, error) {
	e := s.e
	// The tenant's in-flight bookkeeping survives the tenant's own restarts (see tenantPending).
	pending := &tenantPending{}
	// Each incarnation has a name of its own: one stopping (idle, retired) may still hold its
	// name when its successor starts, and its Terminated must not be taken for the successor's;
	// nor may anything sent to a stopped one's jobs reach the successor's (a link telling a
	// job of the supervisor's previous incarnation that its submits were fenced).
	name := fmt.Sprintf("tenant-%s-%d", id, e.spawns.Add(1))
	pid, err := ctx.SpawnNamed(e.props(func() actor.Actor { return &tenantActor{e: e, id: id, pending: pending} }), name)
	if err != nil {
		return nil, fmt.Errorf("spawn tenant: %w", err)
	}
	ctx.Watch(pid)
	s.tenants[id], s.byPID[pid.Id] = pid, id
	e.tenants.Store(id, pid)
	e.m.tenants.Inc()
	return pid, nil
}

func (s *supervisorActor) forget(id uuid.UUID, pid *actor.PID) {
	delete(s.tenants, id)
	delete(s.byPID, pid.Id)
	s.e.tenants.CompareAndDelete(id, pid) // the tenant may have done it as it stopped
	s.e.m.tenants.Dec()
}

// spawnFixed spawns a fixed actor at the top level, at the PID the engine computed for it
// from its name, so the engine's PIDs stay valid across its restarts. Its guardian restarts
// it however often it fails, each time after a longer pause (100 ms more per failure within a
// minute): a fixed actor holds work nobody else can do, so it is never stopped the way
// protoactor's default guardian stops an actor failing ten times in ten seconds.
func spawnFixed(e *Engine, want *actor.PID, producer actor.Producer) {
	props := e.props(producer).Configure(actor.WithGuardian(actor.NewExponentialBackoffStrategy(time.Minute, 100*time.Millisecond)))
	pid, err := e.root.SpawnNamed(props, want.Id)
	if err != nil || !pid.Equal(want) {
		panic(fmt.Sprintf("spawn %s: %v (got %v)", want.Id, err, pid)) // names are fixed: a programming error
	}
}
