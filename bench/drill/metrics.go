package drill

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The node's series the drills read.
const (
	mRSS            = "tuma_process_resident_memory_bytes"
	mGoroutines     = "go_goroutines"
	mBreaker        = "tuma_link_breaker_state"
	mSubmitted      = "tuma_messages_submitted_total"
	mAccepted       = "tuma_messages_accepted_total"
	mDelivered      = "tuma_messages_delivered_total"
	mFailed         = "tuma_messages_failed_total"
	mResent         = "tuma_link_resent_after_crash_total"
	mUnsettled      = "tuma_link_unsettled_checked_total"
	mJobsActive     = "tuma_engine_jobs_active"
	mBacklog        = "tuma_engine_backlog_messages"
	mQueueDepth     = "tuma_link_queue_depth"
	mRecoverySecs   = "tuma_engine_recovery_duration_seconds"
	mRecovering     = "tuma_engine_recovery_in_progress"
	mHTTPRequests   = "tuma_http_requests_total"
	mResumedMessage = "tuma_engine_messages_resumed_total"
	mMembers        = "tuma_cluster_members"
)

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// metrics is one scrape of /metrics.
type metrics struct {
	at      time.Time
	samples []sample
}

// sum adds the series called name whose labels include match (name, value pairs).
func (m metrics) sum(name string, match ...string) float64 {
	var total float64
next:
	for _, s := range m.samples {
		if s.name != name {
			continue
		}
		for i := 0; i+1 < len(match); i += 2 {
			if s.labels[match[i]] != match[i+1] {
				continue next
			}
		}
		total += s.value
	}
	return total
}

// has reports whether any series called name was scraped.
func (m metrics) has(name string) bool {
	for _, s := range m.samples {
		if s.name == name {
			return true
		}
	}
	return false
}

// final is delivered plus failed messages, every network and stage.
func (m metrics) final() float64 { return m.sum(mDelivered) + m.sum(mFailed) }

// scrape reads the node's /metrics.
func (c *client) scrape(ctx context.Context) (metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r := c.do(ctx, "GET", "/metrics", nil)
	if err := r.expect(200); err != nil {
		return metrics{}, fmt.Errorf("metrics: %w", err)
	}
	s, err := parseProm(r.body)
	if err != nil {
		return metrics{}, fmt.Errorf("metrics: %w", err)
	}
	return metrics{at: time.Now(), samples: s}, nil
}

// parseProm reads the Prometheus text exposition format. Comments and blank lines are skipped.
func parseProm(body []byte) ([]sample, error) {
	var out []sample
	for n, line := range bytes.Split(body, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		end := bytes.IndexAny(line, "{ \t")
		if end <= 0 {
			return nil, fmt.Errorf("line %d: no value: %q", n+1, line)
		}
		s := sample{name: string(line[:end]), labels: map[string]string{}}
		rest := line[end:]
		if rest[0] == '{' {
			close := bytes.LastIndexByte(rest, '}')
			if close < 0 {
				return nil, fmt.Errorf("line %d: unterminated labels", n+1)
			}
			parseLabels(string(rest[1:close]), s.labels)
			rest = rest[close+1:]
		}
		fields := bytes.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("line %d: no value: %q", n+1, line)
		}
		v, err := strconv.ParseFloat(string(fields[0]), 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		s.value = v
		out = append(out, s)
	}
	return out, nil
}

// parseLabels reads a="x",b="y" (values may hold escaped quotes and commas).
func parseLabels(s string, into map[string]string) {
	for len(s) > 0 {
		s = strings.TrimLeft(s, " ,")
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return
		}
		key := strings.TrimSpace(s[:eq])
		var val strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				if s[i] == 'n' {
					val.WriteByte('\n')
					continue
				}
			}
			val.WriteByte(s[i])
		}
		into[key] = val.String()
		if i >= len(s) {
			return
		}
		s = s[i+1:]
	}
}

// askedFirst is the messages a node asked its network (or, for one that cannot say, the
// database) about before any resend, each once (one found not yet, while another node's
// submit may still arrive, is counted when asked again).
func (m metrics) askedFirst() float64 {
	return m.sum(mUnsettled, "outcome", "found") + m.sum(mUnsettled, "outcome", "absent") +
		m.sum(mUnsettled, "outcome", "recorded")
}
