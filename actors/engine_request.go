// Reaching the actors: which actor owns a key (a writer by account, a receipts shard by
// provider message id, a tenant by account), and asking one with a deadline.

package actors

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
)

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

// receiptsForMessage is the shard of a message that has no provider id (it failed before any
// network took it, or the network's answer was lost).
func (e *Engine) receiptsForMessage(id uuid.UUID) *actor.PID {
	return e.receipts[binary.BigEndian.Uint32(id[12:])%uint32(len(e.receipts))]
}

// tenant returns this node's tenant actor of an account, spawning it if needed; errMoved if
// another node owns the account.
func (e *Engine) tenant(ctx context.Context, id uuid.UUID) (*actor.PID, error) {
	if pid, ok := e.tenants.Load(id); ok && e.owns(id) {
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
	f, err := e.future(ctx, pid, msg)
	if err != nil {
		return nil, err
	}
	return futureResult(f)
}

// future sends a command whose answer the returned future will hold, within the command
// timeout or ctx's deadline.
func (e *Engine) future(ctx context.Context, pid *actor.PID, msg any) (*actor.Future, error) {
	timeout := e.opts.CommandTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return nil, ErrBusy
	}
	return e.root.RequestFuture(pid, msg, timeout), nil
}

// futureResult waits for a future's answer; an answer that is an error is returned as one.
func futureResult(f *actor.Future) (any, error) {
	res, err := f.Result()
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

// tenantRequest sends a command to an account's tenant, on whichever node owns the account.
// While the account moves between nodes (the cluster's membership changed) it asks again.
func (e *Engine) tenantRequest(ctx context.Context, id uuid.UUID, msg any) (any, error) {
	if e.lapsed() {
		e.lapseRefused.Add(1)
		return nil, errLapsedCommand
	}
	for attempt := 0; ; attempt++ {
		var res any
		var err error
		if e.owns(id) {
			res, err = e.localTenantRequest(ctx, id, msg)
		} else {
			res, err = e.remoteRequest(ctx, id, msg)
		}
		if errors.Is(err, errMoved) && attempt < 50 && ctx.Err() == nil {
			time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
			continue
		}
		return res, err
	}
}

// localTenantRequest sends a command to this node's tenant of the account. A tenant that
// stopped (idle) between lookup and delivery answers with a dead letter; the lookup is then
// retried.
func (e *Engine) localTenantRequest(ctx context.Context, id uuid.UUID, msg any) (any, error) {
	if e.lapsed() { // another node's request: that node's view is the live one
		e.lapseRefused.Add(1)
		return nil, errLapsedCommand
	}
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
