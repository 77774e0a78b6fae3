package actors

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
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
	ExpandJob(ctx context.Context, j persistence.NewJob, msgs []persistence.NewMessage) (bool, error)
	FlushReceipts(ctx context.Context, b persistence.ReceiptBatch) (persistence.FlushResult, error)
	ApplyProgress(ctx context.Context, jobs []persistence.JobProgress) ([]uuid.UUID, error)
	RecountOpenJobs(ctx context.Context) (int, error)
	UnfinishedJobs(ctx context.Context) ([]persistence.JobRecord, error)
	OpenMessages(ctx context.Context, jobID, after uuid.UUID, limit int) ([]persistence.OpenMessage, error)
	StaleSent(ctx context.Context, before time.Time, limit int) ([]persistence.StaleMessage, error)
	Credit(ctx context.Context, c persistence.NewCredit) (persistence.WalletSnapshot, error)
	ConfirmPayment(ctx context.Context, c persistence.PaymentConfirmation) (persistence.ConfirmedPayment, error)
	LowBalanceAlert(ctx context.Context, accountID uuid.UUID, thresholdCents int64, n persistence.NewNotification) (bool, error)
	LowBalanceRecovered(ctx context.Context, accountID uuid.UUID, thresholdCents int64) error
	SetPricing(ctx context.Context, accountID uuid.UUID, tier *string, internal bool) error
	AddNotification(ctx context.Context, accountID uuid.UUID, n persistence.NewNotification) error
}

// LinkOptions configures one network's link.
type LinkOptions struct {
	TPS            float64       // submits per second (0: no cap of ours)
	Window         int           // most submits in flight
	MaxAttempts    int           // submits of one message before it fails (temporary failures)
	BreakerTimeout time.Duration // how long an open breaker stays open before probing
	BreakerMinReqs uint32        // requests in the breaker's window before it may trip
}

// Options tunes the engine. Zero values take the defaults noted.
type Options struct {
	SharedSender      string        // sender name of the shared sender ID
	InlineLimit       int           // jobs up to this many recipients write message rows at accept (200)
	JobWindow         int           // messages outstanding per job and network (256)
	MaxDispatchingJob int           // jobs of one tenant dispatching at once (8)
	TenantIdle        time.Duration // a tenant actor with nothing to do stops after this (5m)
	AcceptBatch       int           // sends per group commit (256)
	AcceptShards      int           // group-commit writers, each owning a disjoint share of accounts (2)
	ReceiptsBatch     int           // transitions per flush (2000)
	ReceiptsShards    int           // receipts actors flushing in parallel, each owning a share of messages (2)
	Expansions        int           // large jobs expanded into message rows at once (1)
	ReceiptsInterval  time.Duration // how long a flush may wait to fill (5ms)
	ReceiptTimeout    time.Duration // a sent message without a receipt after this is asked about (10m)
	ReconcileInterval time.Duration // how often the reconciler looks (1m)
	CommandTimeout    time.Duration // how long Engine methods wait for the engine (15s)
	LowBalanceCents   int64         // a send leaving less than this raises low_balance (0: never)
	Links             map[carriers.Network]LinkOptions
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
	def(&o.MaxDispatchingJob, 8)
	def(&o.AcceptBatch, 256)
	def(&o.AcceptShards, 2)
	def(&o.ReceiptsBatch, 2000)
	def(&o.ReceiptsShards, 2)
	def(&o.Expansions, 1)
	defDur(&o.TenantIdle, 5*time.Minute)
	defDur(&o.ReceiptsInterval, 25*time.Millisecond)
	defDur(&o.ReceiptTimeout, 10*time.Minute)
	defDur(&o.ReconcileInterval, time.Minute)
	defDur(&o.CommandTimeout, 15*time.Second)
	links := map[carriers.Network]LinkOptions{}
	for _, n := range carriers.Networks() {
		l := o.Links[n]
		def(&l.Window, 100)
		def(&l.MaxAttempts, 3)
		defDur(&l.BreakerTimeout, 5*time.Second)
		if l.BreakerMinReqs == 0 {
			l.BreakerMinReqs = 20
		}
		links[n] = l
	}
	o.Links = links
}

// Deps are the engine's collaborators.
type Deps struct {
	Log        *slog.Logger
	Registerer prometheus.Registerer
	Store      Store
	Carriers   map[carriers.Network]Carrier
}

// Engine is a running dispatch engine.
type Engine struct {
	opts     Options
	log      *slog.Logger
	store    Store
	carriers map[carriers.Network]Carrier
	m        *metrics

	sys        *actor.ActorSystem
	root       *actor.RootContext
	supervisor *actor.PID
	writers    []*actor.PID // by account shard
	receipts   []*actor.PID // shards, by provider message id
	reconciler *actor.PID
	links      [4]*actor.PID // by carriers.Network

	tenants sync.Map // uuid.UUID → *actor.PID (the lookup seam; a cluster would replace it)
	jobs    sync.Map // uuid.UUID → *actor.PID

	accepting atomic.Bool
	stopped   sync.Once
	// expansions bounds concurrent COPYs of large jobs: a burst of big sends must not fill
	// the database with bulk inserts ahead of everything else.
	expansions chan struct{}
	// life is the engine's own lifetime: every I/O goroutine derives its context from it, so
	// Kill can cancel them all. It is the one context stored, by the object that owns it.
	life   context.Context
	cancel context.CancelFunc
	io     sync.WaitGroup
}

// Errors of the engine's commands.
var (
	ErrStopping = errors.New("the engine is shutting down")
	ErrBusy     = errors.New("the engine did not answer in time")
)

// InsufficientBalanceError says a send costs more than the spendable balance.
type InsufficientBalanceError struct {
	AvailableCents, CostCents int64
}

func (e *InsufficientBalanceError) Error() string {
	return fmt.Sprintf("balance %s KES cannot cover %s KES", centsString(e.AvailableCents), centsString(e.CostCents))
}

// Is makes errors.Is(err, persistence.ErrInsufficientBalance) hold.
func (e *InsufficientBalanceError) Is(target error) bool {
	return target == persistence.ErrInsufficientBalance
}

// Start builds the actor tree, resumes every unfinished job and starts taking commands.
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
	e := &Engine{opts: opts, log: deps.Log, store: deps.Store, carriers: deps.Carriers, m: m,
		expansions: make(chan struct{}, opts.Expansions)}
	e.life, e.cancel = context.WithCancel(context.Background())
	e.sys = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return deps.Log.With(slog.String("component", "actors"))
	}))
	e.root = e.sys.Root
	e.sys.EventStream.Subscribe(func(evt any) {
		if ev, ok := evt.(*actor.SupervisorEvent); ok && ev.Directive == actor.RestartDirective {
			e.m.restarts.WithLabelValues(actorKind(ev.Child)).Inc()
			e.log.Warn("actor restarted after a panic", slog.String("actor", ev.Child.Id), slog.Any("reason", ev.Reason))
		}
	})
	for _, n := range carriers.Networks() {
		m.windowSize.WithLabelValues(n.String()).Set(float64(opts.Links[n].Window))
	}

	ready := make(chan struct{})
	e.supervisor, err = e.root.SpawnNamed(e.props(func() actor.Actor { return &supervisorActor{e: e, ready: ready} }), "engine")
	if err != nil {
		return nil, fmt.Errorf("spawn engine: %w", err)
	}
	select {
	case <-ready:
	case <-ctx.Done():
		e.Kill()
		return nil, ctx.Err()
	}
	if err := e.recover(ctx); err != nil {
		e.Kill()
		return nil, err
	}
	e.accepting.Store(true)
	return e, nil
}

// writerFor is the group-commit writer of an account: its shard, so two writers' batches
// never lock the same wallet and can commit in parallel.
func (e *Engine) writerFor(id uuid.UUID) *actor.PID {
	return e.writers[int(binary.BigEndian.Uint32(id[12:]))%len(e.writers)]
}

// receiptsFor is the receipts shard of a submitted message: the same for its submission and
// its receipts, so one shard writes them in order; shards flush in parallel.
func (e *Engine) receiptsFor(n carriers.Network, providerID string) *actor.PID {
	h := fnv.New32a()
	h.Write([]byte{byte(n)})
	h.Write([]byte(providerID))
	return e.receipts[h.Sum32()%uint32(len(e.receipts))]
}

// receiptsForMessage is the shard of a message that failed before any network took it (it
// has no provider id, and nothing else will be written about it).
func (e *Engine) receiptsForMessage(id uuid.UUID) *actor.PID {
	return e.receipts[binary.BigEndian.Uint32(id[12:])%uint32(len(e.receipts))]
}

// props are the properties of every engine actor: restarted on panic.
func (e *Engine) props(producer actor.Producer) *actor.Props {
	return actor.PropsFromProducer(producer, actor.WithSupervisor(restartStrategy()))
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
	case "tenant", "job", "link", "writer", "receipts", "reconciler":
		return id
	}
	return "other"
}

// recover resumes unfinished jobs left by a previous run. Their counters are recounted first:
// they are written in batches and may trail the messages after a crash.
func (e *Engine) recover(ctx context.Context) error {
	if done, err := e.store.RecountOpenJobs(ctx); err != nil {
		return fmt.Errorf("recover: %w", err)
	} else if done > 0 {
		e.log.Info("completed jobs finished before the last stop", slog.Int("jobs", done))
	}
	jobs, err := e.store.UnfinishedJobs(ctx)
	if err != nil {
		return fmt.Errorf("recover unfinished jobs: %w", err)
	}
	for _, j := range jobs {
		pid, err := e.tenant(ctx, j.AccountID)
		if err != nil {
			return fmt.Errorf("recover job %s: %w", j.ID, err)
		}
		e.root.Send(pid, &resumeJob{job: j})
	}
	if len(jobs) > 0 {
		e.log.Info("resuming unfinished jobs", slog.Int("jobs", len(jobs)))
	}
	return nil
}

// tenant returns the tenant actor of an account, spawning it if needed.
func (e *Engine) tenant(ctx context.Context, id uuid.UUID) (*actor.PID, error) {
	if pid, ok := e.tenants.Load(id); ok {
		return pid.(*actor.PID), nil
	}
	res, err := e.request(ctx, e.supervisor, &getTenant{id: id})
	if err != nil {
		return nil, err
	}
	return res.(*actor.PID), nil
}

// request sends a command and waits for the answer, up to the command timeout or ctx.
func (e *Engine) request(ctx context.Context, pid *actor.PID, msg any) (any, error) {
	timeout := e.opts.CommandTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return nil, ErrBusy
	}
	res, err := e.root.RequestFuture(pid, msg, timeout).Result()
	switch {
	case errors.Is(err, actor.ErrTimeout):
		return nil, ErrBusy
	case err != nil:
		return nil, err
	}
	if rerr, ok := res.(error); ok {
		return nil, rerr
	}
	return res, nil
}

// tenantRequest sends a command to an account's tenant actor. A tenant that stopped (idle)
// between lookup and delivery answers with a dead letter; the lookup is then retried.
func (e *Engine) tenantRequest(ctx context.Context, id uuid.UUID, msg any) (any, error) {
	for attempt := 0; ; attempt++ {
		pid, err := e.tenant(ctx, id)
		if err != nil {
			return nil, err
		}
		res, err := e.request(ctx, pid, msg)
		if errors.Is(err, actor.ErrDeadLetter) && attempt < 20 {
			e.tenants.CompareAndDelete(id, pid)
			time.Sleep(time.Duration(attempt+1) * time.Millisecond)
			continue
		}
		return res, err
	}
}

// goIO runs f on a goroutine owned by the engine, with a context that Kill cancels.
func (e *Engine) goIO(timeout time.Duration, f func(ctx context.Context)) {
	e.io.Add(1)
	go func() {
		defer e.io.Done()
		ctx, cancel := context.WithTimeout(e.life, timeout)
		defer cancel()
		f(ctx)
	}()
}

// SendRequest is one accepted-for-validation send.
type SendRequest struct {
	AccountID   uuid.UUID
	Recipients  []persistence.Recipient // normalised and unique
	Message     string
	Sender      *persistence.Sender // an explicit approved sender; nil: the default, else shared
	Source      string              // api | browser
	Idempotency *persistence.IdempotencyKey
}

// SendResult describes the durably accepted job.
type SendResult struct {
	JobID      uuid.UUID
	Recipients int
	CostCents  int64
}

// Send prices the send, reserves and debits its cost and records the job durably; it returns
// only once all of that is committed.
func (e *Engine) Send(ctx context.Context, req SendRequest) (SendResult, error) {
	if !e.accepting.Load() {
		return SendResult{}, ErrStopping
	}
	res, err := e.tenantRequest(ctx, req.AccountID, &sendCmd{req: req, at: time.Now()})
	if err != nil {
		return SendResult{}, err
	}
	return *res.(*SendResult), nil
}

// Credit adds money to an account's wallet through its tenant actor, so the actor's view of
// the balance stays exact.
func (e *Engine) Credit(ctx context.Context, c persistence.NewCredit) (persistence.WalletSnapshot, error) {
	if !e.accepting.Load() {
		return persistence.WalletSnapshot{}, ErrStopping
	}
	res, err := e.tenantRequest(ctx, c.AccountID, &creditCmd{c: c})
	if err != nil {
		return persistence.WalletSnapshot{}, err
	}
	return *res.(*persistence.WalletSnapshot), nil
}

// ConfirmPayment applies a payment the provider has confirmed, through the account's tenant
// actor so its view of the balance stays exact. Applying is idempotent: the store moves a
// payment to paid once, and only that confirmation credits (Applied).
func (e *Engine) ConfirmPayment(ctx context.Context, accountID uuid.UUID, c persistence.PaymentConfirmation) (persistence.ConfirmedPayment, error) {
	if !e.accepting.Load() {
		return persistence.ConfirmedPayment{}, ErrStopping
	}
	if c.Notice == nil {
		c.Notice = topupNotice
	}
	res, err := e.tenantRequest(ctx, accountID, &paymentCmd{c: c})
	if err != nil {
		return persistence.ConfirmedPayment{}, err
	}
	return *res.(*persistence.ConfirmedPayment), nil
}

// SetPricing pins (or unpins, tier nil) an account's tier and sets it internal or not.
func (e *Engine) SetPricing(ctx context.Context, accountID uuid.UUID, tier *string, internal bool) error {
	_, err := e.tenantRequest(ctx, accountID, &pricingCmd{tier: tier, internal: internal})
	return err
}

// AccountChanged makes a live tenant actor reload its account (company name, default sender)
// after a change committed elsewhere, and returns once it has: the caller's next send is priced
// and sent with the change. A tenant not alive will load the change when it starts.
func (e *Engine) AccountChanged(ctx context.Context, accountID uuid.UUID) error {
	pid, ok := e.tenants.Load(accountID)
	if !ok {
		return nil
	}
	_, err := e.request(ctx, pid.(*actor.PID), &reloadTenant{})
	if errors.Is(err, actor.ErrDeadLetter) {
		return nil // it stopped meanwhile; its successor loads afresh
	}
	return err
}

// WalletChanged hands a wallet snapshot committed outside the engine (a welcome bonus) to the
// account's tenant actor, if it is alive; otherwise it will load it when it starts.
func (e *Engine) WalletChanged(w persistence.WalletSnapshot) {
	if pid, ok := e.tenants.Load(w.AccountID); ok {
		e.root.Send(pid.(*actor.PID), &walletChanged{wallet: w})
	}
}

// LiveStatus asks a network now about a message it accepted.
func (e *Engine) LiveStatus(ctx context.Context, network carriers.Network, providerID string) (CarrierStatus, error) {
	if network < carriers.Safaricom || network > carriers.Telkom {
		return CarrierStatus{}, fmt.Errorf("no link for network %d", network)
	}
	res, err := e.request(ctx, e.links[network], &queryCmd{providerID: providerID})
	if err != nil {
		return CarrierStatus{}, err
	}
	return *res.(*CarrierStatus), nil
}

// Sync records a carrier status for a message now (from a live check) and returns once it is
// durable. A non-final status changes nothing.
func (e *Engine) Sync(ctx context.Context, network carriers.Network, providerID string, st CarrierStatus) error {
	if !st.Final {
		return nil
	}
	_, err := e.request(ctx, e.receiptsFor(network, providerID), &syncCmd{receipt: receiptFrom(network, providerID, st)})
	return err
}

// Receipt feeds a delivery receipt pushed by a network into the engine.
func (e *Engine) Receipt(network carriers.Network, providerID string, st CarrierStatus) {
	if st.Final {
		e.root.Send(e.receiptsFor(network, providerID), &receiptEv{r: receiptFrom(network, providerID, st)})
	}
}

func receiptFrom(n carriers.Network, providerID string, st CarrierStatus) persistence.Receipt {
	at := st.At
	if at.IsZero() {
		at = time.Now()
	}
	return persistence.Receipt{ProviderID: providerID, Network: n, Delivered: st.Delivered,
		ProviderStatus: st.ProviderStatus, Error: st.Error, At: at}
}

// Stop drains the engine: no new commands, accepted sends finish committing, links stop
// taking new work and wait for in-flight submits, the receipts actor writes what it holds.
// Messages still queued stay queued in the database and resume on the next start.
func (e *Engine) Stop(ctx context.Context) error {
	if !e.accepting.Swap(false) {
		e.teardown() // already stopped or killed
		return nil
	}
	var errs []error
	for _, pid := range slices.Concat(e.writers, e.links[1:], e.receipts) {
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

// teardown cancels I/O, stops the actor tree (children before parents) and waits for every
// goroutine the engine started. Once an actor has stopped it starts no more I/O, so waiting
// after the tree is down is safe.
func (e *Engine) teardown() {
	e.stopped.Do(func() {
		e.cancel()
		if e.supervisor != nil {
			_ = e.root.StopFuture(e.supervisor).Wait()
		}
		e.io.Wait()
		e.sys.Shutdown()
	})
}
