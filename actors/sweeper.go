package actors

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tuma-sms/tuma/persistence"
)

// sweeperActor walks every sent message still waiting for its receipt after ReceiptTimeout,
// in (job, message) order, a page at a time across rounds, so none is skipped however many
// there are: carriers lose receipts, and a node may die before writing one. It asks the
// network about each; a message still without a final answer after ReceiptDeadline fails and
// is refunded, exactly once (the receipts' status guard).
type sweeperActor struct {
	e      *Engine
	st     *sweeperState
	timers timers
}

type sweeperState struct {
	cursor  persistence.StaleCursor
	walking bool
	inbox   inbox
}

type (
	sweepTick struct{}
	swept     struct {
		cursor          persistence.StaleCursor
		asked, answered int
		expired         int
		err             error
	}
)

const (
	sweepPage   = 1000 // stale messages read at a time
	sweepRounds = 20   // pages per round at most; the next round goes on from the cursor
)

func (s *sweeperActor) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		s.takeInbox(ctx)
		if !s.st.walking {
			s.timers.after(s.e.root, ctx.Self(), s.e.opts.SweepInterval, &sweepTick{})
		}
	case *actor.Restarting, *actor.Stopping:
		s.timers.stop()
	case *inboxPoke:
		s.takeInbox(ctx)
	case *sweepTick:
		s.walk(ctx)
	case *panicNow:
		panic("sweeper: panic requested")
	}
}

func (s *sweeperActor) takeInbox(ctx actor.Context) {
	for _, m := range s.st.inbox.take() {
		w := m.(*swept)
		s.st.walking = false
		s.st.cursor = w.cursor
		if w.err != nil && !errors.Is(w.err, context.Canceled) {
			s.e.log.Error("sweep messages without receipts", slog.Any("error", w.err))
		}
		if w.asked > 0 || w.expired > 0 {
			s.e.log.Info("swept messages without receipts", slog.Int("asked", w.asked), slog.Int("answered", w.answered),
				slog.Int("expired", w.expired))
		}
		s.timers.after(s.e.root, ctx.Self(), s.e.opts.SweepInterval, &sweepTick{})
	}
}

// walk runs one round on an owned goroutine: up to sweepRounds pages from the cursor.
func (s *sweeperActor) walk(ctx actor.Context) {
	st, e := s.st, s.e
	if st.walking {
		return
	}
	st.walking = true
	self, root, cursor := ctx.Self(), e.root, st.cursor
	e.goIO(10*time.Minute, func(c context.Context) {
		w := &swept{cursor: cursor}
		for range sweepRounds {
			if e.lapsed() { // its lease may have passed on while it was paused
				break
			}
			// One node sweeps at a time (several would ask the networks the same questions);
			// the lease is renewed with every page and passes on when its holder stops.
			held, err := e.HoldLease(c, "sweeper", max(3*e.opts.SweepInterval, 30*time.Second))
			if err != nil || !held {
				w.err = err
				break
			}
			now := time.Now()
			page, err := e.store.StaleSent(c, w.cursor, now.Add(-e.opts.ReceiptTimeout), sweepPage)
			if err != nil {
				w.err = err
				break
			}
			if len(page) == 0 {
				w.cursor = persistence.StaleCursor{} // the walk is complete; the next starts over
				break
			}
			for _, m := range page {
				s.settle(c, m, now, w)
				w.cursor = persistence.StaleCursor{JobID: m.JobID, MessageID: m.ID}
			}
			if c.Err() != nil {
				break
			}
		}
		st.inbox.put(root, self, w)
	})
}

// settle asks the network about one stale message, or fails it once its deadline has passed.
func (s *sweeperActor) settle(ctx context.Context, m persistence.StaleMessage, now time.Time, w *swept) {
	e := s.e
	nm := &e.m.net[m.Network]
	if m.ProviderID != "" {
		w.asked++
		nm.sweepAsked.Inc()
		st, err := e.carriers[m.Network].Query(ctx, m.ProviderID)
		if err == nil && st.Final {
			w.answered++
			e.Receipt(m.Network, m.ProviderID, st)
			return
		}
	}
	if m.SentAt.After(now.Add(-e.opts.ReceiptDeadline)) {
		return // asked again next round
	}
	w.expired++
	nm.sweepExpired.Inc()
	shard := e.receiptsForMessage(m.ID)
	if m.ProviderID != "" {
		shard = e.receiptsFor(m.Network, m.ProviderID) // ordered with any receipt of the same message
	}
	e.root.Send(shard, &failedEv{
		f: persistence.Failure{AccountID: m.AccountID, MessageID: m.ID, ProviderStatus: "EXPIRED",
			Error: "no delivery receipt within " + e.opts.ReceiptDeadline.String(), At: now},
		network: m.Network,
	})
}
