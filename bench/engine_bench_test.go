package bench

// The engine benchmarks: a whole node in this process, driven over HTTP on loopback, against
// the simulated networks with no TPS cap. `make bench` runs each in its own process.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkAccept10k measures the time to a durable 202 for 10,000-recipient sends arriving
// every 500 ms, i.e. 20,000 messages/s offered (the dispatch target), so every send is
// accepted while the engine is busy dispatching the earlier ones. Target: p50 ≤ 20 ms, p99 ≤ 60 ms.
func BenchmarkAccept10k(b *testing.B) { benchAccept(b, 100, 500*time.Millisecond) }

// BenchmarkAccept10kFlood sends 200 10,000-recipient batches back to back: far more than any
// engine can dispatch (millions of messages queue up), to show how acceptance degrades.
func BenchmarkAccept10kFlood(b *testing.B) { benchAccept(b, 200, 0) }

func benchAccept(b *testing.B, sends int, every time.Duration) {
	n := startNode(b, nil)
	accts := n.accounts(8, 1_000_000)
	bodies := make([][]byte, sends)
	for i := range bodies {
		bodies[i] = sendBody(10_000, i*10_000)
	}
	var lat []time.Duration
	b.ResetTimer()
	next := time.Now()
	for i := range sends {
		time.Sleep(time.Until(next))
		next = next.Add(every)
		a := accts[i%len(accts)]
		start := time.Now()
		st, body := n.do("POST", "/sms/send", bodies[i], "X-API-Key", a.key)
		lat = append(lat, time.Since(start))
		if st != 202 {
			b.Fatalf("send: %d %s", st, body)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99_ms")
	b.ReportMetric(float64(percentile(lat, 1).Microseconds())/1000, "max_ms")
	n.logMeans("tuma_http_request_duration_seconds", `route="/sms/send"`)
	n.logMeans("tuma_db_batch_duration_seconds", `op="accept"`)
}

// BenchmarkDispatch1M measures end-to-end dispatch: 100 sends of 10,000 recipients, from the
// first request until every message is delivered (queued → sent → delivered, each durable).
// Target: ≥ 20,000 messages/s. Also reports the peak RSS of the whole process.
func BenchmarkDispatch1M(b *testing.B) {
	// Receipts come 200 ms after the submit, so sent and delivered are separate durable writes.
	n := startNode(b, map[string]string{"TUMA_SIM_RECEIPT_DELAY": "200ms"})
	accts := n.accounts(10, 1_000_000)
	const jobs, per = 100, 10_000
	bodies := make([][]byte, jobs)
	for i := range bodies {
		bodies[i] = sendBody(per, i*per)
	}
	stop := make(chan struct{})
	peak := peakRSS(stop)
	b.ResetTimer()
	cpu := readCPU()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range 4 { // four clients pushing batches
		wg.Go(func() {
			for i := c; i < jobs; i += 4 {
				if st, body := n.do("POST", "/sms/send", bodies[i], "X-API-Key", accts[i%len(accts)].key); st != 202 {
					b.Errorf("send: %d %s", st, body)
				}
			}
		})
	}
	wg.Wait()
	accepted := time.Since(start)
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var delivered float64
		for _, a := range accts {
			delivered += n.stats(a)["delivered"]
		}
		if delivered == jobs*per {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %v of %d delivered", delivered, jobs*per)
		}
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cpu.report(b)
	close(stop)
	b.ReportMetric(jobs*per/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(jobs*per/accepted.Seconds(), "accepted_msgs/s")
	b.ReportMetric(<-peak, "peak_rss_MB")
	for _, op := range []string{"expand", "receipts", "progress"} {
		n.logMeans("tuma_db_batch_duration_seconds", `op="`+op+`"`)
		n.logMeans("tuma_db_batch_size", `op="`+op+`"`)
	}
	n.logTableStats()
}

// BenchmarkSmallSends measures 1-recipient sends from 64 concurrent clients spread over 256
// accounts: durable 202s per second, while every accepted message is also dispatched through
// to delivered on the same two cores.
func BenchmarkSmallSends(b *testing.B) { benchSmallSends(b, nil) }

// BenchmarkSmallSendsAccept is BenchmarkSmallSends with dispatch held back (every link capped
// at 1 submit/s, so messages wait queued): the accept path alone, group commit included.
// Target: ≥ 8,000 durable sends/s.
func BenchmarkSmallSendsAccept(b *testing.B) {
	benchSmallSends(b, map[string]string{"TUMA_LINK_TPS": "1"})
}

func benchSmallSends(b *testing.B, env map[string]string) {
	n := startNode(b, env)
	accts := n.accounts(256, 100_000)
	const clients, perClient = 64, 600
	var ok atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	cpu := readCPU()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			local := make([]time.Duration, 0, perClient)
			for i := range perClient {
				a := accts[(c*perClient+i)%len(accts)]
				body := []byte(fmt.Sprintf(`{"recipients":["07%08d"],"message":"Your code is %06d"}`, 10_000_000+c*perClient+i, i))
				t0 := time.Now()
				st, resp := n.do("POST", "/sms/send", body, "X-API-Key", a.key)
				local = append(local, time.Since(t0))
				if st != 202 {
					b.Errorf("send: %d %s", st, resp)
					return
				}
				ok.Add(1)
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	cpu.report(b)
	b.ReportMetric(float64(ok.Load())/elapsed.Seconds(), "sends/s")
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99_ms")
	n.logMeans("tuma_http_request_duration_seconds", `route="/sms/send"`)
	n.logMeans("tuma_engine_accept_duration_seconds", "")
	n.logMeans("tuma_db_batch_duration_seconds", `op="accept"`)
}

// BenchmarkQueuedMemory accepts 1,000,000 messages while every network takes only 50
// submits a second, so they stay queued, and reports the process's peak RSS. Target: < 300 MB.
func BenchmarkQueuedMemory(b *testing.B) {
	n := startNode(b, map[string]string{"TUMA_LINK_TPS": "50"})
	accts := n.accounts(10, 1_000_000)
	const jobs, per = 100, 10_000
	stop := make(chan struct{})
	peak := peakRSS(stop)
	b.ResetTimer()
	for i := range jobs {
		if st, body := n.do("POST", "/sms/send", sendBody(per, i*per), "X-API-Key", accts[i%len(accts)].key); st != 202 {
			b.Fatalf("send: %d %s", st, body)
		}
	}
	// Wait until every job is expanded and its messages are in the engine's queues.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var queued float64
		for _, a := range accts {
			queued += n.stats(a)["queued"]
		}
		if queued >= jobs*per-10_000 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // hold the backlog while sampling RSS
	b.StopTimer()
	close(stop)
	var queued float64
	for _, a := range accts {
		queued += n.stats(a)["queued"]
	}
	b.ReportMetric(queued, "queued_msgs")
	b.ReportMetric(<-peak, "peak_rss_MB")
}
