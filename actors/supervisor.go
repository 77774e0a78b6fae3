package actors

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
)

// supervisorActor is the engine's root: it spawns and supervises the fixed actors, spawns
// tenants on demand and forgets them when they stop.
type supervisorActor struct {
	e       *Engine
	ready   chan struct{}
	tenants map[uuid.UUID]*actor.PID
	byPID   map[string]uuid.UUID
}

func (s *supervisorActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		s.tenants, s.byPID = map[uuid.UUID]*actor.PID{}, map[string]uuid.UUID{}
		e := s.e
		if e.writers != nil {
			// A restart: the children live on under the same PIDs; relearn the tenants.
			e.tenants.Range(func(k, v any) bool {
				pid := v.(*actor.PID)
				s.tenants[k.(uuid.UUID)], s.byPID[pid.Id] = pid, k.(uuid.UUID)
				ctx.Watch(pid)
				return true
			})
			return
		}
		for i := range e.opts.AcceptShards {
			wstate := &writerState{}
			e.writers = append(e.writers, spawnFixed(ctx, e, fmt.Sprintf("writer-%d", i),
				func() actor.Actor { return &writerActor{e: e, writerState: wstate} }))
		}
		for i := range e.opts.ReceiptsShards {
			rstate := &receiptsState{}
			e.receipts = append(e.receipts, spawnFixed(ctx, e, fmt.Sprintf("receipts-%d", i),
				func() actor.Actor { return &receiptsActor{e: e, st: rstate} }))
		}
		for _, n := range carriers.Networks() {
			st := newLinkState(e, n)
			e.links[n] = spawnFixed(ctx, e, "link-"+n.String(), func() actor.Actor { return &linkActor{e: e, st: st} })
		}
		e.reconciler = spawnFixed(ctx, e, "reconciler", func() actor.Actor { return &reconcilerActor{e: e} })
		close(s.ready)
	case *getTenant:
		pid, ok := s.tenants[msg.id]
		if !ok {
			id := msg.id
			var err error
			pid, err = ctx.SpawnNamed(s.e.props(func() actor.Actor { return &tenantActor{e: s.e, id: id} }), "tenant-"+id.String())
			if err != nil {
				ctx.Respond(fmt.Errorf("spawn tenant: %w", err))
				return
			}
			ctx.Watch(pid)
			s.tenants[id], s.byPID[pid.Id] = pid, id
			s.e.tenants.Store(id, pid)
			s.e.m.tenants.Inc()
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
	}
}

func (s *supervisorActor) forget(id uuid.UUID, pid *actor.PID) {
	delete(s.tenants, id)
	delete(s.byPID, pid.Id)
	if s.e.tenants.CompareAndDelete(id, pid) {
		s.e.m.tenants.Dec()
	}
}

func spawnFixed(ctx actor.Context, e *Engine, name string, producer actor.Producer) *actor.PID {
	pid, err := ctx.SpawnNamed(e.props(producer), name)
	if err != nil {
		panic(fmt.Sprintf("spawn %s: %v", name, err)) // names are fixed; a clash is a programming error
	}
	return pid
}
