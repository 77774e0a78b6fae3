// A tenant's quiet hours (CONTRACT §15): its promotional jobs do not dispatch inside them.
// They wait in the store, not in memory: accepted then, or resumed then, they are left there;
// running when the hours begin, they hand back what no link has taken and stop. When the
// hours end the tenant walks its unfinished jobs again and queues them like any other.

package actors

import (
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
)

type (
	// quietTick: look at the quiet hours again (an edge, or QuietCheck, has passed).
	quietTick struct{}
	// holdJob tells a job the quiet hours began: a promotional one stops dispatching.
	holdJob struct{}
	// jobHeld: a promotional job stopped for the quiet hours; its messages wait in the store.
	jobHeld struct{ id uuid.UUID }
)

// NotInfluenceReceiveTimeout: the tick alone must not keep an idle tenant alive.
func (*quietTick) NotInfluenceReceiveTimeout() {}

// quietWatch is what a tenant knows of its quiet hours beyond the account's window.
type quietWatch struct {
	quiet bool // inside the window when last looked at
	held  bool // promotional jobs wait in the store for the window to end
	armed bool // a quietTick is on its way
}

// quietNow reports whether the account's promotional messages must wait now.
func (t *tenantActor) quietNow() bool {
	return t.quiet != nil && t.quiet.Contains(t.e.opts.Now())
}

// optOutSuffix is what a promotional message's text gets appended: a space and the account's
// opt-out text, unless the text already says it (in any case).
func (t *tenantActor) optOutSuffix(text string) string {
	if t.optOut == "" || strings.Contains(strings.ToUpper(text), strings.ToUpper(t.optOut)) {
		return ""
	}
	return " " + t.optOut
}

// holdBack notes that promotional jobs wait in the store for the quiet hours to end.
func (t *tenantActor) holdBack(ctx actor.Context) {
	t.quietWatch.held = true
	t.checkQuiet(ctx)
}

// checkQuiet acts on where the clock is in the quiet hours: entering them, the running jobs
// are told (the promotional ones stop); outside them, the jobs held back are walked to again.
func (t *tenantActor) checkQuiet(ctx actor.Context) {
	w := &t.quietWatch
	quiet := t.quietNow()
	if quiet && !w.quiet {
		for _, pid := range t.live {
			ctx.Send(pid, &holdJob{})
		}
	}
	w.quiet = quiet
	if !quiet && w.held {
		w.held = false
		t.walkAgain(ctx)
	}
	if t.quiet == nil || w.armed {
		return
	}
	now := t.e.opts.Now()
	w.armed = true
	t.timers.after(t.e.root, ctx.Self(), min(t.quiet.Next(now).Sub(now)+time.Millisecond, t.e.opts.QuietCheck), &quietTick{})
}

// jobHeld frees the slot of a promotional job that stopped for the quiet hours.
func (t *tenantActor) jobHeld(ctx actor.Context, id uuid.UUID) {
	delete(t.resume.seen, id)
	delete(t.dispatching, id)
	delete(t.cancelled, id)
	delete(t.live, id)
	delete(t.handedOff, id)
	t.holdBack(ctx)
	t.startJobs(ctx)
}
