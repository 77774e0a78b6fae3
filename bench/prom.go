package bench

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

// The server's series the run reads.
const (
	metricCPU       = "tuma_process_cpu_seconds_total"
	metricRSS       = "tuma_process_resident_memory_bytes"
	metricAccepted  = "tuma_messages_accepted_total"
	metricAttempts  = "tuma_link_submit_attempts_total"
	metricDelivered = "tuma_messages_delivered_total"
	metricFailed    = "tuma_messages_failed_total"
	metricRequests  = "tuma_http_requests_total"
	metricE2E       = "tuma_messages_end_to_end_seconds_bucket"
	metricSubmitted = "tuma_messages_submitted_total"
)

func wantedMetrics() map[string]bool {
	return map[string]bool{metricCPU: true, metricRSS: true, metricAccepted: true, metricAttempts: true,
		metricDelivered: true, metricFailed: true, metricRequests: true, metricE2E: true}
}

// promSample is one line of the Prometheus text format.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseProm reads the Prometheus text exposition format, keeping only the series named in
// want (nil: all). Comments and blank lines are skipped; a line that does not parse is an error.
func parseProm(body []byte, want map[string]bool) ([]promSample, error) {
	var out []promSample
	for n, line := range bytes.Split(body, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		end := bytes.IndexAny(line, "{ \t")
		if end <= 0 {
			return nil, fmt.Errorf("line %d: no value: %q", n+1, line)
		}
		name := string(line[:end])
		if want != nil && !want[name] {
			continue
		}
		s := promSample{name: name, labels: map[string]string{}}
		rest := line[end:]
		if rest[0] == '{' {
			var err error
			if rest, err = parseLabels(rest[1:], s.labels); err != nil {
				return nil, fmt.Errorf("line %d: %w", n+1, err)
			}
		}
		fields := bytes.Fields(rest) // value, then an optional timestamp
		if len(fields) == 0 {
			return nil, fmt.Errorf("line %d: no value: %q", n+1, line)
		}
		v, err := strconv.ParseFloat(string(fields[0]), 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: value: %w", n+1, err)
		}
		s.value = v
		out = append(out, s)
	}
	return out, nil
}

// parseLabels reads `a="x",b="y\"z"}` into into and returns what follows the brace.
func parseLabels(b []byte, into map[string]string) ([]byte, error) {
	for {
		b = bytes.TrimLeft(b, " \t,")
		if len(b) == 0 {
			return nil, fmt.Errorf("unterminated labels")
		}
		if b[0] == '}' {
			return b[1:], nil
		}
		eq := bytes.IndexByte(b, '=')
		if eq <= 0 || eq+1 >= len(b) || b[eq+1] != '"' {
			return nil, fmt.Errorf("bad label near %q", truncate(b, 40))
		}
		key := string(bytes.TrimSpace(b[:eq]))
		var val strings.Builder
		i := eq + 2
		for ; i < len(b) && b[i] != '"'; i++ {
			if b[i] == '\\' && i+1 < len(b) {
				i++
				switch b[i] {
				case 'n':
					val.WriteByte('\n')
				default: // \" and \\
					val.WriteByte(b[i])
				}
				continue
			}
			val.WriteByte(b[i])
		}
		if i >= len(b) {
			return nil, fmt.Errorf("unterminated label value of %s", key)
		}
		into[key] = val.String()
		b = b[i+1:]
	}
}

// sumProm adds the values of the series called name whose labels include match (pairs).
func sumProm(samples []promSample, name string, match ...string) float64 {
	var total float64
next:
	for _, s := range samples {
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

// snapshot is what the run needs from one scrape of /metrics.
type snapshot struct {
	at        time.Time // when the server read its counters (else the middle of the scrape)
	cpu       float64   // process CPU seconds
	rss       float64   // resident bytes
	accepted  float64   // messages, all networks
	delivered float64
	failed    float64                      // every stage
	send202   float64                      // POST /sms/send answered 202
	submitted map[carriers.Network]float64 // submits started, per network (the egress)
	e2e       map[float64]float64          // acceptance-to-delivery histogram: le → count, all networks
}

func newSnapshot(at time.Time, s []promSample) snapshot {
	sn := snapshot{
		at:        at,
		cpu:       sumProm(s, metricCPU),
		rss:       sumProm(s, metricRSS),
		accepted:  sumProm(s, metricAccepted),
		delivered: sumProm(s, metricDelivered),
		failed:    sumProm(s, metricFailed),
		send202:   sumProm(s, metricRequests, "route", "/sms/send", "method", "POST", "code", "202"),
		submitted: map[carriers.Network]float64{},
		e2e:       map[float64]float64{},
	}
	for _, x := range s {
		if x.name != metricE2E || x.labels["outcome"] != "delivered" {
			continue
		}
		if le, err := strconv.ParseFloat(x.labels["le"], 64); err == nil {
			sn.e2e[le] += x.value
		}
	}
	for _, n := range carriers.Networks() {
		sn.submitted[n] = sumProm(s, metricAttempts, "network", n.String())
	}
	return sn
}
