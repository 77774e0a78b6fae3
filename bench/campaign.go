// tuma-lab bench campaign: a campaign to an imported group, over HTTP, from this process: how long
// its creation takes (every contact priced and the cost debited), how fast its messages go
// out, the node's memory meanwhile, and the reports' latency.

package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"
)

// CampaignConfig is one run of `tuma-lab bench campaign`.
type CampaignConfig struct {
	URL, AdminToken string
	Contacts        int // the group's size
	Reads           int // of each report
}

// CampaignResult are a run's figures.
type CampaignResult struct {
	Contacts        int     `json:"contacts"`
	CreateSeconds   float64 `json:"create_seconds"`
	DispatchPerS    float64 `json:"dispatch_messages_per_second"`
	ToLastSubmit    float64 `json:"request_to_last_submit_seconds"`
	FinalSeconds    float64 `json:"all_final_seconds"`
	RSSGrowthMB     float64 `json:"rss_growth_mb"`
	SpendTrendP99MS float64 `json:"spend_trend_p99_ms"`
	CampaignsP99MS  float64 `json:"campaign_performance_p99_ms"`
	GroupsP99MS     float64 `json:"group_performance_p99_ms"`
}

// CampaignUsage is the help of `tuma-lab bench campaign`.
const CampaignUsage = `usage: tuma-lab bench campaign [flags]

Against a running node (its sign-up budget off: TUMA_SIGNUP_LIMIT_PER_IP=0; for the dispatch
figure, simulated networks without caps): registers and funds an account, imports CONTACTS
generated contacts into a group, creates a campaign to it with a merge tag, waits until every
message has a final status, then reads each report READS times, printing each figure next to
its target.

flags:`

// ParseCampaignArgs reads the flags of `tuma-lab bench campaign`.
func ParseCampaignArgs(args []string, lookup func(string) (string, bool), stderr io.Writer) (CampaignConfig, error) {
	c := CampaignConfig{URL: defaultURL, AdminToken: devAdminToken, Contacts: 100_000, Reads: 200}
	if v, ok := lookup("TUMA_ADMIN_TOKEN"); ok && v != "" {
		c.AdminToken = v
	}
	fs := flag.NewFlagSet("bench campaign", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, CampaignUsage); fs.PrintDefaults() }
	fs.StringVar(&c.URL, "url", c.URL, "the node's base URL")
	fs.StringVar(&c.AdminToken, "admin-token", c.AdminToken, "the node's admin token (to fund the account)")
	fs.IntVar(&c.Contacts, "contacts", c.Contacts, "contacts in the campaign's group")
	fs.IntVar(&c.Reads, "reads", c.Reads, "reads of each report")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.Contacts < 1 || c.Contacts > 1_000_000 || c.Reads < 1 {
		return c, fmt.Errorf("--contacts must be 1..1,000,000 and --reads positive")
	}
	return c, nil
}

// RunCampaign runs the campaign benchmark and prints its table.
func RunCampaign(ctx context.Context, cfg CampaignConfig, stdout io.Writer) (CampaignResult, error) {
	res := CampaignResult{Contacts: cfg.Contacts}
	a, err := signUp(ctx, cfg.URL, "campaign")
	if err != nil {
		return res, err
	}
	// KES 1 a contact covers its part at any tier (at most 0.50).
	if err := a.fund(ctx, cfg.AdminToken, max(50, cfg.Contacts)); err != nil {
		return res, err
	}
	var group struct{ ID string }
	b, err := a.post(ctx, "/contacts/groups", map[string]string{"name": "Bench"}, 201)
	if err != nil || json.Unmarshal(b, &group) != nil {
		return res, fmt.Errorf("create group: %v %s", err, b)
	}
	if err := a.importContacts(ctx, cfg.Contacts, group.ID); err != nil {
		return res, err
	}

	// The campaign: created (priced contact by contact and debited), then dispatched.
	m, err := a.scrape(ctx, metricSubmitted, metricRSS)
	if err != nil {
		return res, err
	}
	before, rssBefore := m[metricSubmitted], m[metricRSS]
	peak := rssBefore
	start := time.Now()
	b, err = a.post(ctx, "/campaigns", map[string]string{"name": "Bench",
		"message": "Habari {first_name}, your November offer is here: 20% off until Friday.", "group_id": group.ID}, 201)
	res.CreateSeconds = time.Since(start).Seconds()
	var camp struct {
		ID              string `json:"id"`
		TotalRecipients int    `json:"total_recipients"`
	}
	if err != nil || json.Unmarshal(b, &camp) != nil || camp.TotalRecipients != cfg.Contacts {
		return res, fmt.Errorf("create campaign: %v %s", err, b)
	}
	// Dispatch is timed from the 201 (creation has its own figure) to the scrape that sees the
	// last submit: scraped every 100 ms until then, which bounds the error to 2% at 20,000/s.
	created := time.Now()
	var submittedAt time.Time
	for {
		if time.Since(start) > 30*time.Minute {
			return res, fmt.Errorf("campaign %s not final after 30 minutes", camp.ID)
		}
		if m, err := a.scrape(ctx, metricSubmitted, metricRSS); err == nil {
			peak = max(peak, m[metricRSS])
			if submittedAt.IsZero() && m[metricSubmitted]-before >= float64(cfg.Contacts) {
				submittedAt = time.Now()
			}
		}
		if !submittedAt.IsZero() && a.campaignFinal(ctx, camp.ID) {
			break
		}
		pause := 100 * time.Millisecond
		if !submittedAt.IsZero() {
			pause = 200 * time.Millisecond // each poll scrapes /metrics: the node's CPU, not the bench's to take
		}
		time.Sleep(pause)
	}
	res.FinalSeconds = time.Since(start).Seconds()
	res.DispatchPerS = float64(cfg.Contacts) / submittedAt.Sub(created).Seconds()
	res.ToLastSubmit = submittedAt.Sub(start).Seconds()
	res.RSSGrowthMB = (peak - rssBefore) / (1 << 20)

	// The reports, read one after another.
	for _, r := range []struct {
		path string
		dst  *float64
	}{{"/reports/spend-trend?period=90", &res.SpendTrendP99MS}, {"/reports/campaign-performance", &res.CampaignsP99MS},
		{"/reports/group-performance", &res.GroupsP99MS}} {
		var lat []time.Duration
		for range cfg.Reads {
			t0 := time.Now()
			if _, err := a.get(ctx, r.path); err != nil {
				return res, err
			}
			lat = append(lat, time.Since(t0))
		}
		*r.dst = ms(quantile(lat, 99))
	}

	printFigures(stdout, fmt.Sprintf("tuma-lab bench campaign · %s · %d contacts", cfg.URL, cfg.Contacts),
		figure{"campaign created (priced, debited)", fmt.Sprintf("%.2f s", res.CreateSeconds), "≤ 1 s"},
		figure{"dispatch, 201 to last submit", fmt.Sprintf("%.0f msg/s", res.DispatchPerS), "≥ 20,000 msg/s"},
		figure{"request to last submit", fmt.Sprintf("%.2f s", res.ToLastSubmit), "—"},
		figure{"every message final", fmt.Sprintf("%.1f s", res.FinalSeconds), "—"},
		figure{"server RSS growth", fmt.Sprintf("%.0f MB", res.RSSGrowthMB), "bounded"},
		figure{"spend trend (90 days)", fmt.Sprintf("p99 %.1f ms", res.SpendTrendP99MS), "p99 ≤ 50 ms"},
		figure{"campaign performance", fmt.Sprintf("p99 %.1f ms", res.CampaignsP99MS), "p99 ≤ 50 ms"},
		figure{"group performance", fmt.Sprintf("p99 %.1f ms", res.GroupsP99MS), "p99 ≤ 50 ms"})
	return res, nil
}

// campaignFinal reports whether the campaign reached a final status.
func (a *httpAccount) campaignFinal(ctx context.Context, id string) bool {
	b, err := a.get(ctx, "/campaigns/"+id)
	var c struct{ Status string }
	if err != nil || json.Unmarshal(b, &c) != nil {
		return false
	}
	return c.Status == "completed" || c.Status == "failed"
}
