// Webhooks: the delivery side's wiring (transport/webhooks) into the node's workers.

package app

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/transport/webhooks"
)

// Worker names of the webhook side.
const (
	workerWebhooks  = "webhooks"          // claims deliveries for the deliverer
	workerHookPrune = "webhook-retention" // deletes finished deliveries past the retention
	workerHookGauge = "webhook-backlog"   // measures the backlog for the gauges
)

// webhookKey is the key that seals webhook secrets at rest: TUMA_WEBHOOK_SECRET_KEY, else one
// derived from TUMA_JWT_SECRET, else (a random JWT secret: development) persistence's fixed
// development key, so secrets survive a restart.
func webhookKey(cfg Config) []byte {
	switch {
	case cfg.WebhookSecretKey != "":
		return []byte(cfg.WebhookSecretKey)
	case !cfg.JWTSecretGenerated:
		return derive(cfg.JWTSecret, "webhook secrets")
	}
	return nil
}

// userAgent is Tuma-Webhooks/<the binary's module version>.
func userAgent() string {
	v := "dev"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	return "Tuma-Webhooks/" + v
}

// webhookWorkers builds the deliverer, starts its attempts' loop (stopped by stopWebhooks
// after the engine's workers) and returns its workers.
func (a *App) webhookWorkers() []actors.Worker {
	if a.webhookMetrics == nil { // registered once, whatever happens to this node's boot
		a.webhookMetrics = webhooks.NewMetrics(a.registry)
	}
	failing := a.cfg.WebhookDisableAfter
	if failing == 0 {
		failing = -1 // never: the deliverer's zero is its default
	}
	d := webhooks.New(a.store, webhooks.Options{
		Schedule:     a.cfg.WebhookSchedule,
		Lanes:        a.cfg.WebhookLanes,
		FailingLimit: failing,
		UserAgent:    userAgent(),
		Policy:       webhooks.Policy{AllowPrivate: a.cfg.WebhookAllowPrivate},
		Wake:         func() { a.engine.Wake(workerWebhooks) },
	}, a.log, a.webhookMetrics)
	a.store.OnWebhookEvents(func() { a.engine.Wake(workerWebhooks) })
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); d.Run(ctx) }()
	a.stopWebhooks = func() { cancel(); wg.Wait() }
	return []actors.Worker{
		{Name: workerWebhooks, Every: time.Second, Timeout: time.Minute, AtStart: true, Round: d.Round},
		{Name: workerHookPrune, Every: time.Minute, Round: d.Prune},
		{Name: workerHookGauge, Every: 5 * time.Second, AtStart: true, Round: d.Measure},
	}
}
