package smpp

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// BindConfig is one bind to an SMSC (notes/telecom.md §3.2, §3.6).
type BindConfig struct {
	Name            string // for metrics and logs, e.g. "safaricom-1"
	Addr            string // host:port
	SystemID        string
	Password        string
	SystemType      string
	Window          int           // submits awaiting their resp at once
	TPS             int           // submits per second, spaced evenly; 0 = no cap
	EnquireLink     time.Duration // idle time before an enquire_link
	ResponseTimeout time.Duration // a resp not in by then is an unknown outcome
	ReconnectMin    time.Duration // first pause after a lost or refused bind; doubles
	ReconnectMax    time.Duration
	ThrottlePause   time.Duration // how long the bind holds its submits after ESME_RTHROTTLED
	Concat          Concat
	IDForm          MessageIDForm // how receipt texts write the resp's message id
	// SourceTON and SourceNPI, when set (0 to 255), replace the choice by the sender's form
	// (alphanumeric 5/0, short code 3/0, number 1/1) for every message of the bind.
	SourceTON, SourceNPI int  // -1: by the sender's form
	DestTON, DestNPI     byte // the destination's (1/1: international, E.164)
	AddrTON, AddrNPI     byte // bind_transceiver's addr_ton/addr_npi (usually 0/0)
}

// Defaults for what a bind URL leaves out.
const (
	DefaultWindow          = 100
	DefaultEnquireLink     = 30 * time.Second
	DefaultResponseTimeout = 10 * time.Second
	DefaultReconnectMin    = time.Second
	DefaultReconnectMax    = 30 * time.Second
	DefaultThrottlePause   = 100 * time.Millisecond
)

// ParseBinds reads a network's binds from its configuration value: one or more
// space-separated URLs of the form
//
//	smpp://system_id:password@host:port?window=100&tps=50&binds=2&system_type=&enquire_link=30s&response_timeout=10s&reconnect=1s-30s&throttle_pause=100ms&concat=udh&ids=same
//
// and source_ton, source_npi (default: by the sender's form), dest_ton, dest_npi (1, 1),
// bind_ton, bind_npi (0, 0).
//
// binds=N opens N identical binds. Names are prefix-1, prefix-2, …
func ParseBinds(prefix, value string) ([]BindConfig, error) {
	var out []BindConfig
	for _, raw := range strings.Fields(value) {
		c, n, err := parseBindURL(raw)
		if err != nil {
			return nil, err
		}
		for range n {
			c.Name = fmt.Sprintf("%s-%d", prefix, len(out)+1)
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no bind configured")
	}
	return out, nil
}

func parseBindURL(raw string) (BindConfig, int, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return BindConfig{}, 0, fmt.Errorf("bind URL: %w", err)
	}
	redacted := u.Redacted()
	if u.Scheme != "smpp" {
		return BindConfig{}, 0, fmt.Errorf("bind URL %s: scheme must be smpp", redacted)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return BindConfig{}, 0, fmt.Errorf("bind URL %s: want host:port: %w", redacted, err)
	}
	c := BindConfig{Addr: u.Host, Window: DefaultWindow, EnquireLink: DefaultEnquireLink,
		ResponseTimeout: DefaultResponseTimeout, ReconnectMin: DefaultReconnectMin,
		ReconnectMax: DefaultReconnectMax, ThrottlePause: DefaultThrottlePause, SourceTON: -1, SourceNPI: -1,
		DestTON: 1, DestNPI: 1}
	if u.User != nil {
		c.SystemID = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	n := 1
	q := u.Query()
	for k := range q {
		v := q.Get(k)
		var err error
		switch k {
		case "window":
			err = intIn(&c.Window, v, 1, 10_000)
		case "tps":
			err = intIn(&c.TPS, v, 0, 1_000_000)
		case "binds":
			err = intIn(&n, v, 1, 64)
		case "system_type":
			c.SystemType = v
		case "enquire_link":
			err = duration(&c.EnquireLink, v)
		case "response_timeout":
			err = duration(&c.ResponseTimeout, v)
		case "throttle_pause":
			err = duration(&c.ThrottlePause, v)
		case "reconnect":
			lo, hi, ok := strings.Cut(v, "-")
			if !ok {
				hi = lo
			}
			if err = duration(&c.ReconnectMin, lo); err == nil {
				err = duration(&c.ReconnectMax, hi)
			}
		case "concat":
			c.Concat, err = ParseConcat(v)
		case "ids":
			c.IDForm, err = ParseMessageIDForm(v)
		case "source_ton":
			err = intIn(&c.SourceTON, v, 0, 255)
		case "source_npi":
			err = intIn(&c.SourceNPI, v, 0, 255)
		case "dest_ton":
			err = byteIn(&c.DestTON, v)
		case "dest_npi":
			err = byteIn(&c.DestNPI, v)
		case "bind_ton":
			err = byteIn(&c.AddrTON, v)
		case "bind_npi":
			err = byteIn(&c.AddrNPI, v)
		default:
			err = errors.New("unknown option")
		}
		if err != nil {
			return BindConfig{}, 0, fmt.Errorf("bind URL %s: %s=%q: %w", redacted, k, v, err)
		}
	}
	if err := c.Validate(); err != nil {
		return BindConfig{}, 0, fmt.Errorf("bind URL %s: %w", redacted, err)
	}
	return c, n, nil
}

// Validate checks what the wire would refuse and what would make a bind spin.
func (c BindConfig) Validate() error {
	switch {
	case c.SystemID == "" || len(c.SystemID) >= maxSystemID:
		return fmt.Errorf("system_id must be 1 to %d characters", maxSystemID-1)
	case len(c.Password) >= maxPassword:
		return fmt.Errorf("password must be at most %d characters", maxPassword-1)
	case len(c.SystemType) >= maxSystemType:
		return fmt.Errorf("system_type must be at most %d characters", maxSystemType-1)
	case c.Window < 1:
		return errors.New("window must be at least 1")
	case c.TPS < 0:
		return errors.New("tps must not be negative")
	case c.ResponseTimeout <= 0 || c.EnquireLink <= 0:
		return errors.New("response_timeout and enquire_link must be positive")
	case c.ReconnectMin <= 0 || c.ReconnectMax < c.ReconnectMin:
		return errors.New("reconnect must be MIN-MAX with 0 < MIN <= MAX")
	case c.ThrottlePause < 0:
		return errors.New("throttle_pause must not be negative")
	}
	return nil
}

func intIn(dst *int, v string, lo, hi int) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return fmt.Errorf("want a whole number from %d to %d", lo, hi)
	}
	*dst = n
	return nil
}

func byteIn(dst *byte, v string) error {
	var n int
	if err := intIn(&n, v, 0, 255); err != nil {
		return err
	}
	*dst = byte(n)
	return nil
}

func duration(dst *time.Duration, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return errors.New("want a duration such as 30s")
	}
	*dst = d
	return nil
}
