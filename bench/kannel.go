// tuma-lab bench kannel: the load side of the comparison with Kannel (bench/kannel.sh): Kannel's
// sendsms interface driven the way tuma-lab bench drives ours.

package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// KannelUsage introduces tuma-lab bench kannel's flags.
const KannelUsage = `usage: tuma-lab bench kannel [flags]

Sends through a Kannel smsbox's /cgi-bin/sendsms: --mode small sends 1-recipient messages from
--clients clients for --duration; --mode bulk sends one message to --recipients numbers in one
request. Prints what Kannel accepted; bench/kannel.sh counts what reached the SMSC.`

// KannelConfig is a run.
type KannelConfig struct {
	URL, User, Password string
	Mode                string
	Clients, Recipients int
	Duration            time.Duration
	Offset              int // first number used (so runs do not repeat numbers)
}

// ParseKannelArgs reads tuma-lab bench kannel's flags.
func ParseKannelArgs(args []string, stderr io.Writer) (KannelConfig, error) {
	c := KannelConfig{URL: "http://127.0.0.1:13013", User: "tuma", Password: "bench", Mode: "small", Clients: 64,
		Recipients: 10_000, Duration: 20 * time.Second}
	fs := flag.NewFlagSet("bench kannel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, KannelUsage); fs.PrintDefaults() }
	fs.StringVar(&c.URL, "url", c.URL, "smsbox sendsms base URL")
	fs.StringVar(&c.User, "user", c.User, "sendsms-user username")
	fs.StringVar(&c.Password, "password", c.Password, "sendsms-user password")
	fs.StringVar(&c.Mode, "mode", c.Mode, "small or bulk")
	fs.IntVar(&c.Clients, "clients", c.Clients, "concurrent clients (small)")
	fs.IntVar(&c.Recipients, "recipients", c.Recipients, "recipients of the one message (bulk)")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long to send (small)")
	fs.IntVar(&c.Offset, "offset", 0, "first number to use")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if (c.Mode != "small" && c.Mode != "bulk") || c.Clients < 1 || c.Recipients < 1 || c.Duration <= 0 {
		return c, errors.New("--mode must be small or bulk, and --clients, --recipients, --duration positive")
	}
	return c, nil
}

// RunKannel runs the load and prints accepted requests and their rate.
func RunKannel(ctx context.Context, c KannelConfig, stdout io.Writer) error {
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: c.Clients}}
	send := func(to string) error {
		q := url.Values{"username": {c.User}, "password": {c.Password}, "from": {"TUMA"}, "to": {to},
			"text": {"Habari! Your order 4411 has shipped and arrives tomorrow."}, "dlr-mask": {"3"}}
		// Kannel's sendsms takes its fields in the query (a form body is refused).
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+"/cgi-bin/sendsms?"+q.Encode(), nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("sendsms %d: %s", resp.StatusCode, body)
		}
		return nil
	}
	number := func(i int) string { return "2547" + strconv.Itoa(10_000_000+(c.Offset+i)%90_000_000) }
	start := time.Now()
	if c.Mode == "bulk" {
		to := make([]string, c.Recipients)
		for i := range to {
			to[i] = number(i)
		}
		if err := send(strings.Join(to, " ")); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "kannel bulk: 1 request for %d recipients accepted in %.3f s\n", c.Recipients, time.Since(start).Seconds())
		return nil
	}
	var n, failed atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	end := start.Add(c.Duration)
	for range c.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) && ctx.Err() == nil {
				if err := send(number(int(next.Add(1)))); err != nil {
					failed.Add(1)
					continue
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start).Seconds()
	fmt.Fprintf(stdout, "kannel small: %d accepted (%d failed) in %.1f s = %.0f/s\n", n.Load(), failed.Load(), took, float64(n.Load())/took)
	return nil
}
