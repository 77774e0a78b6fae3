// Assembly: how a node's parts are built from its configuration once it boots.

package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/actors/simlink"
	"github.com/tuma-sms/tuma/actors/smpplink"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/carriers/sim"
	"github.com/tuma-sms/tuma/carriers/smpp"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/documents"
	"github.com/tuma-sms/tuma/persistence/redis"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/api/accounts"
	"github.com/tuma-sms/tuma/transport/api/admin"
	"github.com/tuma-sms/tuma/transport/api/campaigns"
	"github.com/tuma-sms/tuma/transport/api/contacts"
	"github.com/tuma-sms/tuma/transport/api/inbound"
	"github.com/tuma-sms/tuma/transport/api/notifications"
	"github.com/tuma-sms/tuma/transport/api/ops"
	"github.com/tuma-sms/tuma/transport/api/sandbox"
	"github.com/tuma-sms/tuma/transport/api/senders"
	apismpp "github.com/tuma-sms/tuma/transport/api/smpp"
	"github.com/tuma-sms/tuma/transport/api/sms"
	"github.com/tuma-sms/tuma/transport/api/suppressions"
	"github.com/tuma-sms/tuma/transport/api/wallet"
	apiwebhooks "github.com/tuma-sms/tuma/transport/api/webhooks"
	"github.com/tuma-sms/tuma/transport/auth"
	"github.com/tuma-sms/tuma/transport/mail"
	"github.com/tuma-sms/tuma/transport/payments"
	"github.com/tuma-sms/tuma/transport/smppserver"
	"github.com/tuma-sms/tuma/transport/webhooks"
)

// boot brings the node up behind its front: stores, migrations, the engine and the full front
// door. A database that cannot be reached yet is retryable (errUnreachable); anything else
// stops the node.
func (a *App) boot(ctx context.Context) (err error) {
	cfg, log := a.cfg, a.log
	a.front.SetStage("connecting to PostgreSQL")
	a.store, err = persistence.Open(ctx, persistence.Options{URL: cfg.DatabaseURL, MaxConns: int32(cfg.DatabaseMaxConns), Faults: cfg.Faults.store(),
		WebhookKey: webhookKey(cfg), WebhookCache: cfg.WebhookCache}, log)
	if err != nil {
		return fmt.Errorf("postgresql: %w: %w", errUnreachable, err)
	}
	if err := a.lockNode(ctx); err != nil {
		return err
	}
	if cfg.MigrateOnStart {
		a.front.SetStage("applying migrations")
		from, to, err := a.store.Migrate(ctx)
		if err != nil {
			return err
		}
		if from != to {
			log.Info("migrated database", slog.Int("from", int(from)), slog.Int("to", int(to)))
		}
	}
	a.redis, err = redis.New(ctx, redis.Options{URL: cfg.RedisURL, Prefix: cfg.RedisPrefix}, log)
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	if !a.redis.Available() {
		log.Warn("redis is not reachable; serving with in-process fallbacks until it is", slog.String("url", redact("TUMA_REDIS_URL", cfg.RedisURL)))
	}

	a.front.SetStage("starting the engine")
	if cfg.ClusterAddr != "" {
		a.front.SetStage("joining the cluster at " + cfg.ClusterAddr)
	}
	if err := a.startEngine(ctx); err != nil {
		return err
	}

	sender, err := mail.NewSender(cfg.SMTPURL, cfg.MailFrom, log)
	if err != nil {
		return err
	}
	a.outbox, err = mail.NewOutbox(a.store, sender, mail.OutboxOptions{
		Poll: min(max(cfg.MailRetryMin, 100*time.Millisecond), 5*time.Second), RetryMin: cfg.MailRetryMin, RetryMax: cfg.MailRetryMax,
		GiveUp: cfg.MailGiveUp,
	}, log, a.registry)
	if err != nil {
		return err
	}

	provider, sandboxOn := a.buildPayments()
	docs, err := documents.Open(cfg.DataDir)
	if err != nil {
		return fmt.Errorf("TUMA_DATA_DIR: %w", err)
	}

	a.http, err = a.frontDoor(provider, sandboxOn, docs)
	return err
}

// frontDoor builds the HTTP front door: the chain, and each group of endpoints with the
// collaborators it uses.
func (a *App) frontDoor(provider wallet.Provider, sandboxOn bool, docs *documents.Folder) (*api.Server, error) {
	cfg, log := a.cfg, a.log
	passwords, err := auth.NewPasswords(cfg.BcryptCost)
	if err != nil {
		return nil, err
	}
	// SMPP passwords are random and checked at every bind: a lower cost does (auth.SMPPPasswordCost).
	smppPasswords, err := auth.NewPasswords(min(cfg.BcryptCost, auth.SMPPPasswordCost))
	if err != nil {
		return nil, err
	}
	tokens := auth.NewTokens([]byte(cfg.JWTSecret), a.now)
	principals := redis.NewPrincipals(a.redis, 5*time.Minute)
	limiter := redis.NewLimiter(a.redis, cfg.LocalLimitKeys)
	plan := carriers.DefaultPlan()
	mailer := waker{a.engine, workerMail}
	messages := mail.Messages{Product: "Tuma", PublicURL: cfg.PublicURL, DashboardURL: cfg.DashboardURL}
	proxies := api.Proxies(cfg.TrustedProxies)

	opts := api.Options{
		MaxBodyBytes:   cfg.MaxBodyBytes,
		RequestTimeout: cfg.RequestTimeout,
		MaxInFlight:    cfg.MaxInFlight,
		ShedLatency:    cfg.ShedLatency,
		AccessLog:      cfg.AccessLog,
		TrustedProxies: cfg.TrustedProxies,
		AccountRate:    redis.Rate{PerSecond: cfg.RateLimitRPS, Burst: cfg.RateLimitBurst},
		AdminToken:     cfg.AdminToken,
		Faults:         cfg.Faults.front(),
	}
	keys := api.NewKeys(a.store, opts, log)
	lists := api.NewLists(derive(cfg.JWTSecret, "list cursors"))
	checkouts := wallet.NewCheckouts(a.store, provider, cfg.PublicURL, log)

	loginPerSecond := float64(cfg.LoginPerMinute) / 60
	accountOpts := accounts.Options{
		DashboardURL:       cfg.DashboardURL,
		Proxies:            proxies,
		LoginRatePerEmail:  redis.Rate{PerSecond: loginPerSecond, Burst: cfg.LoginPerMinute},
		LoginRatePerIP:     redis.Rate{PerSecond: loginPerSecond * 10, Burst: cfg.LoginPerMinute * 10},
		AuthRatePerIP:      perPeriod(cfg.AuthLimitPerIP, time.Minute),
		SignupRatePerIP:    perPeriod(cfg.SignupLimitPerIP, time.Hour),
		EmailRatePerAddr:   perPeriod(cfg.EmailsPerHour, time.Hour),
		EmailRatePerIP:     perPeriod(20*cfg.EmailsPerHour, time.Hour),
		CodeAttemptsPerDay: cfg.CodeAttemptsPerDay,
		CodeSecret:         derive(cfg.JWTSecret, "verification codes"),
		RefreshTokenTTL:    cfg.RefreshTokenTTL,
	}
	checks := []ops.Check{
		{Name: "postgres", Critical: true, Probe: a.store.Ping},
		{Name: "redis", Critical: false, Probe: a.redis.Ping},
	}
	if cfg.ClusterAddr != "" { // served once the engine runs (the handler is attached after boot)
		checks = append(checks, ops.Check{Name: "cluster", Critical: true, Probe: func(context.Context) error { return a.engine.ClusterHealth() }})
	}
	operations, err := ops.New(ops.Options{MetricsElsewhere: cfg.MetricsAddr != "", Pprof: cfg.Pprof}, ops.Deps{
		Log: log, Registerer: a.registry, Gatherer: a.registry,
		Checks:   checks,
		Recovery: func() any { return a.engine.Recovery() },
	})
	if err != nil {
		return nil, err
	}
	authn := auth.NewAuthenticator(a.store, principals, tokens)
	acct := accounts.New(accountOpts, accounts.Deps{
		Store: a.store, Passwords: passwords, Tokens: tokens, Principals: principals, Limiter: limiter,
		Engine: a.engine, Mail: mailer, Messages: messages, Plan: plan, Now: a.now,
	})
	verify := accounts.NewVerification(accountOpts, accounts.VerificationDeps{
		Store: a.store, Passwords: passwords, Principals: principals, Limiter: limiter,
		Engine: a.engine, Mail: mailer, Messages: messages, Now: a.now,
	})
	senderIDs := senders.New(senders.Options{SharedSender: cfg.SharedSenderID, SenderFees: cfg.SenderFees}, senders.Deps{
		Log: log, Store: a.store, Documents: docs, Engine: a.engine, Checkouts: checkouts, Keys: keys, Lists: lists, Now: a.now,
	})
	money := wallet.New(wallet.Options{DashboardURL: cfg.DashboardURL, Provider: provider.Name(), Proxies: proxies}, wallet.Deps{
		Log: log, Store: a.store, Engine: a.engine, Checkouts: checkouts, Confirmer: a.confirm,
		Webhooks: payments.Schemes{payments.PaystackHMAC{Secret: []byte(cfg.PaymentSecretKey)}}, Keys: keys, Lists: lists,
	})
	book := contacts.New(contacts.Options{RequestTimeout: cfg.RequestTimeout, ImportWorkers: cfg.ImportWorkers}, contacts.Deps{
		Store: a.store, Tenants: a.engine, Lists: lists, Plan: plan,
	})
	drives := campaigns.New(campaigns.Deps{Store: a.store, Engine: a.engine, Keys: keys, Lists: lists, Plan: plan, Now: a.now})
	sending := sms.New(sms.Options{DeliveryRate: perPeriod(cfg.DeliveryChecksPerMinute, time.Minute)}, sms.Deps{
		Store: a.store, Engine: a.engine, Keys: keys, Limiter: limiter, Lists: lists, Plan: plan,
	})
	if cfg.SMPPServerAddr != "" {
		a.smppServer, err = smppserver.New(smppserver.Options{Addr: cfg.SMPPServerAddr, TPS: cfg.SMPPServerTPS}, smppserver.Deps{
			Log: log, Binds: smppBinds{a.store, smppPasswords}, Sender: smppSends{sending, a.store},
			Receipts: a.store, Registerer: a.registry, Limiter: limiter})
		if err != nil {
			return nil, fmt.Errorf("TUMA_SMPP_SERVER_ADDR: %w", err)
		}
	}
	hooks := apiwebhooks.New(apiwebhooks.Deps{Log: log, Store: a.store, Keys: keys, URLs: webhooks.Policy{AllowPrivate: cfg.WebhookAllowPrivate},
		Lists: lists, Wake: waker{a.engine, workerWebhooks}.Wake})
	smppCredentials := apismpp.New(apismpp.Options{PerAccount: cfg.SMPPCredentialsPerAccount},
		apismpp.Deps{Store: a.store, Passwords: smppPasswords, Keys: keys})
	suppress := suppressions.New(suppressions.Deps{Store: a.store, Tenants: a.engine, Lists: lists, Plan: plan})
	inbox := inbound.New(inbound.Options{Simulated: a.simControl() != nil}, inbound.Deps{Store: a.store, Tenants: a.engine, Lists: lists, Plan: plan})
	if a.smpp != nil {
		a.smpp.Inbound(inboundFromSMPP(inbox))
	}
	dashboard, err := a.dashboard(authn, acct, verify, pageOps{senders: senderIDs, wallet: money, contacts: book,
		campaigns: drives, sms: sending, webhooks: hooks, accounts: acct, suppress: suppress, inbox: inbox, smpp: smppCredentials})
	if err != nil {
		return nil, err
	}
	return api.New(opts, api.Deps{
		Log:        log,
		Registerer: a.registry,
		Auth:       authn,
		Limiter:    limiter,
		Probe:      operations.ProbeDependencies,
	},
		acct,
		verify,
		sending,
		senderIDs,
		book,
		drives,
		money,
		hooks,
		suppress,
		inbox,
		smppCredentials,
		notifications.New(a.store),
		admin.New(a.simControl()),
		sandbox.New(sandbox.Options{On: sandboxOn, Secret: cfg.PaymentSecretKey, PublicURL: cfg.PublicURL, DashboardURL: cfg.DashboardURL},
			sandbox.Deps{Store: a.store, Hooks: waker{a.engine, workerHooks}, Now: a.now}),
		operations,
		dashboard,
	)
}

// inboundFromSMPP hands the networks' mobile-originated messages to the inbox, the way the
// simulator's endpoint hands its own: stored for the account owning the number, keywords acted
// on and the tenant told, before the SMSC is answered.
func inboundFromSMPP(inbox *inbound.Handler) smpplink.InboundSink {
	return func(ctx context.Context, n carriers.Network, m smpp.MO) error {
		_, err := inbox.ReceiveFrom(ctx, m.Source, m.Dest, n, m.Text)
		if errors.Is(err, inbound.ErrUnreadableAddress) {
			return fmt.Errorf("%w: %w", smpp.ErrMORefused, err)
		}
		return err
	}
}

// simControl is the operators' handle on the simulated networks; none in production or on
// real carriers.
func (a *App) simControl() admin.Simulators {
	if a.sims == nil || a.cfg.Env == "production" {
		return nil
	}
	return simControl{a.sims}
}

// perPeriod is a budget of n per period as a token bucket (n 0: no limit).
func perPeriod(n int, period time.Duration) redis.Rate {
	if n <= 0 {
		return redis.Rate{}
	}
	return redis.Rate{PerSecond: float64(n) / period.Seconds(), Burst: n}
}

// buildPayments makes the payment provider: Paystack, or the sandbox (sandboxOn), which this
// node serves itself in Paystack's wire format and reaches through the same client over
// loopback.
func (a *App) buildPayments() (p *payments.Paystack, sandboxOn bool) {
	cfg := a.cfg
	secret := cfg.PaymentSecretKey
	p = payments.NewPaystack("paystack", cfg.PaystackBaseURL, secret, nil)
	if cfg.PaymentProvider == "sandbox" {
		self := "http://" + listenURLHost(a.ln.Addr().String())
		p = payments.NewPaystack("sandbox", self+"/sandbox/paystack", secret, nil)
		a.hooks = sandbox.NewHooks(a.store, self+"/payments/webhook", []byte(secret), cfg.MailRetryMin, a.log)
		sandboxOn = true
	}
	a.confirm = payments.NewConfirmer(p, a.store, a.engine, a.log, a.now)
	return p, sandboxOn
}

// startEngine starts the simulated networks and the dispatch engine, which resumes any
// unfinished work before it takes new sends.
func (a *App) startEngine(ctx context.Context) error {
	cfg := a.cfg
	simOpts := map[carriers.Network]sim.Options{}
	links := map[carriers.Network]actors.LinkOptions{}
	for _, n := range carriers.Networks() {
		simOpts[n] = sim.Options{
			Latency: cfg.SimLatency, TPS: cfg.SimTPS[n], FailureRate: cfg.SimFailureRate, ThrottleRate: cfg.SimThrottleRate,
			ReceiptDelay: cfg.SimReceiptDelay, ReceiptJitter: cfg.SimReceiptDelay / 2,
			Delivered: cfg.SimOutcomes.Delivered, Undeliverable: cfg.SimOutcomes.Undeliverable,
			Expired: cfg.SimOutcomes.Expired, Rejected: cfg.SimOutcomes.Rejected,
		}
		links[n] = actors.LinkOptions{TPS: cfg.LinkTPS[n], Window: cfg.LinkWindow}
	}
	var (
		err error
		cs  map[carriers.Network]actors.Carrier
	)
	switch cfg.Carriers {
	case "sim":
		if a.sims, err = simlink.New(simOpts); err != nil {
			return err
		}
		cs = a.sims.Carriers()
	case "smpp":
		if a.smppMetrics == nil { // registered once: a boot that retries starts the links again
			a.smppMetrics = smpp.NewMetrics(a.registry)
		}
		if a.smpp, err = smpplink.New(cfg.SMPPBinds, a.log, a.smppMetrics); err != nil {
			return err
		}
		cs = a.smpp.Carriers()
		for n, l := range links {
			l.Window = max(l.Window, a.smpp.Window(n)) // every bind's window can be in use at once
			links[n] = l
		}
	default: // the option's validation allows only the drivers built here
		return fmt.Errorf("TUMA_CARRIERS=%s: no such carrier driver", cfg.Carriers)
	}
	a.engine, err = actors.Start(ctx, actors.Options{
		SharedSender:    cfg.SharedSenderID,
		ReceiptTimeout:  cfg.ReceiptTimeout,
		ReceiptDeadline: cfg.ReceiptDeadline,
		OrphanSweep:     cfg.OrphanSweep,
		TakeoverSettle:  cfg.TakeoverSettle,
		Faults:          cfg.Faults.engine(),
		LowBalanceCents: cfg.LowBalanceCents,
		HandOffBudget:   messageBudget(cfg.HandOffMessages),
		WaitingInline:   messageBudget(cfg.WaitingMessages),
		CampaignWindow:  cfg.CampaignWindow,
		JobWindow:       jobWindow(cfg.JobWindow),
		AcceptWriters:   cfg.AcceptWriters,
		BulkYield:       cfg.BulkAcceptYield,
		Now:             a.now,
		QuietCheck:      cfg.QuietHoursCheck,
		NodeID:          cfg.NodeID,
		Cluster:         actors.ClusterOptions{Addr: cfg.ClusterAddr, Peers: cfg.ClusterPeers, PauseLimit: cfg.ClusterPauseLimit},
		Links:           links,
	}, actors.Deps{Log: a.log, Registerer: a.registry, Store: a.store, Carriers: cs, Slots: redis.NewSchedule(a.redis)})
	if err != nil {
		return fmt.Errorf("start engine: %w", err)
	}
	if a.sims != nil {
		a.sims.Deliver(a.engine.Receipt)
	}
	if a.smpp != nil {
		a.smpp.Deliver(a.engine.Receipt)
		a.smpp.Answers(a.engine.LateAnswer)
	}
	return nil
}

// jobWindow is TUMA_JOB_WINDOW as the engine takes it: 0 turns the limit off.
func jobWindow(n int) int {
	if n == 0 {
		return math.MaxInt32
	}
	return n
}

// messageBudget is TUMA_HANDOFF_MESSAGES or TUMA_WAITING_MESSAGES as the engine takes it:
// 0 turns the budget's use off.
func messageBudget(n int) int64 {
	if n == 0 {
		return -1
	}
	return int64(n)
}
