package actors

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// timerActor arms a timer on every start and counts the ticks it receives, by incarnation.
type timerActor struct {
	timers      timers
	incarnation *atomic.Int32
	ticks       *[2]atomic.Int32
}

type tick struct{ incarnation int32 }

func (a *timerActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		n := a.incarnation.Add(1)
		a.timers.after(ctx.ActorSystem().Root, ctx.Self(), 100*time.Millisecond, &tick{incarnation: n})
	case *actor.Restarting, *actor.Stopping:
		a.timers.stop()
	case *tick:
		a.ticks[m.incarnation-1].Add(1)
	case *panicNow:
		panic("restart me")
	}
}

// A timer armed by an actor dies with the incarnation that armed it: after a restart only the
// new incarnation's timer fires.
func TestTimersDieWithTheirActor(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	var incarnation atomic.Int32
	var ticks [2]atomic.Int32
	pid := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &timerActor{incarnation: &incarnation, ticks: &ticks}
	}))
	sys.Root.Send(pid, &panicNow{}) // restarted well before its first timer is due
	deadline := time.Now().Add(5 * time.Second)
	for ticks[1].Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the new incarnation's timer never fired")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := ticks[0].Load(); n != 0 {
		t.Fatalf("the first incarnation's timer fired %d times after its restart; want 0", n)
	}
}

func TestStoppedTimersNeverFire(t *testing.T) {
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	var got atomic.Int32
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*tick); ok {
			got.Add(1)
		}
	}))
	var ts timers
	ts.after(sys.Root, pid, 20*time.Millisecond, &tick{})
	ts.stop()
	ts.after(sys.Root, pid, 0, &tick{}) // armed after stop: ignored
	time.Sleep(100 * time.Millisecond)  // long enough for either timer to have fired
	if n := got.Load(); n != 0 || ts.pending() != 0 {
		t.Fatalf("%d ticks, %d pending after stop; want none", n, ts.pending())
	}
}
