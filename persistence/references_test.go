package persistence_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

func refOf(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// A job's reference is stored once with the job and shows with each of its messages, in its
// campaign and in its replayed answer; the message list filters by it, within the account.
func TestReferenceIsStoredWithTheJobAndFilters(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	acct, other := fundedAccount(t, st, 10_000), fundedAccount(t, st, 10_000)
	ref := "order-42"

	inline := job(acct, 50) // two inline messages, with the reference
	inline.Reference = &ref
	inline.Recipients, inline.Units, inline.CostCents = 2, 2, 100
	inline.Inline = append(inline.Inline, persistence.NewMessage{ID: persistence.NewID(), Recipient: "+254733123456",
		Network: carriers.Airtel, Sender: "TUMA", Parts: 1, Encoding: carriers.GSM7, CostCents: 50})
	plain := job(acct, 50)   // no reference
	pending := job(acct, 50) // the reference, its message written at expansion
	pending.Reference = &ref
	pendingMsg := pending.Inline
	pending.Inline = nil
	pending.Pending = persistence.EncodeRecipients([]persistence.Recipient{{NSN: 712345678, Network: carriers.Safaricom}})
	elsewhere := job(other, 50) // another account's job with the same reference
	elsewhere.Reference = &ref
	otherRef := "order-43"
	campaignJob := job(acct, 50)
	campaignJob.Reference = &otherRef
	campaignJob.Source = "browser"
	campaignJob.Campaign = &persistence.NewCampaign{ID: persistence.NewID(), Name: "Launch", Template: "hi", GroupID: uuid.New(), GroupName: "All"}
	campaignJob.CampaignID = &campaignJob.Campaign.ID

	res, err := st.AcceptJobs(ctx, []persistence.NewJob{inline, plain, pending, elsewhere, campaignJob})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("job %d: %v", i, r.Err)
		}
	}

	list := func(f persistence.MessageFilter) ([]persistence.Message, int64) {
		t.Helper()
		msgs, total, err := st.ListMessages(ctx, acct, f, persistence.Page{Number: 1, Size: 50})
		if err != nil {
			t.Fatal(err)
		}
		return msgs, total
	}
	if msgs, total := list(persistence.MessageFilter{Reference: &ref}); len(msgs) != 2 || total != 2 {
		t.Fatalf("messages with reference %q before expansion: %d of %d; want the inline job's 2", ref, len(msgs), total)
	}
	if ok, err := st.ExpandJob(ctx, pending, 0, pendingMsg, true); err != nil || !ok {
		t.Fatalf("expand: %v %v", ok, err)
	}
	msgs, total := list(persistence.MessageFilter{Reference: &ref})
	if len(msgs) != 3 || total != 3 {
		t.Fatalf("messages with reference %q: %d of %d; want 3 (2 inline, 1 expanded)", ref, len(msgs), total)
	}
	for _, m := range msgs {
		if refOf(m.Reference) != ref || m.AccountID != acct || (m.JobID != inline.ID && m.JobID != pending.ID) {
			t.Errorf("message %+v in the list for %q", m, ref)
		}
	}
	if msgs, total := list(persistence.MessageFilter{Reference: &ref, Status: persistence.MessageQueued}); len(msgs) != 3 || total != 3 {
		t.Errorf("queued messages with reference %q: %d of %d; want 3", ref, len(msgs), total)
	}
	if msgs, total := list(persistence.MessageFilter{Reference: &ref, Status: persistence.MessageDelivered}); len(msgs) != 0 || total != 0 {
		t.Errorf("delivered messages with reference %q: %d of %d; want none", ref, len(msgs), total)
	}
	if msgs, total := list(persistence.MessageFilter{Reference: &ref, JobID: &pending.ID}); len(msgs) != 1 || total != 1 {
		t.Errorf("messages of the expanded job with reference %q: %d of %d; want 1", ref, len(msgs), total)
	}
	unknown := "nope"
	if msgs, total := list(persistence.MessageFilter{Reference: &unknown}); len(msgs) != 0 || total != 0 {
		t.Errorf("messages with an unknown reference: %d of %d; want none", len(msgs), total)
	}
	if msgs, _ := list(persistence.MessageFilter{Reference: &otherRef}); len(msgs) != 1 || msgs[0].CampaignID == nil {
		t.Errorf("messages with the campaign's reference: %+v; want its one message", msgs)
	}

	all, _ := list(persistence.MessageFilter{})
	for _, m := range all {
		want := "<nil>"
		switch m.JobID {
		case inline.ID, pending.ID:
			want = ref
		case campaignJob.ID:
			want = otherRef
		}
		if got := refOf(m.Reference); got != want {
			t.Errorf("message of job %s: reference %s; want %s", m.JobID, got, want)
		}
	}
	m, err := st.MessageByID(ctx, acct, inline.Inline[1].ID)
	if err != nil || refOf(m.Reference) != ref {
		t.Errorf("MessageByID: reference %s, %v; want %s", refOf(m.Reference), err, ref)
	}
	if j, err := st.JobByID(ctx, acct, inline.ID); err != nil || refOf(j.Reference) != ref {
		t.Errorf("JobByID(with reference): %s, %v; want %s", refOf(j.Reference), err, ref)
	}
	if j, err := st.JobByID(ctx, acct, plain.ID); err != nil || j.Reference != nil {
		t.Errorf("JobByID(without reference): %s, %v; want nil", refOf(j.Reference), err)
	}
	if j, err := st.JobRecord(ctx, pending.ID); err != nil || refOf(j.Reference) != ref {
		t.Errorf("JobRecord: reference %s, %v; want %s", refOf(j.Reference), err, ref)
	}
	if c, err := st.Campaign(ctx, acct, campaignJob.Campaign.ID); err != nil || refOf(c.Reference) != otherRef {
		t.Errorf("Campaign: reference %s, %v; want %s", refOf(c.Reference), err, otherRef)
	}
	if cs, err := st.Campaigns(ctx, acct, persistence.Page{}); err != nil || len(cs) != 1 || refOf(cs[0].Reference) != otherRef {
		t.Errorf("Campaigns: %+v, %v; want one with reference %s", cs, err, otherRef)
	}
	// The other account sees only its own.
	if msgs, total, err := st.ListMessages(ctx, other, persistence.MessageFilter{Reference: &ref}, persistence.Page{Number: 1, Size: 50}); err != nil ||
		len(msgs) != 1 || total != 1 || msgs[0].JobID != elsewhere.ID {
		t.Errorf("other account's messages with %q: %d of %d, %v; want its one", ref, len(msgs), total, err)
	}
}

// The reference filter reads the account's jobs by reference and each job's messages by the
// primary key's range, not the account's whole message history.
func TestReferenceFilterUsesTheIndex(t *testing.T) {
	st, u := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 10_000)
	ref := "r-1"
	j := job(acct, 50)
	j.Reference = &ref
	if _, err := st.AcceptJobs(ctx, []persistence.NewJob{j}); err != nil {
		t.Fatal(err)
	}
	plan := explain(t, u, `SELECT m.id FROM messages m JOIN jobs j ON j.id = m.job_id
		WHERE m.account_id = $1 AND j.account_id = $1 AND j.reference = $2
			AND m.id >= j.first_message_id AND m.id <= j.last_message_id`, acct, ref)
	if !strings.Contains(plan, "jobs_reference_idx") || !strings.Contains(plan, "messages_pkey") {
		t.Errorf("plan does not use jobs_reference_idx and messages_pkey:\n%s", plan)
	}
}

// explain returns the plan of a query on a table too small for statistics to favour an index,
// with sequential scans made unattractive so the plan shows the indexes it can use.
func explain(t *testing.T, dbURL, q string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `EXPLAIN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
