package drill

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// tenant is an account a drill registered and funded through the API.
type tenant struct {
	id, email, password, key string
}

// apiKey is the header pair that authenticates as the tenant.
func (t *tenant) apiKey() []string { return []string{"X-API-Key", t.key} }

// register creates an account (POST /auth/register) with a password unique to the run.
func (r *runner) register(ctx context.Context, c *client, label string) (*tenant, error) {
	t := &tenant{email: fmt.Sprintf("drill-%s-%s@example.com", r.id, label), password: "Dr1ll" + randomHex(8)}
	r.secrets.add("password", t.password)
	body := map[string]string{"email": t.email, "password": t.password, "full_name": "Drill Tenant", "company_name": "Drill"}
	var last reply
	ambiguous := false // an attempt's outcome was unknown: the account may exist already
	for attempt := 0; attempt < 50; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		last = c.do(rctx, "POST", "/auth/register", body)
		cancel()
		if last.status == 409 && ambiguous {
			// The earlier attempt created it; its key was in the answer that never came.
			return t, r.recoverKey(ctx, c, t)
		}
		if last.status == 201 || (last.status != 503 && last.status != 0) || ctx.Err() != nil {
			break
		}
		ambiguous = true
		time.Sleep(200 * time.Millisecond)
	}
	if err := last.expect(201); err != nil {
		return nil, fmt.Errorf("register %s: %w", t.email, err)
	}
	var u struct {
		ID     string `json:"id"`
		APIKey string `json:"api_key"`
	}
	if err := last.decode(&u); err != nil || u.ID == "" || u.APIKey == "" {
		return nil, fmt.Errorf("register %s: no id and api_key in %s", t.email, clip(last.body, 200))
	}
	t.id, t.key = u.ID, u.APIKey
	r.secrets.add("api key", t.key)
	return t, nil
}

// credit funds a tenant through the admin API, with an Idempotency-Key so a retry never
// credits twice.
func (r *runner) credit(ctx context.Context, c *client, t *tenant, kes int) error {
	key := "drill-credit-" + randomHex(8)
	var last reply
	for attempt := 0; attempt < 50; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		last = c.do(rctx, "POST", "/admin/accounts/"+t.id+"/credit",
			map[string]any{"amount_kes": kes, "description": "tuma drill"}, append(adminAuth(), "Idempotency-Key", key)...)
		cancel()
		if last.status == 200 || (last.status != 503 && last.status != 409 && last.status != 0) || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := last.expect(200); err != nil {
		return fmt.Errorf("credit %s: %w", t.email, err)
	}
	return nil
}

// tenants registers and funds n accounts, four at a time.
func (r *runner) tenants(ctx context.Context, c *client, label string, n, kes int) ([]*tenant, error) {
	out := make([]*tenant, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			t, err := r.register(ctx, c, fmt.Sprintf("%s-%d", label, i))
			if err == nil && kes > 0 {
				err = r.credit(ctx, c, t, kes)
			}
			out[i], errs[i] = t, err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// recoverKey gets a new API key for an account whose registration answer was lost: it logs
// in, rotates the key (the lost one stops working) and reads the account's id.
func (r *runner) recoverKey(ctx context.Context, c *client, t *tenant) error {
	retry := func(f func() reply, want int) (reply, error) {
		var last reply
		for attempt := 0; attempt < 50; attempt++ {
			if last = f(); last.status == want || (last.status != 503 && last.status != 0) || ctx.Err() != nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		return last, last.expect(want)
	}
	login, err := retry(func() reply {
		return c.do(ctx, "POST", "/auth/login", map[string]string{"email": t.email, "password": t.password})
	}, 200)
	if err != nil {
		return fmt.Errorf("log in %s: %w", t.email, err)
	}
	var tok struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	if err := login.decode(&tok); err != nil {
		return err
	}
	r.secrets.add("bearer token", tok.AccessToken)
	r.secrets.add("refresh token", tok.RefreshToken)
	bearer := []string{"Authorization", "Bearer " + tok.AccessToken}
	rot, err := retry(func() reply { return c.do(ctx, "POST", "/auth/rotate-api-key", nil, bearer...) }, 200)
	if err != nil {
		return fmt.Errorf("rotate the key of %s: %w", t.email, err)
	}
	var key struct {
		APIKey string `json:"api_key"`
	}
	if err := rot.decode(&key); err != nil {
		return err
	}
	me, err := retry(func() reply { return c.do(ctx, "GET", "/auth/me", nil, bearer...) }, 200)
	if err != nil {
		return fmt.Errorf("read %s: %w", t.email, err)
	}
	var u struct {
		ID string `json:"id"`
	}
	if err := me.decode(&u); err != nil {
		return err
	}
	t.id, t.key = u.ID, key.APIKey
	r.secrets.add("api key", t.key)
	return nil
}
