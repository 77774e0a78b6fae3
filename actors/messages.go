package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// Messages between actors are plain data (they could become protobuf for a cluster).

// To the supervisor.
type (
	getTenant   struct{ id uuid.UUID } // → *actor.PID of the tenant, spawned if needed
	passivating struct{ id uuid.UUID } // a tenant with nothing to do asks to be stopped
	drain       struct{}               // finish what you hold, take nothing new; answer when done
	drained     struct{}               // the answer to drain
	// toTenant is delivered to an account's tenant, spawned if needed. The supervisor owns
	// tenant PIDs, and holds its mail while it restarts, so nothing sent this way falls into
	// the gap between a tenant's death and its successor.
	toTenant struct {
		account uuid.UUID
		msg     any
	}
)

// To a tenant.
type (
	sendCmd struct {
		req SendRequest
		at  time.Time
	}
	creditCmd  struct{ c persistence.NewCredit }
	creditDone struct {
		wallet persistence.WalletSnapshot
		err    error
		reply  *actor.PID
		cents  int64
	}
	pricingCmd struct {
		tier     *string
		internal bool
	}
	pricingDone struct {
		cmd   *pricingCmd
		err   error
		reply *actor.PID
	}
	// paymentCmd applies a payment the provider confirmed (a top-up credits the wallet).
	paymentCmd struct {
		c persistence.PaymentConfirmation
	}
	paymentDone struct {
		res   persistence.ConfirmedPayment
		err   error
		reply *actor.PID
	}
	// reloadTenant reloads the account; sent as a request, it is answered once the new state is in.
	reloadTenant struct{}
	// Results of a tenant's own I/O carry the incarnation that started it (epoch): after a
	// restart, the successor has the same PID and must not take its predecessor's results.
	tenantLoaded struct {
		state persistence.TenantState
		err   error
		gen   int
		epoch int64
	}
	// walletChanged carries a snapshot committed elsewhere (refunds, bonuses).
	walletChanged     struct{ wallet persistence.WalletSnapshot }
	lowBalanceWritten struct{ epoch int64 }
	// openJobsRead is a page of the tenant's unfinished jobs, read to resume them.
	openJobsRead struct {
		ids   []uuid.UUID
		err   error
		epoch int64
	}
	readOpenJobs struct{} // read the next page of unfinished jobs (a retry after an error)
	// jobDispatched: the job has submitted everything; its slot is free.
	jobDispatched struct{ id uuid.UUID }
	// jobHandedOff: a job accepted with its messages in hand has given every one to the links;
	// it only waits for their outcomes, so its slot is free (see jobActor.pump).
	jobHandedOff struct{ id uuid.UUID }
)

// Between a tenant and the writer.
type (
	acceptReq struct {
		job     persistence.NewJob
		reply   *actor.PID // the caller waiting for the 202
		tenant  *actor.PID
		epoch   int64 // the tenant incarnation that sent it
		start   time.Time
		inline  []dispatchMsg // the inline messages, ready to dispatch
		variant [carriers.NetworkSlots]variant
	}
	acceptDone struct {
		req    *acceptReq
		result persistence.AcceptResult
		err    error
	}
	acceptBatchDone struct {
		reqs    []*acceptReq
		results []persistence.AcceptResult
		err     error
	}
)

// To a job.
type (
	jobReady struct { // a batch of its messages is in memory
		from    *jobState              // the incarnation that read it (a predecessor's reads are ignored)
		record  *persistence.JobRecord // the job, when it was read from the store (a resumed job)
		msgs    []dispatchMsg
		pending []pendingReceipt
		last    uuid.UUID // the id to read on from (uuid.Nil: nothing was read)
		more    bool      // the database may hold more of its open messages
		err     error
		// A campaign's job, written chunk by chunk: its decoded audience (once decoded), how
		// many recipients are written now (0: unchanged), and stale: the store's job is not
		// where this incarnation thought (re-read it).
		audience []persistence.Member
		expanded int
		stale    bool
	}
	// outcomesDurable: submit outcomes of this many messages per network are recorded.
	outcomesDurable struct{ n [carriers.NetworkSlots]int }
	// outcomesWanted: a link has run dry while jobs wait for outcomes to send more; the
	// receipts shards write submit outcomes without waiting for a flush to fill.
	outcomesWanted struct{}
	reloadJob      struct{}
)

// dispatchMsg is a message in flight through the engine, kept compact: the text is shared by
// every message of a job on the same network.
type dispatchMsg struct {
	id      uuid.UUID
	nsn     uint32
	network carriers.Network
	body    *string // personalised text, else the job's variant
	// unsettled: marked for submission before a crash and still queued, so the network may
	// have it already; the link asks before submitting it again.
	unsettled bool
}

// variant is the text, sender and segmentation of a job on one network.
type variant struct {
	text     string
	sender   string
	prefixed bool
	parts    int
	encoding carriers.Encoding
}

// pendingReceipt is a message already sent whose receipt we must ask for (after a restart).
type pendingReceipt struct {
	providerID string
	network    carriers.Network
}

// To a link.
type (
	submitReq struct {
		account   uuid.UUID
		msg       dispatchMsg
		variant   *variant
		job       *actor.PID
		attempts  int
		mark      uuid.UUID // the mark that covers the current submit
		breakerOK func(error)
	}
	submitDone struct {
		req        *submitReq
		providerID string
		err        error
		took       time.Duration
		lookedUp   bool // the network was asked whether it had the message, not sent it
	}
	// markDone: a batch of submits is marked (durably, or not: err).
	markDone struct {
		id    uuid.UUID
		batch []*submitReq
		err   error
	}
	// marksSettled: this many submits of each mark have a durable outcome now.
	marksSettled struct{ n map[uuid.UUID]int }
	unmarkDone   struct {
		ids []uuid.UUID
		err error
	}
	wake     struct{}
	queryCmd struct{ providerID string }
	// queryMany asks about many messages; final answers go to receipts. Messages still en
	// route are asked again, with growing pauses, for up to retryFor.
	queryMany struct {
		ids      []string
		retryFor time.Duration
	}
	panicNow struct{} // test hook: make the actor panic
)

// To receipts.
type (
	submittedEv struct {
		s    persistence.Submitted
		job  *actor.PID
		mark uuid.UUID
	}
	failedEv struct {
		f       persistence.Failure
		network carriers.Network
		job     *actor.PID // nil when no job is waiting (the sweep's deadline)
		mark    uuid.UUID
	}
	receiptEv struct{ r persistence.Receipt }
	syncCmd   struct{ receipt persistence.Receipt }
	flushDone struct {
		res   persistence.FlushResult
		err   error
		batch *receiptBatch
		took  time.Duration
	}
)
