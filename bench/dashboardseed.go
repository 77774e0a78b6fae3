// The dashboard scenario's data: one account with a history, written into the node's
// PostgreSQL with COPY (a million messages through the API would take the run's hour). Every
// figure a page reads agrees with the rows it sums: the jobs' counts with their messages, the
// wallet with the ledger, the days with the debits less the refunds.

package bench

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// seedPlan is what to write for the account.
type seedPlan struct {
	account   uuid.UUID
	messages  int
	contacts  int
	days      int
	now       time.Time
	priceCent int64 // per part
}

// Groups the contacts are in (a sixth of them in none), and the campaigns' pick.
var seedGroups = []string{"Customers Nairobi", "Customers Mombasa", "Staff", "VIP", "Newsletter"}

// Sizes of the API's jobs, in turn (mean ≈ 330); every tenth job is a campaign of up to
// campaignSize contacts of one group.
var (
	jobSizes     = []int{1, 1, 1, 2, 10, 100, 500, 2000, 300, 400}
	campaignSize = 10_000
)

// v7At is a UUIDv7 of time t: ids made in order of time sort in that order, as the node's do.
func v7At(t time.Time) uuid.UUID {
	var u uuid.UUID
	_, _ = rand.Read(u[:])
	ms := uint64(t.UnixMilli())
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], ms)
	copy(u[0:6], b[2:8])
	u[6] = 0x70 | (u[6] & 0x0F)
	u[8] = 0x80 | (u[8] & 0x3F)
	return u
}

// seedJob is one job as written, with what its messages came to.
type seedJob struct {
	id, campaign           uuid.UUID
	isCampaign             bool
	group                  int
	name, text, source     string
	size, parts            int
	created, done          time.Time
	delivered, failed      int
	byNetwork              [3]int
	first, last            uuid.UUID
	costCents, refundCents int64
	units, refundUnits     int64
}

type seedContact struct {
	id      uuid.UUID
	phone   string
	group   int // -1: none
	created time.Time
	optOut  bool
}

// seed writes the account's groups, contacts, jobs, campaigns, messages, ledger, days,
// counters and notifications, then vacuums and analyses the tables as autovacuum would.
func seed(ctx context.Context, conn *pgx.Conn, p seedPlan, log io.Writer) error {
	rng := mrand.New(mrand.NewPCG(1, 2))
	start := p.now.Add(-time.Duration(p.days) * 24 * time.Hour)
	span := p.now.Add(-time.Hour).Sub(start)

	// Groups and contacts.
	groupIDs := make([]uuid.UUID, len(seedGroups))
	for i := range seedGroups {
		groupIDs[i] = v7At(start.Add(time.Duration(i) * time.Minute))
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"contact_groups"}, []string{"id", "account_id", "name", "description", "created_at"},
		pgx.CopyFromSlice(len(seedGroups), func(i int) ([]any, error) {
			return []any{groupIDs[i], p.account, seedGroups[i], "", start.Add(time.Duration(i) * time.Minute)}, nil
		})); err != nil {
		return fmt.Errorf("seed groups: %w", err)
	}
	contacts := make([]seedContact, p.contacts)
	byGroup := make([][]int, len(seedGroups))
	for i := range contacts {
		created := start.Add(time.Duration(float64(span) * float64(i) / float64(p.contacts)))
		g := i%(len(seedGroups)+1) - 1
		contacts[i] = seedContact{id: v7At(created), phone: fmt.Sprintf("+2547%08d", 10_000_000+i), group: g, created: created,
			optOut: i%100 == 99}
		if g >= 0 && !contacts[i].optOut {
			byGroup[g] = append(byGroup[g], i)
		}
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"contacts"},
		[]string{"account_id", "id", "phone", "first_name", "last_name", "group_id", "opted_out_at", "created_at"},
		pgx.CopyFromSlice(len(contacts), func(i int) ([]any, error) {
			c := contacts[i]
			var group *uuid.UUID
			if c.group >= 0 {
				group = &groupIDs[c.group]
			}
			var opted *time.Time
			if c.optOut {
				t := c.created.Add(time.Hour)
				opted = &t
			}
			return []any{p.account, c.id, c.phone, firstNames[i%len(firstNames)], lastNames[(i/len(firstNames))%len(lastNames)],
				group, opted, c.created}, nil
		})); err != nil {
		return fmt.Errorf("seed contacts: %w", err)
	}
	fmt.Fprintf(log, "seeded %d contacts in %d groups\n", p.contacts, len(seedGroups))

	// The jobs, spread evenly over the days, their sizes adding up to the messages.
	var jobs []*seedJob
	for total := 0; total < p.messages; {
		j := &seedJob{parts: 1 + len(jobs)%5/4, source: "api"}
		if len(jobs)%10 == 9 {
			j.isCampaign, j.group, j.source = true, len(jobs)/10%len(seedGroups), "api"
			j.size = min(campaignSize, len(byGroup[j.group]))
			j.name = fmt.Sprintf("%s offer %d", seedGroups[j.group], len(jobs)/10+1)
		} else {
			j.size = jobSizes[len(jobs)%len(jobSizes)]
			if len(jobs)%3 == 1 {
				j.source = "browser"
			}
		}
		j.size = min(j.size, p.messages-total)
		total += j.size
		jobs = append(jobs, j)
	}
	for i, j := range jobs {
		j.created = start.Add(time.Duration(float64(span) * float64(i) / float64(len(jobs))))
		j.id = v7At(j.created)
		if j.isCampaign {
			j.campaign = v7At(j.created)
			j.text = "Habari {first_name}, our November offer is here: 20% off until Friday."
		} else {
			j.text = fmt.Sprintf("Your order %d is on its way. Track it at example.co.ke/t/%d", 4000+i, 4000+i)
		}
	}

	// Messages: one millisecond apart within a job, so its ids are in order.
	statuses := [3]string{"delivered", "failed"}
	networks := [3]string{"+25471%07d", "+25473%07d", "+25477%07d"}
	ji, mi := 0, 0
	var m struct {
		id             uuid.UUID
		recipient      string
		network        int16
		status         string
		created, final time.Time
		cost           int64
	}
	next := func() bool {
		for ji < len(jobs) && mi >= jobs[ji].size {
			ji, mi = ji+1, 0
		}
		if ji == len(jobs) {
			return false
		}
		j := jobs[ji]
		m.created = j.created.Add(time.Duration(mi) * time.Millisecond)
		m.id = v7At(m.created)
		if mi == 0 {
			j.first = m.id
		}
		j.last = m.id
		n := 0
		if j.isCampaign {
			m.recipient = contacts[byGroup[j.group][mi]].phone
		} else {
			switch r := rng.IntN(10); {
			case r >= 9:
				n = 2
			case r >= 7:
				n = 1
			}
			m.recipient = fmt.Sprintf(networks[n], rng.IntN(10_000_000))
		}
		m.network = int16(n + 1)
		j.byNetwork[n]++
		m.cost = int64(j.parts) * p.priceCent
		j.costCents += m.cost
		j.units += int64(j.parts)
		m.status = statuses[0]
		if rng.IntN(100) < 6 {
			m.status = statuses[1]
			j.failed++
			j.refundCents += m.cost
			j.refundUnits += int64(j.parts)
		} else {
			j.delivered++
		}
		m.final = m.created.Add(time.Duration(2+rng.IntN(20)) * time.Second)
		if m.final.After(j.done) {
			j.done = m.final
		}
		mi++
		return true
	}
	cols := []string{"id", "job_id", "account_id", "campaign_id", "recipient", "network", "sender", "body", "prefixed", "parts",
		"encoding", "cost_cents", "status", "provider_status", "provider_message_id", "error", "created_at", "sent_at",
		"delivered_at", "failed_at"}
	var copied int64
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if !next() {
			return nil, nil
		}
		j := jobs[ji]
		var campaign *uuid.UUID
		if j.isCampaign {
			campaign = &j.campaign
		}
		sent := m.created.Add(200 * time.Millisecond)
		var delivered, failed *time.Time
		provider, errText := "DELIVRD", (*string)(nil)
		if m.status == "delivered" {
			delivered = &m.final
		} else {
			failed, provider = &m.final, "UNDELIV"
			e := "absent subscriber"
			errText = &e
		}
		copied++
		if copied%200_000 == 0 {
			fmt.Fprintf(log, "  %d messages…\n", copied)
		}
		return []any{m.id, j.id, p.account, campaign, m.recipient, m.network, "TUMA", nil, true, int16(j.parts), int16(1),
			int32(m.cost), m.status, provider, fmt.Sprintf("sim-%x", m.id[10:]), errText, m.created, sent, delivered, failed}, nil
	})
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"messages"}, cols, src); err != nil {
		return fmt.Errorf("seed messages: %w", err)
	}
	fmt.Fprintf(log, "seeded %d messages in %d jobs\n", copied, len(jobs))
	return seedRest(ctx, conn, p, jobs, groupIDs)
}
