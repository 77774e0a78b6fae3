// Command tuma-lab is Tuma's lab: load tests and drills against tuma nodes. It is a binary of
// its own so that none of it is linked into the server (cmd/tuma).
//
//	tuma-lab bench     drive a running Tuma with load and measure it (see bench.Usage)
//	tuma-lab drill     the reliability drills, then the security checks, against tuma nodes it
//	                   starts (see drill.Usage)
//	tuma-lab security  the security checks alone (see drill.SecurityUsage)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tuma-sms/tuma/bench"
	"github.com/tuma-sms/tuma/bench/drill"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv); err != nil {
		fmt.Fprintln(os.Stderr, "tuma-lab:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, lookup func(string) (string, bool)) error {
	if len(args) == 0 {
		return fmt.Errorf("no command\n%s", usage)
	}
	switch args[0] {
	case "bench":
		return runBench(ctx, args[1:], stdout, stderr, lookup)
	case "drill":
		return runDrills(ctx, args[1:], stdout, stderr, lookup, drill.ParseArgs)
	case "security":
		return runDrills(ctx, args[1:], stdout, stderr, lookup, drill.ParseSecurityArgs)
	case "help", "--help", "-h":
		_, err := fmt.Fprintln(stdout, usage)
		return err
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

// parsed turns the flag package's -h into a clean exit.
func parsed(err error) (stop bool, _ error) {
	if errors.Is(err, flag.ErrHelp) {
		return true, nil
	}
	return err != nil, err
}

// runBench is `tuma-lab bench [compare|summary|headline|contacts|kannel|smpp|campaign|dashboard] …`.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer, lookup func(string) (string, bool)) error {
	sub := ""
	if len(args) > 0 {
		sub = args[0]
	}
	switch sub {
	case "summary":
		if len(args) < 2 {
			return errors.New("summary needs result files: tuma-lab bench summary bench/results/*.json")
		}
		return bench.Summary(args[1:], stdout)
	case "headline":
		if len(args) < 2 {
			return errors.New("headline needs result files of small and bulk runs: tuma-lab bench headline bench/results/headline/*.json")
		}
		return bench.Headline(args[1:], stdout)
	case "contacts":
		cfg, err := bench.ParseContactsArgs(args[1:], lookup, stderr)
		if stop, err := parsed(err); stop {
			return err
		}
		_, err = bench.RunContacts(ctx, cfg, stdout)
		return err
	case "kannel":
		cfg, err := bench.ParseKannelArgs(args[1:], stderr)
		if stop, err := parsed(err); stop {
			return err
		}
		return bench.RunKannel(ctx, cfg, stdout)
	case "smpp":
		cfg, err := bench.ParseSMPPArgs(args[1:], stderr)
		if stop, err := parsed(err); stop {
			return err
		}
		if cfg.Addr == "" && cfg.URL == "" && cfg.Bin == "" {
			if cfg.Bin, err = serverBinary(); err != nil {
				return err
			}
		}
		_, err = bench.RunSMPP(ctx, cfg, stdout)
		return err
	case "campaign":
		cfg, err := bench.ParseCampaignArgs(args[1:], lookup, stderr)
		if stop, err := parsed(err); stop {
			return err
		}
		_, err = bench.RunCampaign(ctx, cfg, stdout)
		return err
	case "dashboard":
		cfg, err := bench.ParseDashboardArgs(args[1:], lookup, stderr)
		if stop, err := parsed(err); stop {
			return err
		}
		_, err = bench.RunDashboard(ctx, cfg, stdout)
		return err
	case "compare":
		opts, err := bench.ParseCompareArgs(args[1:], stderr)
		if stop, err := parsed(err); stop {
			return err
		}
		return bench.Compare(opts, stdout)
	}
	cfg, err := bench.ParseArgs(args, lookup, stderr)
	if stop, err := parsed(err); stop {
		return err
	}
	return bench.Run(ctx, cfg, stdout, stderr)
}

// runDrills is `tuma-lab drill …` and `tuma-lab security …`: it fails when any check fails.
func runDrills(ctx context.Context, args []string, stdout, stderr io.Writer, lookup func(string) (string, bool),
	parse func([]string, func(string) (string, bool), io.Writer) (drill.Config, error)) error {
	cfg, err := parse(args, lookup, stderr)
	if stop, err := parsed(err); stop {
		return err
	}
	if cfg.Bin == "" {
		if cfg.Bin, err = serverBinary(); err != nil {
			return err
		}
	}
	cfg.Progress = stderr
	rep, err := drill.Run(ctx, cfg, stdout)
	if err != nil {
		return err
	}
	if !rep.Pass {
		return fmt.Errorf("checks failed:\n  %s", strings.Join(rep.Failed(), "\n  "))
	}
	return nil
}

// serverBinary is the tuma server binary the lab starts when --bin is not given: the one
// beside this executable (make build puts both in bin/), else tuma on PATH.
func serverBinary() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "tuma")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("tuma")
	if err != nil {
		return "", errors.New("no tuma binary beside tuma-lab or on PATH: run make build, or give --bin")
	}
	return p, nil
}

const usage = `usage: tuma-lab command [flags]

Tuma's lab, kept out of the server binary:

commands:
  bench     load-test a running Tuma over HTTP; tuma-lab bench -h for its flags and
            subcommands (compare, summary, headline, contacts, campaign, dashboard, kannel, smpp)
  drill     reliability drills (kill -9, outages, overload, SIGTERM) against tuma nodes it
            starts, then the security checks; tuma-lab drill -h for its flags
  security  the security checks alone (hostile probes, brute force, secrets in logs,
            govulncheck) against tuma nodes it starts on loopback; tuma-lab security -h

The drills and smpp start the tuma server binary: --bin, else tuma beside tuma-lab (bin/),
else tuma on PATH.`
