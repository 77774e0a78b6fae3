// Package actors is Tuma's dispatch engine, built on protoactor-go.
//
// Topology (one engine per node):
//
//	engine
//	├── writers    group-commit accepted sends (debit, job, messages, ledger, notices), by account shard
//	├── tenants    one actor per active account (spawned on demand, passivated when idle)
//	│   └── jobs   one child per dispatching job: streams messages to the links
//	├── links      one carrier link per network: token bucket, in-flight window, breaker
//	├── receipts   shards that batch status transitions, refunds and counters into PostgreSQL
//	├── progress   folds the progress log into job counters; reads the backlog
//	├── sweeper    asks carriers about messages whose receipt never came
//	├── recovery   resumes earlier runs' work in the background
//	└── workers    the node's background loops (mail, payment reconciliation, …), see Worker
//
// Ownership. A tenant actor owns its account's spendable balance while it lives: it reserves
// a send's cost in memory (so concurrent sends can never overdraw) and its writer commits the
// debit with the job in one transaction; PostgreSQL stays the system of record, and every
// committed change returns a versioned wallet snapshot the tenant adopts. Job actors own the
// dispatch progress of their job; links own their queues, windows and breakers; each receipts
// shard owns the order of status writes for its messages (chosen by provider message id, so a
// message's submission and receipts meet in one shard), and the shards flush in parallel.
//
// Protocol. Handlers call Engine methods, which send a command to an actor and wait for its
// reply with a deadline. Inside the engine no actor waits for another: requests carry the
// PID to answer, and I/O runs on goroutines that post their results back as messages.
//
// Flow control. A job keeps at most JobWindow messages outstanding per network; a message
// stops being outstanding when its receipts shard has durably recorded its submit outcome.
// So memory is bounded whatever the job size, and a slow network holds back only its own
// traffic. A link that runs dry while jobs wait on their windows asks the shards for the
// outcomes, which then flush at once instead of waiting to fill (ReceiptsInterval).
// Mailboxes are unbounded; nothing is ever dropped.
//
// Ordering. A receipts shard applies, in one transaction per flush, submissions before
// failures before receipts; a transition only applies from an earlier state, so duplicates
// (a resubmission after a crash, a repeated receipt) change nothing and refunds happen once.
// A receipt that arrives before its submission is recorded is retried for a while.
//
// Crashes. Anything acknowledged is durable. On start the engine resumes every unfinished job:
// queued messages are submitted, sent ones are asked about. A message is submitted at least
// once and billed once; a duplicate submit is possible only for the in-flight window of a
// link at the moment of a crash.
//
// Files. Each actor has one family of files, which holds its type, its state, the messages it
// receives and its features; every method of an actor type lives in its family, and every
// method of Engine in engine*.go:
//
//	engine*.go     the facade: Start and Stop (engine.go); its public requests and their types,
//	               by what they ask (engine_send, engine_account, engine_carrier, engine_workers);
//	               reaching an actor (engine_request); what the actors share of it
//	               (engine_budgets); its options, metrics and goroutine pool; owned timers and
//	               inboxes (engine_owned)
//	supervisor.go  the tenants' supervisor, and spawning the fixed actors
//	tenant*.go     life cycle and state (tenant.go), sends, campaigns (pricing, cancelling),
//	               jobs (slots, waiting queue, resume), wallet (credits, payments, pricing,
//	               low balance), pricing tiers and notices
//	job*.go        dispatch windows (job.go), loading messages, a campaign's job, cancelling
//	link*.go       queue and pump (link.go), marks, submits, the fair queue, pacing
//	receipts*.go   the shard (receipts.go) and its buffer (receipts_batch.go)
//	progress.go, sweeper.go, recovery.go, writer.go
//	worker*.go     the worker actor and Worker, and Outbox (a Worker's round over an outbox)
//	faults_*.go    deliberate defects for the drills, compiled in only with -tags faults
//
// Messages between actors are plain data (they could become protobuf for a cluster), declared
// beside the actor that receives them; drain and panicNow, which several actors take, are in
// engine.go. A type no actor owns goes with the one that uses it: the pacer and the yielding
// to bulk accepts are the link's (link_pace.go), pricing arithmetic the tenant's
// (tenant_pricing.go). Carrier is what drivers implement for the links and the sweeper, so it
// is on the engine's public side (engine_carrier.go), as are timers and inboxes, which every
// actor owns (engine_owned.go). An Engine method that serves actors (the hand-off budget,
// expansion slots) is in engine_budgets.go rather than with one of them.
package actors
