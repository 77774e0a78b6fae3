package sms

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/auth"
)

// fakeKeys keeps idempotency keys as the store does: a claim per key, completed with the
// job its send created.
type fakeKeys struct {
	mu   sync.Mutex
	keys map[persistence.IdempotencyKey]*fakeKey // by account and key (Claim zero)
}

type fakeKey struct {
	hash  []byte
	claim uuid.UUID
	job   *uuid.UUID
}

func (f *fakeKeys) ClaimIdempotencyKey(_ context.Context, k persistence.IdempotencyKey, hash []byte, _ time.Duration) (persistence.IdempotencyKey, *persistence.StoredResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := persistence.IdempotencyKey{AccountID: k.AccountID, Key: k.Key}
	got, ok := f.keys[id]
	switch {
	case !ok:
		k.Claim = uuid.New()
		f.keys[id] = &fakeKey{hash: hash, claim: k.Claim}
		return k, nil, nil
	case !bytes.Equal(got.hash, hash):
		return k, nil, persistence.ErrIdempotencyUsed
	case got.job == nil:
		return k, nil, persistence.ErrIdempotencyBusy
	}
	return k, &persistence.StoredResponse{Status: 202, ResourceID: got.job}, nil
}

func (f *fakeKeys) ReleaseIdempotencyKey(_ context.Context, k persistence.IdempotencyKey) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.keys, persistence.IdempotencyKey{AccountID: k.AccountID, Key: k.Key})
	return nil
}

func (f *fakeKeys) CompleteIdempotencyKey(_ context.Context, k persistence.IdempotencyKey, resp persistence.StoredResponse) error {
	if resp.ResourceID != nil {
		f.complete(k, *resp.ResourceID)
	}
	return nil
}

func (f *fakeKeys) complete(k persistence.IdempotencyKey, job uuid.UUID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys[persistence.IdempotencyKey{AccountID: k.AccountID, Key: k.Key}].job = &job
}

// fakeEngine accepts sends as the engine does (completing the key with the job) and
// remembers them; fakeStore shows its jobs.
type fakeEngine struct {
	Engine
	keys *fakeKeys
	jobs map[uuid.UUID]persistence.Job
	sent int
}

func (e *fakeEngine) Send(_ context.Context, req actors.SendRequest) (actors.SendResult, error) {
	e.sent++
	res := actors.SendResult{JobID: uuid.New(), Recipients: len(req.Recipients), Units: 2 * int64(len(req.Recipients))}
	res.CostCents = 50 * res.Units
	e.jobs[res.JobID] = persistence.Job{ID: res.JobID, RecipientsCount: res.Recipients, SMSUnits: res.Units, CostCents: res.CostCents}
	if req.Idempotency != nil {
		e.keys.complete(*req.Idempotency, res.JobID)
	}
	return res, nil
}

type fakeStore struct {
	Store
	e *fakeEngine
}

func (s fakeStore) JobByID(_ context.Context, _, id uuid.UUID) (persistence.Job, error) {
	if j, ok := s.e.jobs[id]; ok {
		return j, nil
	}
	return persistence.Job{}, persistence.ErrNotFound
}

// The dashboard's send form calls SendOnce with a token per render: a second submit of the
// same form sends nothing and answers as the first; the token with another input is refused;
// a submit refused for its input gives the token back.
func TestSendOnceSendsOncePerKey(t *testing.T) {
	keys := &fakeKeys{keys: map[persistence.IdempotencyKey]*fakeKey{}}
	e := &fakeEngine{keys: keys, jobs: map[uuid.UUID]persistence.Job{}}
	h := New(Options{}, Deps{Store: fakeStore{e: e}, Engine: e, Plan: carriers.DefaultPlan(),
		Keys: api.NewKeys(keys, api.Options{}, slog.New(slog.DiscardHandler))})
	ctx := context.Background()
	p := auth.Principal{AccountID: uuid.New(), Source: "browser"}
	in := SendInput{Recipients: []string{"0712345678", "0733123456"}, Message: "hi"}

	first, replayed, err := h.SendOnce(ctx, p, in, "form-1")
	if err != nil || replayed || first.RecipientsCount != 2 || first.SMSCount != 4 || first.CostKES != 200 || first.Status != "sent" {
		t.Fatalf("first submit = %+v, replayed %v, %v", first, replayed, err)
	}
	again, replayed, err := h.SendOnce(ctx, p, in, "form-1")
	if err != nil || !replayed || again != first || e.sent != 1 {
		t.Fatalf("second submit = %+v, replayed %v, %v (%d sends); want the first answer, nothing sent", again, replayed, err, e.sent)
	}
	other := in
	other.Message = "changed"
	var pr *api.Problem
	if _, _, err := h.SendOnce(ctx, p, other, "form-1"); !errors.Is(err, persistence.ErrIdempotencyUsed) {
		t.Errorf("the token with another input = %v; want ErrIdempotencyUsed (422 idempotency_key_reused)", err)
	}
	bad := SendInput{Recipients: []string{"nope"}, Message: "hi"}
	if _, _, err := h.SendOnce(ctx, p, bad, "form-2"); !errors.As(err, &pr) || pr.Status != 422 {
		t.Fatalf("invalid input = %v; want a 422 problem", err)
	}
	if a, replayed, err := h.SendOnce(ctx, p, in, "form-2"); err != nil || replayed || a.JobID == first.JobID || e.sent != 2 {
		t.Errorf("after a refused submit, its token = %+v, replayed %v, %v; want a new send", a, replayed, err)
	}
	if _, replayed, err := h.SendOnce(ctx, p, in, ""); err != nil || replayed || e.sent != 3 {
		t.Errorf("without a token = replayed %v, %v; want a send", replayed, err)
	}
}
