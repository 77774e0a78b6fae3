// A network's TPS across nodes: in a cluster every node has a link to each network, and the
// network's cap holds for all of them together. Each link takes its submit slots from one
// schedule per network in Redis (GCRA, persistence/redis.Schedule), a few at a time, so the
// sum over nodes keeps to the cap in every second. Handing every submit to one owner node was
// the other way (notes/wave3.md §2.4); it costs a cross-node message per part, where slots cost
// one Redis round trip per link per sharedHorizon.

package actors

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Slots hands out submit slots of a schedule every node shares (persistence/redis.Schedule).
type Slots interface {
	Reserve(ctx context.Context, key string, every time.Duration, want int, horizon time.Duration) (int, time.Duration, error)
}

const (
	// sharedHorizon: how far ahead a link may hold slots. Short, so that a node with little
	// to send leaves the rest of the rate to the others; long enough for a few slots per ask.
	sharedHorizon = 100 * time.Millisecond
	// slotLateness: a slot not used within this of its time is dropped, so slots a busy link
	// could not use in time never bunch up with the next second's (it bounds the excess in any
	// second to 4 % of the rate).
	slotLateness = 40 * time.Millisecond
	// sharedFallback: how long a link paces on its own share after Redis failed to answer.
	sharedFallback = time.Second
)

// sharedPace is a link's slots of its network's shared schedule.
type sharedPace struct {
	key      string
	every    time.Duration // 1/TPS
	gap      time.Duration // between the slots held: every, or this node's share on a fallback
	next     time.Time     // the next slot held
	left     int           // slots held from next on, every apart
	asking   bool
	askAfter time.Time // none granted: not before this
}

func newSharedPace(network string, tps float64) *sharedPace {
	every := time.Duration(float64(time.Second) / tps)
	return &sharedPace{key: "link:" + network, every: every, gap: every}
}

// take uses a slot if one is due now. Otherwise it says when to look again (zero: when more
// slots come, asking for them unless already asking).
func (s *sharedPace) take(now time.Time) (time.Time, bool) {
	if s.left > 0 && now.Sub(s.next) > slotLateness {
		late := int((now.Sub(s.next)-slotLateness)/s.gap) + 1
		s.left = max(s.left-late, 0)
		s.next = s.next.Add(time.Duration(late) * s.gap)
	}
	switch {
	case s.left == 0 && !s.asking && now.Before(s.askAfter):
		return s.askAfter, false
	case s.left == 0: // ask (unless asking: the answer wakes the link)
		return time.Time{}, false
	case now.Before(s.next):
		return s.next, false
	}
	s.next = s.next.Add(s.gap)
	s.left--
	return time.Time{}, true
}

// slotsGranted is a schedule's answer, through the link's inbox.
type slotsGranted struct {
	n        int
	first    time.Time // the first slot (n > 0), or when to ask again
	fallback bool      // Redis did not answer: slots of this node's share, made here
}

// askSlots asks the network's schedule for slots, on an owned goroutine. When Redis does not
// answer, the link paces on its share of the rate (the members it sees) for a while.
func (l *linkActor) askSlots(ctx actor.Context, want int) {
	st, e := l.st, l.e
	sp := st.shared
	sp.asking = true
	self, root := ctx.Self(), e.root
	horizon := max(sharedHorizon, sp.every)
	want = min(want, int(horizon/sp.every))
	e.goIO(time.Second, func(c context.Context) {
		n, first, err := e.slots.Reserve(c, sp.key, sp.every, max(want, 1), horizon)
		now := time.Now()
		g := &slotsGranted{n: n, first: now.Add(first)}
		if err != nil {
			g = &slotsGranted{n: max(int(sharedFallback/(sp.every*time.Duration(max(e.Members(), 1)))), 1), first: now, fallback: true}
			if errors.Is(err, context.Canceled) { // the engine is stopping
				g = &slotsGranted{first: now.Add(time.Second)}
			}
		}
		st.inbox.put(root, self, g)
	})
}

// granted adopts a schedule's answer.
func (l *linkActor) granted(g *slotsGranted) {
	sp := l.st.shared
	sp.asking = false
	if g.n == 0 {
		sp.askAfter = g.first
		return
	}
	sp.next, sp.left, sp.gap = g.first, g.n, sp.every
	if g.fallback {
		// Its share of the rate: slots members × every apart, for sharedFallback.
		sp.gap = sp.every * time.Duration(max(l.e.Members(), 1))
		if !l.st.sharedDown {
			l.e.log.Warn("carrier link: the shared schedule in Redis did not answer; pacing on this node's share of the rate",
				slog.String("network", l.st.label), slog.Int("members", l.e.Members()))
		}
	}
	l.st.sharedDown = g.fallback
}
