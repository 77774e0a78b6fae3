package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// Store is what the engine needs from the system of record.
type Store interface {
	TenantState(ctx context.Context, id uuid.UUID) (persistence.TenantState, error)
	AcceptJobs(ctx context.Context, jobs []persistence.NewJob) ([]persistence.AcceptResult, error)
	ExpandJob(ctx context.Context, j persistence.NewJob, from int, msgs []persistence.NewMessage, final bool) (bool, error)
	FlushReceipts(ctx context.Context, b persistence.ReceiptBatch) (persistence.FlushResult, error)
	FoldProgress(ctx context.Context, limit int) (persistence.FoldResult, error)
	Backlog(ctx context.Context) (persistence.Backlog, error)
	JobRecord(ctx context.Context, id uuid.UUID) (persistence.JobRecord, error)
	OpenJobs(ctx context.Context, accountID, after, before uuid.UUID, fence int64, limit int, promotional bool) ([]uuid.UUID, error)
	HeldPromotional(ctx context.Context, accountID uuid.UUID) (bool, error)
	AccountsWithOpenJobs(ctx context.Context, after uuid.UUID, limit int) ([]uuid.UUID, error)
	AccountsHeldElsewhere(ctx context.Context, node string, after uuid.UUID, limit int) (persistence.HeldElsewhere, error)
	OpenMessages(ctx context.Context, jobID, after uuid.UUID, limit int) ([]persistence.OpenMessage, error)
	StaleSent(ctx context.Context, after persistence.StaleCursor, before time.Time, limit int) ([]persistence.StaleMessage, error)
	MarkBatches(ctx context.Context, node string, batches []persistence.MarkBatch) ([]map[persistence.FenceKey]bool, error)
	TakeFence(ctx context.Context, accountID uuid.UUID, node string) (persistence.Fence, error)
	AccountMarks(ctx context.Context, accountID uuid.UUID) ([]persistence.MarkedMessage, error)
	StillQueued(ctx context.Context, accountID, id uuid.UUID) (bool, error)
	Unmark(ctx context.Context, ids []uuid.UUID) error
	Marks(ctx context.Context, before uuid.UUID, node string) (persistence.Marked, error)
	HoldLease(ctx context.Context, name, node string, ttl time.Duration) (bool, error)
	ReleaseLeases(ctx context.Context, node string) error
	Credit(ctx context.Context, c persistence.NewCredit) (persistence.WalletSnapshot, error)
	WalletNow(ctx context.Context, accountID uuid.UUID) (persistence.WalletSnapshot, error)
	ConfirmPayment(ctx context.Context, c persistence.PaymentConfirmation) (persistence.ConfirmedPayment, error)
	LowBalanceAlert(ctx context.Context, accountID uuid.UUID, n persistence.NewNotification) (bool, error)
	LowBalanceRecovered(ctx context.Context, accountID uuid.UUID) error
	SetPricing(ctx context.Context, accountID uuid.UUID, tier *string, internal bool) error
	OptedOut(ctx context.Context, accountID, jobID uuid.UUID, phones []string) (map[string]bool, error)
	SuppressedSince(ctx context.Context, accountID, jobID uuid.UUID, nsns []uint32) (map[uint32]bool, error)
	CancelCampaign(ctx context.Context, accountID, id uuid.UUID, now time.Time) (uuid.UUID, error)
	CancelRemainder(ctx context.Context, jobID uuid.UUID) ([]persistence.WalletSnapshot, error)
}

// Deps are the engine's collaborators.
type Deps struct {
	Log        *slog.Logger
	Registerer prometheus.Registerer
	Store      Store
	Carriers   map[carriers.Network]Carrier
	// Slots shares each network's TPS among the nodes of a cluster (link_shared.go); nil:
	// each node keeps to the cap on its own.
	Slots Slots
}

// Engine is a running dispatch engine.
type Engine struct {
	opts     Options
	log      *slog.Logger
	store    Store
	carriers map[carriers.Network]Carrier
	m        *metrics
	slots    Slots

	sys        *actor.ActorSystem
	pool       *pool // runs mailboxes and goIO (engine_pool.go)
	root       *actor.RootContext
	supervisor *actor.PID
	// The fixed actors' PIDs, computed from their names once: a respawn after a supervisor
	// restart reuses them, so they never change while anything reads them.
	writers                     []*actor.PID                      // by account shard
	receipts                    []*actor.PID                      // shards, by provider message id
	links                       [carriers.NetworkSlots]*actor.PID // by carriers.Network
	progress, sweeper, recovery *actor.PID
	marker                      *actor.PID            // the links' submit marks
	workerPIDs                  map[string]*actor.PID // by Worker.Name, under workMu
	// fixed holds the fixed actors' states, which outlive their incarnations.
	fixed fixedStates

	tenants sync.Map // uuid.UUID → *actor.PID: this node's tenants
	// cl is the cluster this node is a member of (engine_cluster.go); nil for a single node.
	cl *clusterState
	// dog notices a pause past the cluster's limit (engine_lapse.go); nil for a single node.
	dog atomic.Pointer[watchdog]
	// fenced counts the writes fences and lapses refused (logged when a lapsed node stops).
	fenced atomic.Int64
	// inlineWaiting counts the messages waiting jobs keep in memory, every tenant's (enqueue).
	inlineWaiting atomic.Int64
	// lapseRefused counts the commands a lapsed node refused.
	lapseRefused atomic.Int64
	// suppressedAt: per account, the numbers this node added to its suppression list lately
	// (uuid.UUID → *suppressionLog): its jobs accepted since look their recipients up before
	// submitting them (mayBeSuppressed), and queued messages to those numbers are stopped
	// (suppressedSince). lastSuppression is the latest of them all, Unix ms.
	suppressedAt    sync.Map
	lastSuppression atomic.Int64
	jobs            sync.Map // uuid.UUID → *actor.PID

	// unsettled are messages a link marked for submission before the last crash that are
	// still queued: the network may have them. Jobs flag them (dispatchMsg.unsettled) until
	// a link has marked them again. marksRead says the set is loaded; until then resumed
	// jobs wait.
	// Messages another node marked (a tenant replacing that node's took them over) are held
	// as foreignMark: recovery does not count them.
	unsettled sync.Map // uuid.UUID (message id) → struct{} | foreignMark
	marksRead atomic.Bool
	// bulkAccepts: large sends being accepted, which links give way to (see yielding).
	bulkAccepts atomic.Int32
	// startID is a UUIDv7 of this start: ids (marks, jobs) before it are earlier runs'.
	startID          uuid.UUID
	recoveryProgress recoveryProgress

	epochs atomic.Int64 // numbers tenant incarnations
	// spawns numbers the tenants the supervisor spawns, in their names: kept here, not in the
	// supervisor, so no name (and no PID, nor its jobs') comes back after the supervisor restarts.
	spawns    atomic.Uint64
	handedOff atomic.Int64 // messages of handed-off jobs still with the links (HandOffBudget)
	// jobsBlocked counts, per network, the jobs that have used their window there and wait
	// for outcomes to send more.
	jobsBlocked [carriers.NetworkSlots]atomic.Int64
	ready       chan struct{}
	readyOnce   sync.Once
	accepting   atomic.Bool
	stopped     sync.Once
	// expansions bounds concurrent COPYs of large jobs: a burst of big sends must not fill
	// the database with bulk inserts ahead of everything else.
	expansions chan struct{}
	// life is the engine's own lifetime: every I/O goroutine derives its context from it, so
	// Kill can cancel them all. It is the one context stored, by the object that owns it.
	life   context.Context
	cancel context.CancelFunc
	io     sync.WaitGroup
	// workLife is the workers' rounds' lifetime: Stop ends it first (see stopWorkers).
	workLife context.Context
	workStop context.CancelFunc
	workMu   sync.Mutex
	work     sync.WaitGroup
}

// fixedStates are the states of the fixed actors.
type fixedStates struct {
	writers  []*writerState
	receipts []*receiptsState
	links    [carriers.NetworkSlots]*linkState
	progress *progressState
	sweeper  *sweeperState
	recovery *recoveryState
	marker   *markerState
}

// Errors of the engine's commands.
var (
	ErrStopping = errors.New("the engine is shutting down")
	ErrBusy     = errors.New("the engine did not answer in time")
	// ErrFenced: the account's tenant here was replaced by a newer incarnation (on another
	// node) before the command's write; nothing was written, and a retry reaches the new one.
	ErrFenced = fmt.Errorf("the account moved to another incarnation: %w", persistence.ErrFenced)
)

// foreignMark is the value of an unsettled message that another node marked. Its submit
// may still be on its way to the network until askAfter (unix ns; 0: it has arrived by now,
// if it went): asked earlier, the network knows nothing of it yet, and it would go twice.
type foreignMark struct{ askAfter int64 }

// Commands several actors take: drain (the writers, links, receipts and progress, which hold
// work), panicNow (any actor).
type (
	drain    struct{} // finish what you hold, take nothing new; answer when done
	drained  struct{} // the answer to drain
	panicNow struct{} // test hook: make the actor panic
)

// RecoveryStatus says how far recovery has come, for readiness.
type RecoveryStatus struct {
	Done      bool  `json:"done"`
	Accounts  int64 `json:"accounts_woken"` // accounts with unfinished jobs whose tenants were woken
	Unsettled int64 `json:"unsettled"`      // messages a crash left marked, not yet marked again
}

// recoveryProgress is the status shared with readers (the HTTP readiness check).
type recoveryProgress struct {
	done                atomic.Bool
	accounts, unsettled atomic.Int64
}

// Start builds the actor tree and starts taking commands at once. Work left unfinished by an
// earlier run is recovered in the background (see recoveryActor): new sends never wait for it.
func Start(ctx context.Context, opts Options, deps Deps) (*Engine, error) {
	opts.setDefaults()
	m, err := newMetrics(deps.Registerer)
	if err != nil {
		return nil, err
	}
	for _, n := range carriers.Networks() {
		if deps.Carriers[n] == nil {
			return nil, fmt.Errorf("no carrier for %s", n)
		}
	}
	e := &Engine{opts: opts, log: deps.Log, store: deps.Store, carriers: deps.Carriers, m: m, slots: deps.Slots,
		expansions: make(chan struct{}, opts.Expansions), ready: make(chan struct{}),
		pool: newPool(poolIdle, mailboxThroughput)}
	e.startID = persistence.NewID()
	e.life, e.cancel = context.WithCancel(context.Background())
	e.workLife, e.workStop = context.WithCancel(e.life)
	e.sys = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(actorLog{deps.Log.Handler()}).With(slog.String("component", "actors"))
	}))
	e.root = e.sys.Root
	e.sys.EventStream.Subscribe(func(evt any) {
		if ev, ok := evt.(*actor.SupervisorEvent); ok && ev.Directive == actor.RestartDirective {
			e.m.restarts.WithLabelValues(actorKind(ev.Child)).Inc()
			e.log.Warn("actor restarted after a panic", slog.String("actor", ev.Child.Id), slog.Any("reason", ev.Reason))
		}
	})
	if opts.Cluster.on() {
		// Before any PID is made: joining gives the actor system its network address.
		if err := e.startCluster(opts.Cluster); err != nil {
			e.stopCluster()
			e.io.Wait() // the member's start
			e.pool.close()
			return nil, err
		}
	}
	child := func(name string) *actor.PID { return actor.NewPID(e.sys.Address(), "engine/"+name) }
	e.supervisor = actor.NewPID(e.sys.Address(), "engine")
	for i := range opts.AcceptWriters {
		e.writers = append(e.writers, child(fmt.Sprintf("writer-%d", i)))
		e.fixed.writers = append(e.fixed.writers, &writerState{})
	}
	for i := range opts.ReceiptsShards {
		e.receipts = append(e.receipts, child(fmt.Sprintf("receipts-%d", i)))
		e.fixed.receipts = append(e.fixed.receipts, newReceiptsState())
	}
	for _, n := range carriers.Networks() {
		e.links[n] = child("link-" + n.String())
		e.fixed.links[n] = newLinkState(e, n)
		m.windowSize.WithLabelValues(n.String()).Set(float64(opts.Links[n].Window))
	}
	e.progress, e.sweeper, e.recovery = child("progress"), child("sweeper"), child("recovery")
	e.fixed.progress, e.fixed.sweeper, e.fixed.recovery = &progressState{}, &sweeperState{}, &recoveryState{}
	e.marker, e.fixed.marker = child("marker"), &markerState{}
	e.workerPIDs = map[string]*actor.PID{}

	spawnFixed(e, e.supervisor, func() actor.Actor { return &supervisorActor{e: e} })
	st := e.fixed
	for i, ws := range st.writers {
		spawnFixed(e, e.writers[i], func() actor.Actor { return &writerActor{e: e, writerState: ws} })
	}
	for i, rs := range st.receipts {
		spawnFixed(e, e.receipts[i], func() actor.Actor { return &receiptsActor{e: e, st: rs} })
	}
	spawnFixed(e, e.marker, func() actor.Actor { return &markerActor{e: e, st: st.marker} })
	for _, n := range carriers.Networks() {
		ls := st.links[n]
		spawnFixed(e, e.links[n], func() actor.Actor { return &linkActor{e: e, st: ls} })
	}
	spawnFixed(e, e.progress, func() actor.Actor { return &progressActor{e: e, st: st.progress} })
	spawnFixed(e, e.sweeper, func() actor.Actor { return &sweeperActor{e: e, st: st.sweeper} })
	spawnFixed(e, e.recovery, func() actor.Actor { return &recoveryActor{e: e, st: st.recovery} })
	select {
	case <-e.ready:
	case <-ctx.Done():
		e.Kill()
		return nil, ctx.Err()
	}
	e.accepting.Store(true)
	return e, nil
}

// Recovery reports the background recovery's progress.
func (e *Engine) Recovery() RecoveryStatus {
	return RecoveryStatus{Done: e.recoveryProgress.done.Load(), Accounts: e.recoveryProgress.accounts.Load(),
		Unsettled: e.recoveryProgress.unsettled.Load()}
}

// props are the properties of every engine actor: restarted on panic.
func (e *Engine) props(producer actor.Producer) *actor.Props {
	return actor.PropsFromProducer(producer, actor.WithSupervisor(restartStrategy()), actor.WithDispatcher(e.pool))
}

// restartStrategy restarts a panicking child; a child failing 10 times within a minute is
// stopped (and logged) rather than spun forever.
func restartStrategy() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(10, time.Minute, func(any) actor.Directive { return actor.RestartDirective })
}

// actorKind names the kind of an actor from its PID ("engine/tenant-…/job-…" → "job").
func actorKind(pid *actor.PID) string {
	if pid == nil {
		return "unknown"
	}
	id := pid.Id
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:]
	}
	if i := strings.IndexByte(id, '-'); i >= 0 {
		id = id[:i]
	}
	switch id {
	case "engine":
		return "supervisor"
	case "tenant", "job", "link", "writer", "receipts", "marker", "progress", "sweeper", "recovery", "worker":
		return id
	}
	return "other"
}

// actorKinds are the kinds actorKind names, for metrics that should show zeros from the start.
var actorKinds = []string{"supervisor", "tenant", "job", "link", "writer", "receipts", "marker", "progress", "sweeper", "recovery", "worker", "other"}

// goIO runs f on a goroutine owned by the engine, with a context that Kill cancels.
func (e *Engine) goIO(timeout time.Duration, f func(ctx context.Context)) {
	e.io.Add(1)
	e.pool.Schedule(func() {
		defer e.io.Done()
		ctx, cancel := context.WithTimeout(e.life, timeout)
		defer cancel()
		f(ctx)
	})
}

// Stop drains the engine: no new commands, accepted sends finish committing, links stop
// taking new work and wait for in-flight submits, receipts write what they hold and the
// progress log is folded. Messages still queued stay queued in the database and resume on the
// next start. A cluster node first hands its accounts over to the others (leave).
func (e *Engine) Stop(ctx context.Context) error {
	if !e.accepting.Load() {
		e.teardown() // already stopped or killed
		return nil
	}
	e.leave(ctx)
	if !e.accepting.Swap(false) {
		e.teardown()
		return nil
	}
	e.stopWorkers()
	e.releaseLeases(ctx)
	defer e.logLapse()
	var errs []error
	for _, pid := range slices.Concat(e.writers, e.links[1:], e.receipts, []*actor.PID{e.progress}) {
		if _, err := e.request(ctx, pid, &drain{}); err != nil {
			errs = append(errs, fmt.Errorf("drain %s: %w", pid.Id, err))
		}
	}
	e.teardown()
	return errors.Join(errs...)
}

// Kill stops the engine abruptly, as a crash would (for tests): in-flight I/O is cancelled
// and nothing more is written once Kill returns.
func (e *Engine) Kill() {
	e.accepting.Store(false)
	e.teardown()
}

// teardown cancels I/O, stops the actors (the tenants and their jobs first, then the fixed
// actors) and waits for every goroutine the engine started. Once an actor has stopped it
// starts no more I/O, so waiting after they are down is safe.
func (e *Engine) teardown() {
	e.stopped.Do(func() {
		e.stopWorkers()
		e.cancel()
		e.workMu.Lock()
		workers := slices.Collect(maps.Values(e.workerPIDs))
		e.workMu.Unlock()
		for _, pid := range workers {
			_ = e.root.StopFuture(pid).Wait()
		}
		_ = e.root.StopFuture(e.supervisor).Wait()
		for _, pid := range slices.Concat(e.writers, e.receipts, e.links[1:], []*actor.PID{e.marker, e.progress, e.sweeper, e.recovery}) {
			_ = e.root.StopFuture(pid).Wait()
		}
		e.io.Wait()
		if e.cl != nil {
			e.stopCluster() // the others see it leave and take its accounts over
		} else {
			e.sys.Shutdown()
		}
		e.pool.close()
	})
}

func (e *Engine) readyOnceDone() bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}
