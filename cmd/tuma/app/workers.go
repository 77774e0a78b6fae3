// Background work: the node's loops as workers the engine supervises.

package app

import (
	"context"
	"time"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/payments"
)

// Worker names.
const (
	workerMail       = "mail"          // the mail outbox
	workerReconciler = "reconciler"    // asks the payment provider about unconfirmed checkouts
	workerHooks      = "sandbox-hooks" // the sandbox provider's webhooks
	workerProbes     = "probes"        // dependency probes behind tuma_dependency_up
	workerScheduler  = "scheduler"     // starts scheduled campaigns when they are due
)

// schedulerBatch is how many due campaigns one scheduler round starts.
const schedulerBatch = 100

// waker wakes one worker: what a handler calls after queueing work for it.
type waker struct {
	engine *actors.Engine
	name   string
}

func (w waker) Wake() { w.engine.Wake(w.name) }

// startWorkers hands the node's background loops to the engine, which runs each as a
// supervised actor and stops them first when it stops (so what they hand it is still taken).
func (a *App) startWorkers() error {
	mail := actors.Outbox[*persistence.Email]{Claim: a.outbox.Claim, Deliver: a.outbox.Deliver,
		Delivered: a.outbox.Delivered, Failed: a.outbox.Failed, AfterRound: a.outbox.CountPending}
	reconcile := payments.ReconcileOptions{}.WithDefaults()
	workers := []actors.Worker{
		{Name: workerMail, Every: a.outbox.Poll(), Round: mail.Round, AtStart: true},
		{Name: workerReconciler, Every: reconcile.Every, Round: func(ctx context.Context) (bool, error) {
			// One node at a time asks the payment provider (several would ask the same questions).
			if held, err := a.engine.HoldLease(ctx, workerReconciler, 3*reconcile.Every); !held || err != nil {
				return false, err
			}
			return a.confirm.Reconcile(ctx, reconcile)
		}},
		{Name: workerProbes, Every: 5 * time.Second, Timeout: 10 * time.Second, Round: a.http.ProbeDependencies, AtStart: true},
		// Scheduled campaigns start within a second of their time; one due while the node was
		// down starts as soon as it is back.
		{Name: workerScheduler, Every: time.Second, AtStart: true, Round: func(ctx context.Context) (bool, error) {
			due, err := a.store.StartDueCampaigns(ctx, a.now(), schedulerBatch)
			a.engine.StartScheduled(due)
			return len(due) == schedulerBatch, err
		}},
	}
	workers = append(workers, a.webhookWorkers()...)
	if a.hooks != nil {
		hooks := actors.Outbox[persistence.SandboxTx]{Claim: a.hooks.Claim, Deliver: a.hooks.Deliver,
			Delivered: a.hooks.Delivered, Failed: a.hooks.Failed}
		workers = append(workers, actors.Worker{Name: workerHooks, Every: a.hooks.Poll(), Round: hooks.Round, AtStart: true})
	}
	for _, w := range workers {
		if err := a.engine.AddWorker(w); err != nil {
			return err
		}
	}
	return nil
}
