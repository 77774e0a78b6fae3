// Command tuma runs the Tuma bulk SMS platform.
//
//	tuma [serve]   run the service (default)
//	tuma migrate   apply database migrations and exit
//	tuma config    print the effective configuration, secrets redacted
//	tuma version   print the version
//	tuma bench     drive a running Tuma with load and measure it (see bench.Usage)
//	tuma drill     run the reliability drills against this binary (see drill.Usage)
//	tuma smsc      run an SMPP 3.4 SMSC simulator (tuma smsc -h)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/tuma-sms/tuma/bench"
	"github.com/tuma-sms/tuma/bench/drill"
	"github.com/tuma-sms/tuma/cmd/tuma/app"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv); err != nil {
		fmt.Fprintln(os.Stderr, "tuma:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, lookup func(string) (string, bool)) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd = args[0]
	}
	switch cmd {
	case "version", "--version", "-v":
		_, err := fmt.Fprintln(stdout, "tuma", version)
		return err
	case "config":
		if len(args) > 1 && args[1] == "--markdown" { // the README's configuration table
			app.Markdown(stdout)
			return nil
		}
	case "help", "--help", "-h":
		_, err := fmt.Fprintln(stdout, usage)
		return err
	case "bench": // a client of a running node: no server configuration
		return runBench(ctx, args[1:], stdout, stderr, lookup)
	case "drill": // starts nodes of its own: no server configuration
		return runDrill(ctx, args[1:], stdout, stderr, lookup)
	case "smsc": // a network of its own: no server configuration
		return runSMSC(ctx, args[1:], stdout, stderr)
	case "serve", "migrate":
	default:
		return fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}

	cfg, err := app.LoadConfig(lookup)
	if err != nil {
		return err
	}
	logs := app.NewLogBuffer(stderr, cfg.LogBuffer)
	defer logs.Close()
	log := app.NewLogger(cfg, logs)
	switch cmd {
	case "config":
		return cfg.Print(stdout)
	case "migrate":
		from, to, err := app.Migrate(ctx, cfg, log)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "database schema at version %d (was %d)\n", to, from)
		return err
	}
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// runBench is `tuma bench [compare|summary] …`.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer, lookup func(string) (string, bool)) error {
	if len(args) > 0 && args[0] == "summary" {
		if len(args) < 2 {
			return errors.New("summary needs result files: tuma bench summary bench/results/*.json")
		}
		return bench.Summary(args[1:], stdout)
	}
	if len(args) > 0 && args[0] == "headline" {
		if len(args) < 2 {
			return errors.New("headline needs result files of small and bulk runs: tuma bench headline bench/results/headline/*.json")
		}
		return bench.Headline(args[1:], stdout)
	}
	if len(args) > 0 && args[0] == "contacts" {
		cfg, err := bench.ParseContactsArgs(args[1:], lookup, stderr)
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		if err != nil {
			return err
		}
		_, err = bench.RunContacts(ctx, cfg, stdout)
		return err
	}
	if len(args) > 0 && args[0] == "kannel" {
		cfg, err := bench.ParseKannelArgs(args[1:], stderr)
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		if err != nil {
			return err
		}
		return bench.RunKannel(ctx, cfg, stdout)
	}
	if len(args) > 0 && args[0] == "smpp" {
		cfg, err := bench.ParseSMPPArgs(args[1:], stderr)
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		if err != nil {
			return err
		}
		_, err = bench.RunSMPP(ctx, cfg, stdout)
		return err
	}
	if len(args) > 0 && args[0] == "campaign" {
		cfg, err := bench.ParseCampaignArgs(args[1:], lookup, stderr)
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		if err != nil {
			return err
		}
		_, err = bench.RunCampaign(ctx, cfg, stdout)
		return err
	}
	if len(args) > 0 && args[0] == "compare" {
		opts, err := bench.ParseCompareArgs(args[1:], stderr)
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		if err != nil {
			return err
		}
		return bench.Compare(opts, stdout)
	}
	cfg, err := bench.ParseArgs(args, lookup, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	return bench.Run(ctx, cfg, stdout, stderr)
}

// runDrill is `tuma drill …`: it fails when any check fails.
func runDrill(ctx context.Context, args []string, stdout, stderr io.Writer, lookup func(string) (string, bool)) error {
	cfg, err := drill.ParseArgs(args, lookup, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	cfg.Progress = stderr
	rep, err := drill.Run(ctx, cfg, stdout)
	if err != nil {
		return err
	}
	if !rep.Pass {
		return fmt.Errorf("drills failed:\n  %s", strings.Join(rep.Failed(), "\n  "))
	}
	return nil
}

const usage = `usage: tuma [command]

commands:
  serve     run the service (default)
  migrate   apply database migrations and exit
  config    print the effective configuration, secrets redacted
  version   print the version
  bench     load-test a running Tuma over HTTP; tuma bench -h for its flags
  drill     reliability drills (kill -9, outages, overload, probes); tuma drill -h for its flags
  smsc      an SMPP 3.4 SMSC simulator for TUMA_CARRIERS=smpp; tuma smsc -h for its flags

Configuration comes from TUMA_* environment variables; see README.md.`
