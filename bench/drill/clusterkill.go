// The cluster-kill drill: three nodes as one cluster on one database, behind HAProxy,
// tenants sending through it with Idempotency-Keys while one node after another is killed
// with kill -9 and started again.

package drill

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// clusterNodes is how many nodes the cluster drills run.
const clusterNodes = 3

// clusterKillDrill: 16 tenants × 2 clients send through HAProxy to three nodes as one cluster;
// every few seconds a random node is killed with SIGKILL and started again. Afterwards every
// accepted message must be final exactly once, every ledger balanced and no key charged
// twice, the resends after kills within the in-flight window, and the requests that failed
// during the kills few.
func clusterKillDrill(ctx context.Context, r *runner, rec *recorder) error {
	const tenantsN, perTenant = 16, 2
	total, kills := r.sizes.ClusterMessages, r.sizes.ClusterKills
	nodes, err := r.cluster(ctx, "cluster-kill", nil)
	if err != nil {
		return err
	}
	front, stop, err := r.haproxy(ctx, "cluster-kill", nodes)
	if err != nil {
		return err
	}
	defer stop()
	c := newClient(front, 256, 60*time.Second, r.secrets)
	tenants, err := r.tenants(ctx, c, "cluster", tenantsN, max(1000, total/tenantsN))
	if err != nil {
		return err
	}
	workers := tenantsN * perTenant
	gap := r.sizes.ClusterKillGap
	window := max(10*time.Second, time.Duration(kills+1)*gap)
	start := time.Now()
	// Small sends, many of them, paced over the window: every kill lands among sends in flight.
	next := pacedPlan(r, tenants, "cluster", []int{100, 10, 1, 50}, workers, total, start, window)
	ld := newLoad(c, 5*time.Minute)
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		ld.run(ctx, workers, next)
	}()
	var resent, unsettled, bound float64
	var restarts []startTimes
	var failed []string
	var served []time.Duration
	for k := range kills {
		at := time.Duration(k+1)*gap + time.Duration(r.float()*float64(gap)/2) - gap/4
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(start.Add(at))):
		}
		n := nodes[r.intN(len(nodes))]
		if m, err := n.c.scrape(ctx); err == nil {
			resent += m.sum(mResent)
			unsettled += m.askedFirst()
			bound += 3 * 256 * m.sum(mJobsActive)
		}
		failedBefore := ld.failures()
		if err := n.kill(); err != nil {
			return err
		}
		served = append(served, servedAgain(ctx, c, tenants))
		st, err := n.start(ctx)
		if err != nil {
			return fmt.Errorf("restart %s after kill %d: %w", n.name, k+1, err)
		}
		restarts = append(restarts, st)
		failed = append(failed, fmt.Sprint(ld.failures()-failedBefore))
		rec.logf("kill -9 %s #%d at %s, %s messages accepted, %d requests failed since the kill: /healthz %s, /readyz %s",
			n.name, k+1, secs(time.Since(start)), count(ld.accepted.Load()), ld.failures()-failedBefore, secs(st.healthz), secs(st.readyz))
	}
	<-loadDone
	outcomes := ld.results()
	accepted := ld.accepted.Load()
	rec.value("messages accepted", float64(accepted), "messages", accepted >= int64(total),
		fmt.Sprintf("%s in %s sends (%s attempts) over %s through HAProxy to %d nodes", count(accepted), count(int64(len(outcomes))),
			count(ld.attempts.Load()), secs(time.Since(start)), len(nodes)), "≥ "+count(int64(total)), "")
	rec.info("answers", float64(ld.attempts.Load()), "attempts", ld.codeList())
	restartRows(rec, restarts, kills)
	worst := slices.Max(append(served, 0))
	rec.value("tenants served after a kill", worst.Seconds(), "s", worst <= 3*time.Second,
		"every tenant's quote answered through HAProxy within "+secs(worst)+" of its node's kill, at worst", "≤ 3 s", "")
	rec.info("failed during kills", float64(ld.failures()), "attempts",
		"5xx or no answer between each kill and its node's restart (each retried with its key): "+strings.Join(failed, ", "))
	pending := map[string]bool{}
	for _, n := range nodes {
		p, err := engineTimeouts(n.logPath)
		if err != nil {
			return fmt.Errorf("read %s's log: %w", n.name, err)
		}
		maps.Copy(pending, p)
	}
	err = r.checkInvariants(ctx, nodes[0], rec, &keyCheck{outcomes: outcomes, lease: 15 * time.Second, pending: pending}, defaultSettling())
	for _, n := range nodes {
		if m, serr := n.c.scrape(ctx); serr == nil {
			resent += m.sum(mResent)
			unsettled += m.askedFirst()
		}
	}
	rec.value("resent after kills", resent, "messages", resent <= max(bound, 3*256),
		fmt.Sprintf("%.0f messages resent without the network able to say if it had them (each node has networks of its own); %.0f asked about first", resent, unsettled),
		fmt.Sprintf("≤ %.0f (3 networks × 256 × jobs dispatching at each kill)", max(bound, 3*256)), "more resends than the in-flight window allows")
	return err
}

// servedAgain asks every tenant for a quote through the front door until each has been
// answered, and returns how long that took: a killed node's tenants are served by the others.
func servedAgain(ctx context.Context, c *client, tenants []*tenant) time.Duration {
	start := time.Now()
	left := slices.Clone(tenants)
	for len(left) > 0 && time.Since(start) < time.Minute && ctx.Err() == nil {
		left = slices.DeleteFunc(left, func(t *tenant) bool {
			// A request HAProxy handed a paused node before it marked it down hangs there: ask
			// again, as a client with a timeout does.
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			return c.do(rctx, "POST", "/sms/quote", map[string]any{"recipients": []string{"0712345678"}, "message": "probe"},
				t.apiKey()...).status == 200
		})
		if len(left) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return time.Since(start)
}

// cluster starts clusterNodes nodes as one cluster on one database (the first node's) and
// Redis prefix, and waits until each serves.
func (r *runner) cluster(ctx context.Context, name string, env map[string]string) ([]*node, error) {
	addrs, err := r.clusterAddrs(clusterNodes)
	if err != nil {
		return nil, err
	}
	var nodes []*node
	for i, a := range addrs {
		vars := map[string]string{"TUMA_CLUSTER_ADDR": a, "TUMA_CLUSTER_PEERS": strings.Join(addrs, ","),
			"TUMA_NODE_ID": fmt.Sprintf("%s-%d", name, i+1)}
		if i > 0 {
			vars["TUMA_DATABASE_URL"], vars["TUMA_REDIS_PREFIX"] = nodes[0].dbURL, nodes[0].env["TUMA_REDIS_PREFIX"]
		}
		maps.Copy(vars, env)
		n, err := r.node(fmt.Sprintf("%s-%d", name, i+1), vars)
		if err != nil {
			return nil, err
		}
		if i == 0 { // it creates and migrates the database
			if _, err := n.start(ctx); err != nil {
				return nil, err
			}
		} else if err := n.launch(); err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	for _, n := range nodes[1:] {
		if _, err := n.waitServing(ctx, n.lastStart()); err != nil {
			return nil, err
		}
	}
	return nodes, formed(ctx, nodes)
}

// formed waits until every node sees all of them as members. A node serves once it sees
// itself; the others see it at their next poll of the members, up to a second later, and
// until then place its accounts on themselves: load sent meanwhile is handed over as the
// placement settles, and a drill about something else (a shared TPS) would measure that.
func formed(ctx context.Context, nodes []*node) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		short := ""
		for _, n := range nodes {
			m, err := n.c.scrape(ctx)
			if err != nil || int(m.sum(mMembers)) != len(nodes) {
				short = fmt.Sprintf("%s sees %.0f members (%v)", n.name, m.sum(mMembers), err)
				break
			}
		}
		if short == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cluster did not form within 30 s: %s", short)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// clusterAddrs picks n cluster addresses on 127.0.0.1 whose port and the next (the node's
// health port) are free, below the kernel's ephemeral range: an outgoing connection (a node's
// SMPP bind) or a port-0 listener given a node's health port before the node binds it kept
// that node out of the cluster ("address already in use", then no join within 30 s).
func (r *runner) clusterAddrs(n int) ([]string, error) {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		_, _ = fmt.Sscan(string(b), &low)
	}
	taken := map[int]bool{}
	var out []string
	for tries := 0; len(out) < n; tries++ {
		if tries > 10_000 {
			return nil, errors.New("no free pair of ports below the ephemeral range for a cluster node")
		}
		p := 10_000 + r.intN(max(low-10_002, 1))
		if taken[p] || taken[p+1] || taken[p-1] || !free(p) || !free(p+1) {
			continue
		}
		taken[p], taken[p+1] = true, true
		out = append(out, fmt.Sprintf("127.0.0.1:%d", p))
	}
	return out, nil
}

// free reports whether a port is free now on every interface (a node's health port binds
// 0.0.0.0).
func free(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("0.0.0.0:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// failures counts the attempts answered 5xx or not at all.
func (l *load) failures() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for code, k := range l.codes {
		if code == 0 || code >= 500 {
			n += k
		}
	}
	return n
}

// haproxy starts HAProxy in front of the nodes, checking each one's /readyz every 500 ms, and
// returns its address and how to stop it (it also dies with the drill's process: left
// running, it would go on checking ports other programs come to use).
func (r *runner) haproxy(ctx context.Context, name string, nodes []*node) (string, func(), error) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		return "", nil, errors.New("the cluster drills need HAProxy (apt-get install haproxy; deploy/dev/test-tools.sh installs it)")
	}
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	var servers strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&servers, "    server %s %s check\n", n.name, strings.TrimPrefix(n.base, "http://"))
	}
	cfg := fmt.Sprintf(`global
    maxconn 4096
defaults
    mode http
    timeout connect 1s
    timeout client 60s
    timeout server 60s
    retries 3
    option redispatch
frontend api
    bind 127.0.0.1:%d
    default_backend nodes
backend nodes
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 500ms fall 2 rise 1
%s`, port, servers.String())
	path := filepath.Join(r.work, name+"-haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return "", nil, err
	}
	logf, err := os.Create(filepath.Join(r.work, name+"-haproxy.log"))
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "-f", path, "-db")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return "", nil, fmt.Errorf("start haproxy: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if newClient(base, 1, time.Second, r.secrets).do(ctx, "GET", "/readyz", nil).status == 200 {
			return base, stop, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			stop()
			return "", nil, fmt.Errorf("haproxy on %s serves no node: see %s", base, logf.Name())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
