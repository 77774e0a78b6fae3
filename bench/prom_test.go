package bench

import (
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

const metricsText = `# HELP tuma_messages_accepted_total Messages accepted.
# TYPE tuma_messages_accepted_total counter
tuma_messages_accepted_total{network="airtel"} 20
tuma_messages_accepted_total{network="safaricom"} 70
tuma_messages_accepted_total{network="telkom"} 10
tuma_link_submit_attempts_total{network="safaricom"} 1.5e+06
tuma_link_submit_attempts_total{network="telkom"} 3
tuma_messages_delivered_total{network="safaricom"} 60
tuma_messages_failed_total{network="safaricom",stage="receipt"} 2
tuma_messages_failed_total{network="safaricom",stage="submit"} 1
tuma_http_requests_total{code="202",method="POST",route="/sms/send"} 9
tuma_http_requests_total{code="402",method="POST",route="/sms/send"} 4
tuma_http_requests_total{code="202",method="POST",route="/other"} 100
tuma_http_requests_total{code="200",method="GET",route="/we\"ird\\path"} 1 1700000000000
tuma_process_cpu_seconds_total 12.5
tuma_process_resident_memory_bytes 5.24288e+07
go_gc_duration_seconds{quantile="0.5"} NaN

`

func TestParseProm(t *testing.T) {
	s, err := parseProm([]byte(metricsText), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 15 {
		t.Errorf("%d samples; want 15", len(s))
	}
	if got := sumProm(s, metricRequests, "route", `/we"ird\path`); got != 1 {
		t.Errorf("escaped label: %v", got)
	}
	sn := newSnapshot(time.Unix(5, 0), s)
	if sn.accepted != 100 || sn.delivered != 60 || sn.failed != 3 || sn.send202 != 9 || sn.cpu != 12.5 || sn.rss != 50<<20 {
		t.Errorf("snapshot = %+v", sn)
	}
	if sn.submitted[carriers.Safaricom] != 1.5e6 || sn.submitted[carriers.Airtel] != 0 || sn.submitted[carriers.Telkom] != 3 {
		t.Errorf("submitted = %v", sn.submitted)
	}
	only, err := parseProm([]byte(metricsText), map[string]bool{metricCPU: true})
	if err != nil || len(only) != 1 || only[0].value != 12.5 {
		t.Errorf("filtered = %v, %v", only, err)
	}
	for _, bad := range []string{"tuma_x{a=\"b\" 1", "tuma_x{a=b} 1", "tuma_x", "tuma_x{} notanumber"} {
		if _, err := parseProm([]byte(bad), nil); err == nil {
			t.Errorf("parseProm(%q): want an error", bad)
		}
	}
}
