package drill

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"mime/multipart"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/bench/smtpsink"
)

// securityDrill probes every operation of the node's own /openapi.json: without credentials
// (401), with bad ones (401), with another tenant's (404), as a suspended account (403); with
// oversized (413), malformed (400), mistyped (422) and mislabelled (415) bodies; with hostile
// text (SQL, markup, NUL, control and odd Unicode, 100 KB strings) in every text field, path
// and query parameter, then reads everything back. A second node with the per-address limits
// on shows wrong passwords and wrong codes throttled within their budgets. Every answer is
// audited (no 5xx, documented statuses, problem+json, Retry-After). It runs last: at the end
// it scans the log of every node the run started for every secret the run used, and runs
// govulncheck on the source.
func securityDrill(ctx context.Context, r *runner, rec *recorder) error {
	var vuln <-chan vulnResult
	if r.cfg.Govulncheck {
		vuln = startGovulncheck(ctx, r.cfg.Source, govulncheckLimit)
	}
	// Without a mail server a development node writes every email in full to its log
	// (verification links, codes and reset tokens, by design: README, Email), and the log scan
	// would find the very secrets the drill asked for. With the sink, mail leaves the node as it
	// would in production, the drill reads the codes and tokens from the mails, and every line
	// of every log is scanned with no exception.
	sink, err := smtpsink.Listen("127.0.0.1:0")
	if err != nil {
		return err
	}
	defer sink.Close()
	s := &secState{r: r, rec: rec, sink: sink, audit: newAudit(), paySecret: "sk_test_drill_" + randomHex(16)}
	r.secrets.add("payment secret", s.paySecret)
	r.secrets.add("jwt secret", r.jwtSecret)
	if s.n, err = s.startNode(ctx, "security", map[string]string{
		"TUMA_MAX_BODY_BYTES": strconv.Itoa(probeBodyLimit),
		"TUMA_PPROF":          "true", // so /debug/pprof is probed behind the admin token, not merely off
		// This node is for probes, not limits (the second node's job): budgets out of the way.
		"TUMA_LOGIN_ATTEMPTS_PER_MINUTE":  "1000000",
		"TUMA_EMAILS_PER_HOUR":            "10000",
		"TUMA_DELIVERY_CHECKS_PER_MINUTE": "0",
	}); err != nil {
		return err
	}
	if s.doc, err = loadAPIDoc(ctx, s.n.c); err != nil {
		return err
	}
	s.p = newProber(s.n.base, s.audit, r.secrets)
	var seq atomic.Int64
	s.gen = sampler{d: s.doc, prefix: r.id, seq: func() int { return int(seq.Add(1)) }}
	if err := s.setup(ctx); err != nil {
		return err
	}
	rec.info("operations", float64(len(s.doc.ops)), "operations", s.doc.summary())

	s.unauthenticated(ctx)
	s.crossTenant(ctx)
	s.suspended(ctx)
	s.mailFlows(ctx)
	s.bodies(ctx)
	s.injection(ctx)
	s.panics(ctx)
	if err := s.bruteForce(ctx); err != nil {
		rec.fail("brute force", err.Error())
	}
	s.audit.rows(rec, s.doc)
	rec.info("probes", float64(s.audit.requests), "requests", fmt.Sprintf("%s requests to 2 nodes", count(int64(s.audit.requests))))

	// The nodes write their last lines as they stop; then every log of the run is read.
	r.stopNodes()
	s.logRow()
	if vuln != nil {
		vulnRow(rec, <-vuln)
	} else {
		rec.info("govulncheck", 0, "", "not run (--govulncheck=false)")
	}
	return nil
}

// probeBodyLimit is TUMA_MAX_BODY_BYTES of the security drill's nodes: small enough that an
// oversized body costs nothing, large enough for the 100 KB injection strings.
const probeBodyLimit = 256 << 10

// secState is the security drill's nodes, document and tenants.
type secState struct {
	r         *runner
	rec       *recorder
	n         *node
	doc       *apiDoc
	p         *prober
	audit     *audit
	sink      *smtpsink.Sink
	gen       sampler
	paySecret string
	// a and b probe each other; s is suspended; inj takes the hostile input.
	a, b, s, inj *secTenant
}

// secTenant is a tenant with a login and some resources of its own.
type secTenant struct {
	*tenant
	access, refresh   string
	res               map[string]string // message, provider, job, notification, reference, access_code → id
	sendBody          []byte
	sendKey           string
	accessCodesIssued []string // checkouts its probes opened, to render afterwards
}

// startNode starts one of the security checks' nodes. The probes are hostile by design, so
// they go only to a node this run started itself, listening on loopback.
func (s *secState) startNode(ctx context.Context, name string, extra map[string]string) (*node, error) {
	n, err := s.r.node(name, s.env(extra))
	if err != nil {
		return nil, err
	}
	if err := onLoopback(n.base); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	if _, err := n.start(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// onLoopback refuses a base URL whose host is not a loopback IP address.
func onLoopback(base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s is not on loopback: the security checks probe only nodes they start on this machine", base)
	}
	return nil
}

// env is the environment of the drill's nodes: mail goes to the sink (see securityDrill), the
// access log is on so the log scan sees what a production node logs for each request, and
// the payment secret is the drill's own, so it can sign webhooks and look for the secret.
func (s *secState) env(extra map[string]string) map[string]string {
	env := map[string]string{
		"TUMA_SMTP_URL":           s.sink.URL(),
		"TUMA_ACCESS_LOG":         "true",
		"TUMA_PAYMENT_SECRET_KEY": s.paySecret,
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// setup registers and funds the tenants, logs them in, and gives a and inj resources.
func (s *secState) setup(ctx context.Context) error {
	c := s.n.c
	ts := make([]*secTenant, 4)
	for i, label := range []string{"sec-a", "sec-b", "sec-s", "sec-inj"} {
		t, err := s.r.register(ctx, c, label)
		if err != nil {
			return err
		}
		ts[i] = &secTenant{tenant: t, res: map[string]string{}}
		if err := s.login(ctx, ts[i]); err != nil {
			return err
		}
	}
	s.a, s.b, s.s, s.inj = ts[0], ts[1], ts[2], ts[3]
	for _, t := range []*secTenant{s.a, s.b, s.inj} {
		if err := s.r.credit(ctx, c, t.tenant, 1000); err != nil {
			return err
		}
	}
	for _, t := range []*secTenant{s.a, s.inj} {
		if err := s.resources(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// login gets t a bearer and a refresh token.
func (s *secState) login(ctx context.Context, t *secTenant) error {
	r := s.n.c.do(ctx, "POST", "/auth/login", map[string]string{"email": t.email, "password": t.password})
	if err := r.expect(200); err != nil {
		return fmt.Errorf("login %s: %w", t.email, err)
	}
	var pair struct {
		Access  string `json:"access_token"`
		Refresh string `json:"refresh_token"`
	}
	if err := r.decode(&pair); err != nil {
		return err
	}
	t.access, t.refresh = pair.Access, pair.Refresh
	s.r.secrets.add("bearer token", t.access)
	s.r.secrets.add("refresh token", t.refresh)
	return nil
}

// resources gives t a job with a sent message, a notification and an open checkout.
func (s *secState) resources(ctx context.Context, t *secTenant) error {
	c := s.n.c
	t.sendBody = sendBody(s.gen.seq()*10, 3, "Drill: security probe")
	t.sendKey = "sec-" + randomHex(8)
	r := c.do(ctx, "POST", "/sms/send", t.sendBody, append(t.apiKey(), "Idempotency-Key", t.sendKey)...)
	var job struct {
		JobID string `json:"job_id"`
	}
	if err := r.expect(202); err != nil {
		return fmt.Errorf("send as %s: %w", t.email, err)
	}
	if err := r.decode(&job); err != nil {
		return fmt.Errorf("send as %s: %w", t.email, err)
	}
	t.res["job"] = job.JobID
	deadline := time.Now().Add(30 * time.Second)
	for t.res["provider"] == "" {
		var list struct {
			Data []struct {
				ID       string  `json:"id"`
				Provider *string `json:"provider_message_id"`
			} `json:"data"`
		}
		r := c.do(ctx, "GET", "/sms/messages?job_id="+job.JobID, nil, t.apiKey()...)
		if r.expect(200) == nil && r.decode(&list) == nil {
			for _, m := range list.Data {
				if m.Provider != nil {
					t.res["message"], t.res["provider"] = m.ID, *m.Provider
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no message of job %s was sent within 30 s", job.JobID)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := c.admin(ctx, "POST", "/admin/notifications/promo",
		map[string]any{"title": "Drill", "message": "A notification of " + t.email, "account_ids": []string{t.id}}, 201); err != nil {
		return err
	}
	r = c.do(ctx, "GET", "/notifications", nil, t.apiKey()...)
	var ns []struct {
		ID string `json:"id"`
	}
	if err := r.expect(200); err != nil || r.decode(&ns) != nil || len(ns) == 0 {
		return fmt.Errorf("notifications of %s: %s", t.email, clip(r.body, 200))
	}
	t.res["notification"] = ns[0].ID
	r = c.do(ctx, "POST", "/wallet/topup", map[string]any{"amount_kes": 50}, t.apiKey()...)
	var co struct {
		AccessCode string `json:"access_code"`
		Reference  string `json:"reference"`
	}
	if err := r.expect(200); err != nil || r.decode(&co) != nil {
		return fmt.Errorf("top-up of %s: %s", t.email, clip(r.body, 200))
	}
	t.res["access_code"], t.res["reference"] = co.AccessCode, co.Reference
	// A sender ID application, a contact group, a contact and a campaign.
	made := func(what, path string, body any, field string) error {
		r := c.do(ctx, "POST", path, body, t.apiKey()...)
		var out map[string]any
		if err := r.expect(201); err != nil || r.decode(&out) != nil {
			return fmt.Errorf("%s of %s: %d %s", what, t.email, r.status, clip(r.body, 200))
		}
		t.res[field], _ = out["id"].(string)
		return nil
	}
	if err := made("sender ID", "/senders", map[string]any{"name": "SEC" + strings.ToUpper(randomHex(3)), "network": "all"}, "sender"); err != nil {
		return err
	}
	if err := made("group", "/contacts/groups", map[string]any{"name": "Drill"}, "group"); err != nil {
		return err
	}
	if err := made("contact", "/contacts", map[string]any{"phone": fmt.Sprintf("0799%06d", s.gen.seq()%1_000_000), "group_id": t.res["group"]}, "contact"); err != nil {
		return err
	}
	// A suppressed number, named in its path by the number itself.
	t.res["suppression"] = fmt.Sprintf("0798%06d", s.gen.seq()%1_000_000)
	if r := c.do(ctx, "POST", "/suppressions", map[string]any{"phone": t.res["suppression"]}, t.apiKey()...); r.expect(201) != nil {
		return fmt.Errorf("suppression of %s: %d %s", t.email, r.status, clip(r.body, 200))
	}
	// A webhook endpoint (at a documentation address, TEST-NET-1: nothing answers there) and
	// a delivery of it.
	if err := made("webhook", "/webhooks", map[string]any{"url": "https://192.0.2.1/drill", "events": []string{"webhook.test"}}, "webhook"); err != nil {
		return err
	}
	r = c.do(ctx, "POST", "/webhooks/"+t.res["webhook"]+"/test", nil, t.apiKey()...)
	var queued struct {
		DeliveryID string `json:"delivery_id"`
	}
	if err := r.expect(202); err != nil || r.decode(&queued) != nil {
		return fmt.Errorf("webhook test of %s: %s", t.email, clip(r.body, 200))
	}
	t.res["delivery"] = queued.DeliveryID
	// An SMPP credential, its system_id made from the company name.
	if err := made("SMPP credential", "/smpp/credentials", map[string]any{}, "smpp"); err != nil {
		return err
	}
	// A campaign to that group, scheduled an hour ahead: it stays until the drill cancels it.
	return made("campaign", "/campaigns", map[string]any{"name": "Drill", "message": "Drill {first_name}", "group_id": t.res["group"],
		"scheduled_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, "campaign")
}

// opAt is the document's operation of a method and path template (nil if it has none).
func (s *secState) opAt(method, path string) *operation {
	for _, op := range s.doc.ops {
		if op.method == method && op.path == path {
			return op
		}
	}
	return nil
}

// pathValue is the value of a path parameter naming one of t's resources ("" if the drill
// has none of that kind: a new kind of resource needs a line here).
func (s *secState) pathValue(op *operation, param string, t *secTenant) string {
	switch {
	case param == "provider_message_id":
		return t.res["provider"]
	case param == "id" && strings.HasPrefix(op.path, "/sms/messages/"):
		return t.res["message"]
	case param == "id" && strings.HasPrefix(op.path, "/notifications/"):
		return t.res["notification"]
	case param == "id" && strings.HasPrefix(op.path, "/admin/accounts/"):
		return t.id
	case param == "id" && (strings.HasPrefix(op.path, "/senders/") || strings.HasPrefix(op.path, "/admin/senders/")):
		return t.res["sender"]
	case param == "id" && strings.HasPrefix(op.path, "/campaigns/"):
		return t.res["campaign"]
	case param == "id" && strings.HasPrefix(op.path, "/contacts/groups/"):
		return t.res["group"]
	case param == "id" && strings.HasPrefix(op.path, "/contacts/"):
		return t.res["contact"]
	case param == "id" && strings.HasPrefix(op.path, "/webhooks/"):
		return t.res["webhook"]
	case param == "id" && strings.HasPrefix(op.path, "/smpp/credentials/"):
		return t.res["smpp"]
	case param == "delivery_id":
		return t.res["delivery"]
	case param == "phone" && strings.HasPrefix(op.path, "/suppressions/"):
		return t.res["suppression"]
	case param == "kind":
		return "auth-letter"
	case param == "access_code" || param == "reference":
		return t.res[param]
	case param == "network":
		return "safaricom"
	case param == "filepath":
		return "index.html"
	case param == "path":
		return "cmdline"
	}
	return ""
}

// pathFor fills op's path with t's resources, naming the parameters it had none for (they
// get a random id).
func (s *secState) pathFor(op *operation, t *secTenant) (string, []string) {
	vals := map[string]string{}
	var missing []string
	for _, p := range op.pathParams {
		if vals[p] = s.pathValue(op, p, t); vals[p] == "" {
			missing = append(missing, p)
			vals[p] = uuid.NewString()
		}
	}
	return op.fill(vals), missing
}

// base is a valid body for op as t, from the document's schema. A few bodies must hold
// what only the drill knows (the tenant's own credentials) to be valid.
func (s *secState) base(op *operation, t *secTenant) map[string]any {
	m := s.gen.body(op.body)
	switch op.id {
	case "login":
		m["email"], m["password"] = t.email, t.password
	case "changePassword":
		m["current_password"] = t.password
	case "sendPromo":
		m["account_ids"] = []string{t.id}
	}
	return m
}

// sampleBody is a valid body of op as t, its Content-Type and any header it needs (the
// webhook's signature).
func (s *secState) sampleBody(op *operation, t *secTenant) ([]byte, string, []string) {
	switch {
	case op.bodyType == "":
		return nil, "", nil
	case op.bodyType == "application/x-www-form-urlencoded":
		return []byte("action=cancel"), op.bodyType, nil
	case op.bodyType == "multipart/form-data":
		return multipartSample(op.body)
	}
	b := mustJSON(s.base(op, t))
	return b, op.bodyType, s.signed(op, b)
}

// signed is the signature header a body needs (a payment webhook's), or nothing.
func (s *secState) signed(op *operation, body []byte) []string {
	if !slices.Contains(op.headerParams, "X-Paystack-Signature") {
		return nil
	}
	m := hmac.New(sha512.New, []byte(s.paySecret))
	m.Write(body)
	return []string{"X-Paystack-Signature", hex.EncodeToString(m.Sum(nil))}
}

// count runs a count query on the node's database.
func (s *secState) count(ctx context.Context, sql string, args ...any) (int64, error) {
	db, err := s.n.db(ctx)
	if err != nil {
		return 0, err
	}
	defer db.Close(context.WithoutCancel(ctx))
	var n int64
	err = db.QueryRow(ctx, sql, args...).Scan(&n)
	return n, err
}

// panics: hostile input made no handler and no actor panic.
func (s *secState) panics(ctx context.Context) {
	m, err := s.n.c.scrape(ctx)
	if err != nil {
		s.rec.fail("no panics", err.Error())
		return
	}
	p, restarts := m.sum("tuma_http_panics_total"), m.sum("tuma_actor_restarts_total")
	s.rec.value("no panics", p+restarts, "panics", p == 0 && restarts == 0,
		fmt.Sprintf("%.0f handler panics, %.0f actor restarts", p, restarts), "0", "")
}

// logRow scans every log of the run for every secret it used.
func (s *secState) logRow() {
	all := s.r.secrets.snapshot()
	kinds := map[string]int{}
	for _, k := range all {
		kinds[k]++
	}
	var names []string
	for k, n := range kinds {
		names = append(names, fmt.Sprintf("%d %s", n, k))
	}
	slices.Sort(names)
	files, read, leaks, err := scanLogs(s.r.work, all)
	figure := fmt.Sprintf("%d secrets (%s) searched in %d logs (%s): %d found", len(all), strings.Join(names, ", "), files, mb(float64(read)), len(leaks))
	reason := ""
	switch {
	case err != nil:
		reason = err.Error()
	case files == 0:
		reason = "no log to scan"
	case len(leaks) > 0:
		reason = fmt.Sprintf("a %s in %s line %d", leaks[0].kind, leaks[0].file, leaks[0].line)
		if len(leaks) > 1 {
			reason += fmt.Sprintf(" (and %d more)", len(leaks)-1)
		}
	}
	s.rec.value("secrets in logs", float64(len(leaks)), "secrets", reason == "", figure, "0", reason)
}

// multipartSample is a multipart body with every property of schema: a small PDF for each
// file (format binary), a sample value for the rest.
func multipartSample(schema map[string]any) ([]byte, string, []string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	props, _ := schema["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p, _ := props[name].(map[string]any)
		if p["format"] == "binary" {
			part, _ := w.CreateFormFile(name, name+".pdf")
			part.Write([]byte("%PDF-1.4\n% drill\n"))
			continue
		}
		w.WriteField(name, uuid.NewString())
	}
	w.Close()
	return b.Bytes(), w.FormDataContentType(), nil
}
