// The quiet drill: promotional sends accepted inside an account's quiet hours,
// the node killed with kill -9 while they wait, and afterwards none sent before the window
// ended, none lost, each recipient once and each send charged once.

package drill

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// quietSend is the size of each promotional send of the drill (the API's largest).
const quietSend = 10_000

// quietWindow is a window of Nairobi's clock around now that ends on a minute edge at least
// lead away: the promotional sends wait in it, through a kill, and go when it ends.
func quietWindow(now time.Time, lead time.Duration) (start, end string, ends time.Time) {
	const eat = 3 * time.Hour // Africa/Nairobi: UTC+3 all year
	local := now.UTC().Add(eat)
	edge := local.Truncate(time.Minute).Add(time.Minute)
	for edge.Sub(local) < lead {
		edge = edge.Add(time.Minute)
	}
	from := local.Truncate(time.Minute).Add(-time.Minute)
	return from.Format("15:04"), edge.Format("15:04"), edge.Add(-eat)
}

// quietDrill runs on a node of its own: an account's quiet hours set to end a minute or two
// from now, r.sizes.QuietMessages promotional messages accepted, kill -9, a start, a
// transactional probe that goes at once; then, after the window, every message checked.
func quietDrill(ctx context.Context, r *runner, rec *recorder) error {
	n, err := r.node("crash-quiet", nil)
	if err != nil {
		return err
	}
	if _, err := n.start(ctx); err != nil {
		return err
	}
	total := r.sizes.QuietMessages
	ts, err := r.tenants(ctx, n.c, "crash-quiet", 1, total) // KES 1 a message covers the parts with the opt-out text
	if err != nil {
		return err
	}
	t := ts[0]
	start, end, ends := quietWindow(time.Now(), 45*time.Second)
	p := n.c.do(ctx, "PATCH", "/auth/profile", map[string]any{"quiet_hours": map[string]string{"start": start, "end": end}}, t.apiKey()...)
	if p.status != 200 {
		return fmt.Errorf("set quiet hours %s–%s: %d %s", start, end, p.status, p.body)
	}
	var jobs []string
	for i := 0; i*quietSend < total; i++ {
		to := make([]string, min(quietSend, total-i*quietSend))
		for k := range to {
			j := i*quietSend + k
			to[k] = fmt.Sprintf("07%02d%06d", 10+j/1_000_000%10, j%1_000_000)
		}
		s := n.c.do(ctx, "POST", "/sms/send", map[string]any{"recipients": to, "message": "Drill offer: 10% off today",
			"category": "promotional"}, t.apiKey()...)
		if s.status != 202 {
			return fmt.Errorf("promotional send %d: %d %s", i+1, s.status, s.body)
		}
		var a struct {
			JobID string `json:"job_id"`
		}
		if err := json.Unmarshal(s.body, &a); err != nil {
			return err
		}
		jobs = append(jobs, a.JobID)
	}
	db, err := n.db(ctx)
	if err != nil {
		return err
	}
	defer db.Close(context.WithoutCancel(ctx))
	early := func() (int64, error) {
		var k int64
		err := db.QueryRow(ctx, `SELECT count(*) FROM messages WHERE job_id = ANY($1::uuid[])
			AND (status <> 'queued' OR sent_at IS NOT NULL)`, jobs).Scan(&k)
		return k, err
	}
	before, err := early()
	if err != nil {
		return err
	}
	if err := n.kill(); err != nil {
		return err
	}
	st, err := n.start(ctx)
	if err != nil {
		return fmt.Errorf("quiet restart: %w", err)
	}
	rec.logf("quiet hours: %s promotional messages accepted inside %s–%s, kill -9, then /healthz %s, /readyz %s",
		count(int64(total)), start, end, secs(st.healthz), secs(st.readyz))
	// A transactional message goes at once: the node dispatches, and still holds the rest.
	probe := n.c.do(ctx, "POST", "/sms/send", map[string]any{"recipients": []string{"0799999999"}, "message": "Drill receipt"}, t.apiKey()...)
	if probe.status != 202 {
		return fmt.Errorf("transactional probe: %d %s", probe.status, probe.body)
	}
	if err := waitFinal(ctx, db, probe.body, 30*time.Second); err != nil {
		return err
	}
	after, err := early()
	if err != nil {
		return err
	}
	wait := time.Until(ends)
	rec.check("quiet hours: none sent early", before == 0 && after == 0 && wait > 0,
		fmt.Sprintf("%d promotional messages handled before the kill, %d after the restart while a transactional one went; window ends in %s",
			before, after, secs(wait)),
		"0 before the window ends", "promotional messages went inside quiet hours")
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(max(wait, 0)):
	}
	if _, left, err := settle(ctx, db, defaultSettling()); err != nil {
		rec.fail("quiet hours: none lost", fmt.Sprintf("not settled: %s (%d open jobs, %d queued, %d sent)", err, left.open, left.queued, left.sent))
		return nil
	}
	var rows, distinct, final, sentEarly, debits, suffixed int64
	err = db.QueryRow(ctx, `SELECT count(*), count(DISTINCT (job_id, recipient)),
			count(*) FILTER (WHERE status IN ('delivered', 'failed')),
			count(*) FILTER (WHERE sent_at < $2),
			(SELECT count(*) FROM wallet_transactions w WHERE w.job_id = ANY($1::uuid[]) AND w.type = 'debit'),
			(SELECT count(*) FROM jobs j WHERE j.id = ANY($1::uuid[]) AND j.opt_out = ' STOP*456*9*5#')
		FROM messages WHERE job_id = ANY($1::uuid[])`, jobs, ends).Scan(&rows, &distinct, &final, &sentEarly, &debits, &suffixed)
	if err != nil {
		return fmt.Errorf("read the promotional messages: %w", err)
	}
	want := int64(total)
	ok := rows == want && distinct == want && final == want && sentEarly == 0 && debits == int64(len(jobs)) && suffixed == int64(len(jobs))
	rec.value("quiet hours: none lost", float64(final), "messages", ok,
		fmt.Sprintf("%s messages to %s recipients, %s final, %d sent before %s; %d debits for %d sends, %d with the opt-out text",
			count(rows), count(distinct), count(final), sentEarly, end, debits, len(jobs), suffixed),
		"each of "+count(want)+" once, after the window, charged once", "a promotional message was lost, repeated or sent early")
	return nil
}

// waitFinal waits until the message of a one-recipient send's answer has a final status.
func waitFinal(ctx context.Context, db *pgx.Conn, answer []byte, limit time.Duration) error {
	var a struct {
		JobID string `json:"job_id"`
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return err
	}
	deadline := time.Now().Add(limit)
	for {
		var final bool
		err := db.QueryRow(ctx, `SELECT count(*) = 1 FROM messages WHERE job_id = $1 AND status IN ('delivered', 'failed')`, a.JobID).Scan(&final)
		if err != nil || final {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("job %s: no final status within %s", a.JobID, secs(limit))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
