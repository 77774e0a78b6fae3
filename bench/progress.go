package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// Phases of a run, as the progress display names them.
const (
	phaseSetup = "setup"
	phaseLoad  = "load"
	phaseDrain = "drain"
)

// progress shows a run's phase and counters: a bar redrawn in place on a terminal, plain
// lines every few seconds otherwise (logs and pipes should not fill with redraws).
type progress struct {
	w        io.Writer
	tty      bool
	cfg      Config
	lv       *live
	accounts int
	phase    atomic.Pointer[phaseState]
	quit     chan struct{}
	done     chan struct{}
}

type phaseState struct {
	name  string
	start time.Time
	prev  *phaseState // the phase before, which ended at start
}

// isTerminal reports whether w is a character device (a terminal), not a file or pipe.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// startProgress draws until stop. Nothing else may write to w until then.
func startProgress(w io.Writer, cfg Config, lv *live) *progress {
	p := &progress{w: w, tty: isTerminal(w), cfg: cfg, lv: lv, accounts: cfg.Accounts,
		quit: make(chan struct{}), done: make(chan struct{})}
	p.setPhase(phaseSetup)
	go p.loop(p.phase.Load())
	return p
}

// setPhase starts a phase. Only the run's own goroutine calls it.
func (p *progress) setPhase(name string) {
	p.phase.Store(&phaseState{name: name, start: time.Now(), prev: p.phase.Load()})
}

// stop draws the last state and returns once the display is finished.
func (p *progress) stop() {
	close(p.quit)
	<-p.done
}

// loop draws from the phase shown on, until stop.
func (p *progress) loop(shown *phaseState) {
	defer close(p.done)
	every := 2 * time.Second
	if p.tty {
		every = 200 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	p.draw(shown, time.Now())
	for {
		stopping := false
		select {
		case <-p.quit:
			stopping = true
		case <-t.C:
		}
		ph := p.phase.Load()
		// Finish every phase that ended since the last draw, at the moment it ended, so its
		// last line shows its final counts (a phase may have come and gone between ticks).
		var ended []*phaseState
		for q := ph; q != shown && q.prev != nil; q = q.prev {
			ended = append(ended, q)
		}
		for i := len(ended) - 1; i >= 0; i-- {
			p.draw(ended[i].prev, ended[i].start)
			if p.tty {
				fmt.Fprintln(p.w)
			}
		}
		shown = ph
		p.draw(ph, time.Now())
		if stopping {
			if p.tty {
				fmt.Fprintln(p.w)
			}
			return
		}
	}
}

func (p *progress) draw(ph *phaseState, now time.Time) {
	line := p.line(ph, now)
	if p.tty {
		fmt.Fprintf(p.w, "\r\x1b[2K%s", line)
		return
	}
	fmt.Fprintln(p.w, line)
}

// line renders one state of the run.
func (p *progress) line(ph *phaseState, now time.Time) string {
	elapsed := now.Sub(ph.start)
	lv := p.lv
	switch ph.name {
	case phaseSetup:
		n := lv.ready.Load()
		return fmt.Sprintf("setup %s %d/%d accounts", bar(float64(n)/float64(p.accounts)), n, p.accounts)
	case phaseLoad:
		frac := elapsed.Seconds() / p.cfg.Duration.Seconds()
		if p.cfg.Scenario == ScenarioThrottled {
			frac = 0 // the backlog is sent at once; the drain shows its egress
		}
		return fmt.Sprintf("load  %s %5.1fs/%s  requests %s  accepted %s msgs  errors %s",
			bar(frac), elapsed.Seconds(), p.cfg.Duration, count(lv.requests.Load()), count(lv.accepted.Load()),
			count(lv.errors.Load()))
	default:
		acc, fin := lv.accepted.Load(), lv.final.Load()
		return fmt.Sprintf("drain %s %5.1fs  final %s/%s msgs", bar(ratio(float64(fin), float64(acc))),
			elapsed.Seconds(), count(fin), count(acc))
	}
}

// bar draws a fraction (clamped to 0..1) 20 cells wide.
func bar(frac float64) string {
	const width = 20
	n := int(min(max(frac, 0), 1) * width)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

// count writes n with thousands separators.
func count(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
