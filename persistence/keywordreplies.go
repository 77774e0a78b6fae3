// Keyword replies: the confirmation SMS an opt-out or opt-in keyword is answered with
// (CONTRACT §15), free of charge, from the account's own sender, at most one of each kind per
// number a day. It is written in the transaction that stores the keyword, as a job opened
// for dispatch, so it is sent once whatever fails after the commit.

package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
)

// The confirmations, in the keyword's language; %s is the company (see replyText). Each is
// one GSM-7 part with a company name of the longest an account may have (60 characters).
const (
	replyStopEN  = "You will no longer receive messages from %s. Reply START to subscribe again."
	replyStopSW  = "Hutapokea tena ujumbe kutoka kwa %s. Tuma ANZA kujiunga tena."
	replyStartEN = "You are subscribed again to messages from %s. Reply STOP to stop."
	replyStartSW = "Umejiunga tena na ujumbe kutoka kwa %s. Tuma ACHA kusitisha."
)

// replyTemplate is the confirmation of keyword kw: the Swahili keywords are answered in
// Swahili, the rest in English.
func replyTemplate(kw string, action KeywordAction) string {
	switch {
	case action == KeywordOptOut && (kw == "ACHA" || kw == "SITISHA"):
		return replyStopSW
	case action == KeywordOptOut:
		return replyStopEN
	case kw == "ANZA":
		return replyStartSW
	default:
		return replyStartEN
	}
}

// replyText is the confirmation naming the company, kept to one GSM-7 part: a company name
// that would make it UCS-2 (an emoji, a curly quote) is tried with its look-alike characters
// replaced, and when that is not enough the sender's name (always GSM-7) stands in for it.
func replyText(template, company, sender string) string {
	text := fmt.Sprintf(template, company)
	if l := carriers.ReplaceLookalikes(text); l != nil {
		text = l.Text
	}
	if s := carriers.Segment(text); company == "" || s.Encoding != carriers.GSM7 || s.Parts > 1 {
		return fmt.Sprintf(template, sender)
	}
	return text
}

// replyDay is the day in Africa/Nairobi (EAT, UTC+3 all year, no daylight saving) of t, as
// PostgreSQL reads a date: a number gets one confirmation of each kind per local day.
func replyDay(t time.Time) string {
	return t.In(time.FixedZone("EAT", 3*60*60)).Format(time.DateOnly)
}

// replyToKeyword answers a keyword the account's list acted on, inside the transaction that
// stored it: when the account's default sender covers the network the keyword came from (an
// account with only the shared sender gets none) and the number has had no confirmation of
// this kind today, it writes a free job of one message to the number, open for dispatch. It
// returns the job's id, uuid.Nil when it wrote none.
func replyToKeyword(ctx context.Context, tx pgx.Tx, acct uuid.UUID, m InboundMessage, action KeywordAction) (uuid.UUID, error) {
	var company string
	var snd Sender
	err := tx.QueryRow(ctx, `SELECT a.company_name, d.name, d.network FROM accounts a
		JOIN sender_ids d ON d.account_id = a.id AND d.is_default AND d.status = 'approved' AND d.is_active
		WHERE a.id = $1`, acct).Scan(&company, &snd.Name, &snd.Network)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, nil // only the shared sender: no confirmation
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("default sender: %w", err)
	}
	if !snd.Covers(m.Network) {
		return uuid.Nil, nil
	}
	kind := "start"
	if action == KeywordOptOut {
		kind = "stop"
	}
	job := replyJob(acct, m, snd.Name, replyText(replyTemplate(m.Keyword, action), company, snd.Name))
	// Claimed before the job is written: a second keyword the same day, even one received
	// concurrently, waits for this claim and then finds it.
	tag, err := tx.Exec(ctx, `INSERT INTO keyword_replies (account_id, nsn, kind, day, job_id) VALUES ($1, $2, $3, $4::date, $5)
		ON CONFLICT DO NOTHING`, acct, int32(m.From), kind, replyDay(m.ReceivedAt), job.ID)
	if err != nil {
		return uuid.Nil, fmt.Errorf("claim keyword reply: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return uuid.Nil, nil // answered today already
	}
	jobs := []NewJob{job}
	b := &pgx.Batch{}
	queueJobInserts(b, jobs)
	queueOpenJobs(b, jobs)
	queueMessageInserts(b, jobs)
	// Counted as accepted, since the account's queued count is what was accepted and is in no
	// other state yet; nothing is debited, and it adds nothing to the account's lifetime volume
	// (its tier) or the day's spend: it is free. Last, so the wallet's row is locked briefly.
	b.Queue(`UPDATE wallets SET messages_accepted = messages_accepted + 1 WHERE account_id = $1`, acct)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return uuid.Nil, fmt.Errorf("write keyword reply: %w", err)
	}
	return job.ID, nil
}

// replyJob is the free job of the confirmation text to the sender of m, from the account's
// sender (on every network: only m's is used).
func replyJob(acct uuid.UUID, m InboundMessage, sender, text string) NewJob {
	seg := carriers.Segment(text)
	j := NewJob{ID: NewID(), AccountID: acct, Source: SourceKeyword, Message: text, Recipients: 1, Units: int64(seg.Parts)}
	for _, n := range carriers.Networks() {
		j.Senders[n] = sender
	}
	j.NetworkCounts[m.Network] = 1
	j.Inline = []NewMessage{{ID: NewID(), Recipient: Recipient{NSN: m.From}.E164(), Network: m.Network, Sender: sender,
		Parts: seg.Parts, Encoding: seg.Encoding}}
	return j
}

// suppressedNow reports whether nsn is on the account's list, whatever its source.
func suppressedNow(ctx context.Context, tx pgx.Tx, acct uuid.UUID, nsn uint32) (bool, error) {
	var on bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM suppressions WHERE account_id = $1 AND nsn = $2)`, acct, int32(nsn)).Scan(&on)
	return on, err
}
