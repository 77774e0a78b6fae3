package actors

import (
	"fmt"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
)

// supervisorActor is the engine's root: it spawns and supervises the fixed actors, spawns
// tenants on demand and forgets them when they stop.
//
// When it is itself restarted (after a panic), protoactor has stopped every child first. It
// spawns the fixed actors again under the same names, on the same states (their queues and
// what they hold survive; results of I/O that finished meanwhile wait in their inboxes), and
// the recovery actor wakes every tenant with unfinished work again: tenants reload their
// state and resume their jobs from the store.
type supervisorActor struct {
	e       *Engine
	tenants map[uuid.UUID]*actor.PID
	byPID   map[string]uuid.UUID
}

func (s *supervisorActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		s.start(ctx)
	case *getTenant:
		pid, ok := s.tenants[msg.id]
		if !ok {
			var err error
			if pid, err = s.spawnTenant(ctx, msg.id); err != nil {
				ctx.Respond(err)
				return
			}
		}
		ctx.Respond(pid)
	case *passivating:
		if pid, ok := s.tenants[msg.id]; ok && pid.Equal(ctx.Sender()) {
			s.forget(msg.id, pid)
			ctx.Stop(pid)
		}
	case *actor.Terminated:
		if id, ok := s.byPID[msg.Who.Id]; ok {
			s.forget(id, msg.Who)
		}
	case *panicNow:
		panic("supervisor: panic requested")
	}
}

func (s *supervisorActor) start(ctx actor.Context) {
	e := s.e
	s.tenants, s.byPID = map[uuid.UUID]*actor.PID{}, map[string]uuid.UUID{}
	// After a restart the tenants of the previous incarnation are gone (stopped with it).
	e.tenants.Range(func(k, _ any) bool {
		e.tenants.Delete(k)
		return true
	})
	e.m.tenants.Set(0)
	st := e.fixed
	for i, ws := range st.writers {
		spawnFixed(ctx, e, e.writers[i], func() actor.Actor { return &writerActor{e: e, writerState: ws} })
	}
	for i, rs := range st.receipts {
		spawnFixed(ctx, e, e.receipts[i], func() actor.Actor { return &receiptsActor{e: e, st: rs} })
	}
	for _, n := range carriers.Networks() {
		ls := st.links[n]
		spawnFixed(ctx, e, e.links[n], func() actor.Actor { return &linkActor{e: e, st: ls} })
	}
	spawnFixed(ctx, e, e.progress, func() actor.Actor { return &progressActor{e: e, st: st.progress} })
	spawnFixed(ctx, e, e.sweeper, func() actor.Actor { return &sweeperActor{e: e, st: st.sweeper} })
	spawnFixed(ctx, e, e.recovery, func() actor.Actor { return &recoveryActor{e: e, st: st.recovery} })
	e.readyOnce.Do(func() { close(e.ready) })
}

func (s *supervisorActor) spawnTenant(ctx actor.Context, id uuid.UUID) (*actor.PID, error) {
	e := s.e
	// The tenant's in-flight bookkeeping survives the tenant's own restarts (see tenantPending).
	pending := &tenantPending{}
	pid, err := ctx.SpawnNamed(e.props(func() actor.Actor { return &tenantActor{e: e, id: id, pending: pending} }), "tenant-"+id.String())
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
	if s.e.tenants.CompareAndDelete(id, pid) {
		s.e.m.tenants.Dec()
	}
}

// spawnFixed spawns a fixed child at the PID the engine computed for it from its name, so
// the engine's PIDs stay valid across respawns.
func spawnFixed(ctx actor.Context, e *Engine, want *actor.PID, producer actor.Producer) {
	name := want.Id[strings.LastIndexByte(want.Id, '/')+1:]
	pid, err := ctx.SpawnNamed(e.props(producer), name)
	if err != nil || !pid.Equal(want) {
		panic(fmt.Sprintf("spawn %s: %v (got %v)", want.Id, err, pid)) // names are fixed: a programming error
	}
}
