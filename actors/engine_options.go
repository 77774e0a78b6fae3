// Options: how the engine is tuned, with the defaults it takes for zero values.

package actors

import (
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

// LinkOptions configures one network's link.
type LinkOptions struct {
	TPS            float64       // submits per second (0: no cap of ours)
	Window         int           // most submits in flight (marking or submitted)
	MaxAttempts    int           // submits of one message before it fails (temporary failures)
	BreakerTimeout time.Duration // how long an open breaker stays open before probing
	BreakerMinReqs uint32        // requests in the breaker's window before it may trip
}

// Options tunes the engine. Zero values take the defaults noted.
type Options struct {
	SharedSender      string // sender name of the shared sender ID
	InlineLimit       int    // jobs up to this many recipients write message rows at accept (200)
	JobWindow         int    // messages outstanding per job and network (256)
	CampaignWindow    int    // the same for a campaign's job (1024): one job standing for many sends
	MaxDispatchingJob int    // jobs of one tenant dispatching at once (8); see jobHandedOff
	// HandOffBudget bounds the messages of jobs that gave their dispatch slot back while links
	// still hold them (jobHandedOff), across the engine (100,000; negative: never give it back).
	HandOffBudget int64
	// WaitingInline bounds the messages jobs waiting for a dispatch slot keep in memory, all
	// tenants together (65,536, about 48 bytes each; negative: none, each job reads its
	// messages back when its turn comes).
	WaitingInline    int64
	TenantIdle       time.Duration // a tenant actor with nothing to do stops after this (5m)
	AcceptBatch      int           // sends per group commit (256)
	AcceptWriters    int           // group-commit writers, each owning a disjoint share of accounts (1)
	ReceiptsBatch    int           // transitions per flush (2000)
	ReceiptsShards   int           // receipts actors flushing in parallel, each owning a share of messages (2)
	Expansions       int           // large jobs expanded into message rows at once (1)
	ReceiptsInterval time.Duration // how long a flush may wait to fill (25ms)
	ReceiptTimeout   time.Duration // a sent message without a receipt after this is asked about (10m)
	ReceiptDeadline  time.Duration // … and after this it fails and is refunded (72h)
	SweepInterval    time.Duration // how often the stale-sent sweep walks (1m)
	// OrphanSweep: how often recovery looks for accounts of this node with unfinished jobs
	// and no tenant (recovery_sweep.go; 0: never).
	OrphanSweep      time.Duration
	ProgressInterval time.Duration // how often job counters are folded from the progress log (1s)
	CommandTimeout   time.Duration // how long Engine methods wait for the engine (15s)
	LowBalanceCents  int64         // a send leaving less than this raises low_balance (0: never)
	// BulkYield: how long links hold off taking submits while a send of bulkRecipients or more
	// is being accepted, at most half of any stretch (0: never).
	BulkYield time.Duration
	// Now is the clock that places promotional messages in or out of quiet hours (time.Now).
	Now func() time.Time
	// QuietCheck: how often a tenant looks at its quiet hours between their edges, which it
	// also wakes at (30s): a clock that jumps is noticed within it.
	QuietCheck time.Duration
	// NodeID names this node in the tenant fences it takes ("": a single node): a tenant
	// replacing one of another node's asks the networks about that node's marked submits.
	NodeID string
	// TakeoverSettle: how long after another node marked a submit it may still reach the
	// network (its link's queue, its carrier's window and response timeout). Taking the
	// account over, a node sends it only once this has passed and the network does not have
	// it (asked again then) or, when the network cannot be asked, the other node recorded no
	// outcome for it (0: at once).
	TakeoverSettle time.Duration
	// Cluster places the node among others (engine_cluster.go); zero: a single node.
	Cluster ClusterOptions
	Links   map[carriers.Network]LinkOptions
	Faults  Faults // deliberate defects, for the drills' own tests only (faults_on.go)
}

func (o *Options) setDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.SharedSender == "" {
		o.SharedSender = "TUMA"
	}
	def(&o.InlineLimit, 200)
	def(&o.JobWindow, 256)
	def(&o.CampaignWindow, 1024)
	def(&o.MaxDispatchingJob, 8)
	if o.HandOffBudget == 0 {
		o.HandOffBudget = 100_000
	}
	if o.WaitingInline == 0 {
		o.WaitingInline = 65_536
	}
	def(&o.AcceptBatch, 256)
	def(&o.AcceptWriters, 1)
	def(&o.ReceiptsBatch, 2000)
	def(&o.ReceiptsShards, 2)
	def(&o.Expansions, 1)
	defDur(&o.TenantIdle, 5*time.Minute)
	defDur(&o.ReceiptsInterval, 25*time.Millisecond)
	defDur(&o.ReceiptTimeout, 10*time.Minute)
	defDur(&o.ReceiptDeadline, 72*time.Hour)
	o.ReceiptDeadline = max(o.ReceiptDeadline, o.ReceiptTimeout)
	defDur(&o.SweepInterval, time.Minute)
	defDur(&o.ProgressInterval, time.Second)
	defDur(&o.CommandTimeout, 15*time.Second)
	defDur(&o.QuietCheck, 30*time.Second)
	if o.Now == nil {
		o.Now = time.Now
	}
	links := map[carriers.Network]LinkOptions{}
	for _, n := range carriers.Networks() {
		l := o.Links[n]
		def(&l.Window, 256) // TUMA_LINK_WINDOW's default: one job's window per network
		def(&l.MaxAttempts, 3)
		defDur(&l.BreakerTimeout, 5*time.Second)
		if l.BreakerMinReqs == 0 {
			l.BreakerMinReqs = 20
		}
		links[n] = l
	}
	o.Links = links
}
