// The cluster-tps drill: three nodes share one network whose cap is 100 submits a second,
// and the one SMSC they all bind to counts what it accepted in each second.

package drill

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// clusterTPS is the cap the drill gives Safaricom on every node.
const clusterTPS = 100

// clusterTPSDrill: tenants on every node send to Safaricom only, through HAProxy, far more
// than a second's worth; the SMSC must see at most 105 submits in every second (the cap
// +5 %), the nodes together must use the cap (a fair share is no use if it starves), and each
// message must be accepted once.
func clusterTPSDrill(ctx context.Context, r *runner, rec *recorder) error {
	total := r.sizes.ClusterTPSMessages
	smsc, err := r.smsc(ctx, "cluster-tps")
	if err != nil {
		return err
	}
	defer smsc.stop()
	env := smsc.env()
	env["TUMA_LINK_TPS"] = fmt.Sprintf("safaricom=%d", clusterTPS)
	nodes, err := r.cluster(ctx, "cluster-tps", env)
	if err != nil {
		return err
	}
	front, stop, err := r.haproxy(ctx, "cluster-tps", nodes)
	if err != nil {
		return err
	}
	defer stop()
	c := newClient(front, 64, 60*time.Second, r.secrets)
	const tenantsN, size = 12, 100 // 12 accounts: every node owns some
	tenants, err := r.tenants(ctx, c, "tps", tenantsN, 1000)
	if err != nil {
		return err
	}
	start := time.Now()
	var sends []send
	for i := 0; i*size < total; i++ {
		sends = append(sends, send{t: tenants[i%tenantsN], key: fmt.Sprintf("tps-%s-%d", r.id, i), n: size,
			body: sendBodyOn(i*size, size, "Drill: one network, three nodes", []int{0})})
	}
	ld := newLoad(c, 2*time.Minute)
	var mu sync.Mutex
	var next int
	ld.run(ctx, 8, func(int) (send, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next == len(sends) {
			return send{}, false
		}
		next++
		return sends[next-1], true
	})
	accepted := ld.accepted.Load()
	rec.value("messages accepted", float64(accepted), "messages", accepted >= int64(total),
		fmt.Sprintf("%s to Safaricom in %d sends through HAProxy in %s", count(accepted), len(sends), secs(time.Since(start))), "≥ "+count(int64(total)), "")
	err = r.checkInvariants(ctx, nodes[0], rec, &keyCheck{outcomes: ld.results()}, defaultSettling())
	st, serr := smsc.stats(ctx)
	if serr != nil {
		return serr
	}
	var per []int
	for _, s := range st.Seconds {
		if s.Second >= start.Unix() {
			per = append(per, s.Submits)
		}
	}
	if len(per) < 3 {
		return fmt.Errorf("the SMSC saw submits in only %d seconds", len(per))
	}
	worst := slices.Max(per)
	// A submit whose slot passed while its mark was written takes a new one as it goes, so a
	// slow (cold) mark write does not bunch submits: the slots' lateness bounds the excess.
	rec.value("submits in a second, at worst", float64(worst), "submits", worst <= clusterTPS*105/100,
		fmt.Sprintf("the SMSC's busiest second of %d: %d submits (cap %d over 3 nodes); each second: %v", len(per), worst, clusterTPS, per),
		fmt.Sprintf("≤ %d", clusterTPS*105/100), "the nodes together exceed the network's TPS")
	middle := slices.Clone(per[1 : len(per)-1]) // the first and last seconds are partial
	slices.Sort(middle)
	median := middle[len(middle)/2]
	rec.value("submits in a second, median", float64(median), "submits", median >= clusterTPS*85/100,
		fmt.Sprintf("over the %d full seconds: %d–%d", len(middle), middle[0], middle[len(middle)-1]),
		fmt.Sprintf("≥ %d (the cap used, not starved)", clusterTPS*85/100), "the nodes leave the network's rate unused")
	var shares []string
	busy := 0
	for _, n := range nodes {
		m, err := n.c.scrape(ctx)
		if err != nil {
			return fmt.Errorf("scrape %s: %w", n.name, err)
		}
		v := m.sum("tuma_messages_submitted_total")
		if v > 0 {
			busy++
		}
		shares = append(shares, fmt.Sprintf("%s %.0f", n.name, v))
	}
	rec.check("nodes sending", busy >= 2, strings.Join(shares, ", "), "≥ 2 nodes submit", "one node did all the sending: the drill proves nothing")
	return errors.Join(err, r.submittedOnce(ctx, nodes[0], rec, st, 0))
}

// submittedOnce compares what the SMSC accepted with the parts of the messages the networks
// took: each once, but for at most allowed (resends the nodes counted).
func (r *runner) submittedOnce(ctx context.Context, n *node, rec *recorder, st smscStats, allowed int64) error {
	db, err := n.db(ctx)
	if err != nil {
		return err
	}
	defer db.Close(context.WithoutCancel(ctx))
	var parts int64
	if err := db.QueryRow(ctx, `SELECT coalesce(sum(parts), 0) FROM messages WHERE provider_message_id IS NOT NULL`).Scan(&parts); err != nil {
		return err
	}
	twice := st.Submits - parts
	rec.value("sent twice", float64(twice), "submits", twice >= 0 && twice <= allowed,
		fmt.Sprintf("the SMSC accepted %s submits for %s parts of messages it took", count(st.Submits), count(parts)),
		fmt.Sprintf("≤ %d (the counted blind resends)", allowed), "submits twice the drill cannot account for")
	return nil
}
