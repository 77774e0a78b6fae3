// protoactor's cluster at the pinned version races with itself (MemberList.UpdateClusterTopology
// writes the members while the gossip actor reads them), so the race detector fails any test
// that runs a member in process. These tests run without it (`make test` runs them on their
// own); the drills run the nodes as processes.

//go:build !race

package actors_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
)

// clusterAddrs finds n addresses on 127.0.0.1 whose port and the next (its health port) are
// free, below the kernel's ephemeral range: an outgoing connection or a port-0 listener given
// a node's health port before the node binds it would keep that node out of the cluster.
func clusterAddrs(t *testing.T, n int) []string {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		_, _ = fmt.Sscan(string(b), &low)
	}
	taken := map[int]bool{}
	var out []string
	for tries := 0; len(out) < n; tries++ {
		if tries > 10_000 {
			t.Fatal("no free pair of ports below the ephemeral range")
		}
		port := 10_000 + rand.IntN(max(low-10_002, 1))
		if taken[port] || taken[port+1] || taken[port-1] || !freeOn(port, "127.0.0.1") || !freeOn(port+1, "0.0.0.0") {
			continue
		}
		taken[port], taken[port+1] = true, true
		out = append(out, fmt.Sprintf("127.0.0.1:%d", port))
	}
	return out
}

// freeOn reports whether port is free on host now.
func freeOn(port int, host string) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("%s:%d", host, port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// node is one engine of an in-process cluster.
type node struct {
	eng *actors.Engine
	reg *prometheus.Registry
}

// cluster starts n engines on the world's store and networks as one cluster (the world's own
// engine is not part of it: it is stopped first). tune edits each node's options.
func (w *world) cluster(n int, tune func(*actors.Options)) []node {
	w.t.Helper()
	_ = w.eng.Stop(context.Background())
	addrs := clusterAddrs(w.t, n)
	nodes := make([]node, n)
	for i := range n {
		o := actors.Options{NodeID: fmt.Sprintf("node-%d", i), Cluster: actors.ClusterOptions{Addr: addrs[i], Peers: addrs}}
		if tune != nil {
			tune(&o)
		}
		eng, reg := w.secondNode(o)
		nodes[i] = node{eng: eng, reg: reg}
	}
	w.sims.Deliver(nodes[0].eng.Receipt)
	eventually(w.t, 30*time.Second, "every node to see the others", func() (bool, string) {
		seen := ""
		all := true
		for _, nd := range nodes {
			seen += fmt.Sprintf(" %d", nd.eng.Members())
			all = all && nd.eng.Members() == n
		}
		return all, "members seen:" + seen
	})
	return nodes
}

func sumMetric(t *testing.T, nodes []node, name string, labels map[string]string) float64 {
	s := 0.0
	for _, nd := range nodes {
		s += metricOf(t, nd.reg, name, labels)
	}
	return s
}

// Sends for many accounts through every node: each account's tenant lives on one node, every
// message goes out once, and each account is debited once per send.
func TestClusterSendsEachAccountFromOneNode(t *testing.T) {
	w := newWorld(t, actors.Options{}, nil)
	nodes := w.cluster(3, nil)
	const accounts, per = 12, 40
	var accts []uuid.UUID
	cost := map[uuid.UUID]int64{}
	for i := range accounts {
		a := w.account(1000_00)
		accts = append(accts, a)
		for j := range 3 { // the same account through each node's front door
			res, err := nodes[(i+j)%3].eng.Send(context.Background(), actors.SendRequest{AccountID: a,
				Recipients: recipients(per, carriers.NetworkUnknown, uint64(i*10+j)), Message: "one of many", Source: "api"})
			if err != nil {
				t.Fatalf("send for account %d through node %d: %v", i, (i+j)%3, err)
			}
			cost[a] += res.CostCents
		}
		q, err := nodes[(i+1)%3].eng.Quote(context.Background(), actors.SendRequest{AccountID: a, Message: "x"})
		if err != nil || q.Parts != 1 {
			t.Fatalf("quote through another node: %+v, %v", q, err)
		}
	}
	w.waitAllFinal(accounts*3*per, time.Minute)
	if got := w.accepted(); got != accounts*3*per {
		t.Fatalf("the networks accepted %d submits for %d messages; want each once", got, accounts*3*per)
	}
	for _, a := range accts {
		if got, want := w.balance(a), int64(1000_00)-cost[a]; got != want {
			t.Errorf("account %s balance %d; want %d", a, got, want)
		}
	}
	if n := sumMetric(t, nodes, "tuma_engine_tenants_active", nil); n != accounts {
		t.Errorf("%v tenants alive across the nodes; want %d, one per account", n, accounts)
	}
	if n := sumMetric(t, nodes, "tuma_cluster_messages_total", map[string]string{"kind": "received"}); n == 0 {
		t.Error("no command crossed nodes")
	}
	if n := sumMetric(t, nodes, "tuma_cluster_fenced_writes_total", nil); n != 0 {
		t.Errorf("%v writes fenced in a steady cluster; want none", n)
	}
}

// A node that stops while its accounts have jobs in progress: the others take its accounts
// over and finish the jobs, each message sent once.
func TestClusterTakesOverAStoppedNodesJobs(t *testing.T) {
	w := newWorld(t, actors.Options{}, slowNetworks)
	nodes := w.cluster(3, func(o *actors.Options) {
		// Paced links mark up to half a second of sending ahead: asked at once, the network
		// would not know those yet (about 50 at 100/s), so the new owners wait the settle.
		p := paced(o.NodeID, 100)
		o.Links, o.TakeoverSettle = p.Links, p.TakeoverSettle
	})
	const accounts, per = 6, 150
	for i := range accounts {
		a := w.account(1000_00)
		if _, err := nodes[i%3].eng.Send(context.Background(), actors.SendRequest{AccountID: a,
			Recipients: recipients(per, carriers.NetworkUnknown, uint64(i)), Message: "in flight", Source: "api"}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "sending to be under way", func() (bool, string) {
		return w.accepted() >= 50, fmt.Sprint(w.accepted())
	})
	w.sims.Deliver(nodes[1].eng.Receipt)
	if err := nodes[0].eng.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.waitAllFinal(accounts*per, time.Minute)
	if got := w.accepted(); got != accounts*per {
		t.Fatalf("the networks accepted %d submits for %d messages; want each once", got, accounts*per)
	}
}
