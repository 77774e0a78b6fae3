// The cluster-pause drill: a node of three is stopped with SIGSTOP for longer than the others
// wait on its health checks, so they evict it and take its accounts over; then SIGCONT. It
// must notice, refuse every write its old view would make, and exit to be restarted.

package drill

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"
)

// clusterPauseDrill: 16 tenants × 2 clients send through HAProxy with Idempotency-Keys while
// nodes are paused in turn. Afterwards every message final once, every ledger balanced, no
// key charged twice, and the SMSC accepted each part once but for the blind resends of what
// was in flight at a move (counted, within the windows): the paused node sent nothing when it
// woke.
func clusterPauseDrill(ctx context.Context, r *runner, rec *recorder) error {
	const tenantsN, perTenant = 16, 2
	total, pauses, hold := r.sizes.ClusterMessages/2, r.sizes.ClusterPauses, r.sizes.ClusterPauseFor
	smsc, err := r.smsc(ctx, "cluster-pause")
	if err != nil {
		return err
	}
	defer smsc.stop()
	nodes, err := r.cluster(ctx, "cluster-pause", smsc.env())
	if err != nil {
		return err
	}
	front, stop, err := r.haproxy(ctx, "cluster-pause", nodes)
	if err != nil {
		return err
	}
	defer stop()
	c := newClient(front, 256, 60*time.Second, r.secrets)
	tenants, err := r.tenants(ctx, c, "pause", tenantsN, max(1000, total/tenantsN))
	if err != nil {
		return err
	}
	workers := tenantsN * perTenant
	gap := r.sizes.ClusterKillGap
	window := max(10*time.Second, time.Duration(pauses+1)*(gap+hold))
	start := time.Now()
	next := pacedPlan(r, tenants, "pause", []int{100, 10, 1, 50}, workers, total, start, window)
	ld := newLoad(c, 5*time.Minute)
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		ld.run(ctx, workers, next)
	}()
	var served, exits []time.Duration
	var codes []string
	for k := range pauses {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(start.Add(time.Duration(k+1)*gap + time.Duration(k)*hold))):
		}
		n := nodes[r.intN(len(nodes))]
		if err := n.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		stopped := time.Now()
		served = append(served, servedAgain(ctx, c, tenants))
		time.Sleep(time.Until(stopped.Add(hold)))
		if err := n.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			return err
		}
		woke := time.Now()
		select {
		case <-n.exited:
			codes = append(codes, fmt.Sprint(n.state.ExitCode()))
		case <-time.After(15 * time.Second): // it goes on with its old view: end it, as an operator would
			_ = n.kill()
			codes = append(codes, "none in 15 s")
		}
		exits = append(exits, time.Since(woke))
		st, err := n.start(ctx) // as its supervisor would, on exit status 75
		if err != nil {
			return fmt.Errorf("restart %s after pause %d: %w", n.name, k+1, err)
		}
		rec.logf("kill -STOP %s #%d at %s for %s; tenants served again after %s; exit %s %s after SIGCONT; restarted, /readyz %s",
			n.name, k+1, secs(stopped.Sub(start)), secs(hold), secs(served[k]), codes[k], secs(exits[k]), secs(st.readyz))
	}
	<-loadDone
	accepted := ld.accepted.Load()
	rec.value("messages accepted", float64(accepted), "messages", accepted >= int64(total),
		fmt.Sprintf("%s in %s sends over %s through HAProxy to %d nodes", count(accepted), count(int64(len(ld.results()))),
			secs(time.Since(start)), len(nodes)), "≥ "+count(int64(total)), "")
	rec.info("answers", float64(ld.attempts.Load()), "attempts", ld.codeList())
	worst := slices.Max(append(served, 0))
	rec.value("tenants served during a pause", worst.Seconds(), "s", worst <= 5*time.Second,
		"every tenant's quote answered through HAProxy within "+secs(worst)+" of its node's SIGSTOP, at worst", "≤ 5 s (2 s to evict)", "")
	allRestart := !slices.ContainsFunc(codes, func(c string) bool { return c != "75" })
	rec.value("woken node exits", slices.Max(append(exits, 0)).Seconds(), "s", allRestart && len(codes) == pauses,
		fmt.Sprintf("%d pauses of %s: exit statuses %s after SIGCONT, within %s at worst", pauses, secs(hold), strings.Join(codes, ", "),
			secs(slices.Max(append(exits, 0)))), "75 (restart to rejoin), each", "a paused node went on with its old view")
	var stops int
	var refused, commands int64
	pending := map[string]bool{}
	for _, n := range nodes {
		s, f, cmds, err := lapses(n.logPath)
		if err != nil {
			return fmt.Errorf("read %s's log: %w", n.name, err)
		}
		stops, refused, commands = stops+s, refused+f, commands+cmds
		p, err := engineTimeouts(n.logPath)
		if err != nil {
			return err
		}
		maps.Copy(pending, p)
	}
	rec.value("lapsed stops", float64(stops), "stops", stops == pauses,
		fmt.Sprintf("%d lapsed nodes stopped, refusing %d commands and %d writes (debits, marks, submits) their old view tried", stops, commands, refused),
		fmt.Sprint(pauses), "")
	err = r.checkInvariants(ctx, nodes[0], rec, &keyCheck{outcomes: ld.results(), lease: 15 * time.Second, pending: pending}, defaultSettling())
	st, serr := smsc.stats(ctx)
	if serr != nil {
		return errors.Join(err, serr)
	}
	// SMPP cannot be asked whether it took a message it never answered for: what a node had in
	// flight when it paused is resent by the account's new owner (and what the others had in
	// flight when it rejoined, by it), at most each network's window per move.
	var resent float64
	for _, n := range nodes {
		m, err := n.c.scrape(ctx)
		if err != nil {
			return errors.Join(err, fmt.Errorf("scrape %s: %w", n.name, err))
		}
		resent += m.sum(mResent)
	}
	bound := float64(2 * pauses * 3 * clusterWindow)
	rec.value("resent without asking", resent, "messages", resent <= bound,
		fmt.Sprintf("%.0f messages marked by a paused (or moved) node resent by the account's new owner (SMPP cannot say whether it had them)", resent),
		fmt.Sprintf("≤ %.0f (2 moves × %d pauses × 3 networks × window %d)", bound, pauses, clusterWindow), "more resends than the windows in flight")
	return errors.Join(err, r.submittedOnce(ctx, nodes[0], rec, st, int64(resent)))
}

// clusterWindow is TUMA_LINK_WINDOW's default: a link's submits in flight.
const clusterWindow = 256
