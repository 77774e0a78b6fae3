package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
)

// PanicLink makes a network's link actor panic, to exercise its supervision (tests only).
func PanicLink(e *Engine, n carriers.Network) { e.root.Send(e.links[n], &panicNow{}) }

// PanicReceipts makes the first receipts shard panic (tests only).
func PanicReceipts(e *Engine) { e.root.Send(e.receipts[0], &panicNow{}) }

// PanicSupervisor makes the engine's root actor panic: every actor is stopped and respawned.
func PanicSupervisor(e *Engine) { e.root.Send(e.supervisor, &panicNow{}) }

// PanicTenant makes an account's tenant actor panic, if it is alive; it reports whether it was.
func PanicTenant(e *Engine, account uuid.UUID) bool {
	pid, ok := e.tenants.Load(account)
	if ok {
		e.root.Send(pid.(*actor.PID), &panicNow{})
	}
	return ok
}

// TenantName is the name of an account's live tenant actor, if any.
func TenantName(e *Engine, account uuid.UUID) (string, bool) {
	pid, ok := e.tenants.Load(account)
	if !ok {
		return "", false
	}
	return pid.(*actor.PID).Id, true
}

// Lapse makes the engine act as a node paused past its limit would on waking (tests only).
func Lapse(e *Engine) {
	dog := newWatchdog(time.Second)
	dog.born = dog.born.Add(-time.Minute)
	e.dog.Store(dog)
}
