// Command tuma runs the Tuma bulk SMS platform.
//
//	tuma [serve]   run the service (default); serve --banner prints where it is reached
//	tuma migrate   apply database migrations and exit
//	tuma config    print the effective configuration, secrets redacted
//	tuma version   print the version
//	tuma smsc      run an SMPP 3.4 SMSC simulator (tuma smsc -h)
//
// The load tests and drills are another binary, cmd/tuma-lab: none of them is linked here.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/tuma-sms/tuma/cmd/tuma/app"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv); err != nil {
		fmt.Fprintln(os.Stderr, "tuma:", err)
		if errors.Is(err, app.ErrRestart) {
			os.Exit(app.ExitRestart)
		}
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
	case "bench", "drill":
		return fmt.Errorf("%s moved to the lab binary: tuma-lab %s (make build puts it in bin/)", cmd, cmd)
	case "smsc": // a network of its own: no server configuration
		return runSMSC(ctx, args[1:], stdout, stderr)
	case "serve", "migrate":
	default:
		return fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
	var banner bool
	if cmd == "serve" && len(args) > 1 {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(stderr)
		fs.BoolVar(&banner, "banner", false, "print where the node is reached once it listens (make run)")
		if err := fs.Parse(args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return err
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("serve: unexpected arguments %q", fs.Args())
		}
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
	if banner {
		public, _ := lookup("TUMA_PUBLIC_URL")
		if public != "" {
			public = cfg.PublicURL
		}
		if err := printBanner(stdout, public, a.Addr(), a.InternalAddr()); err != nil {
			return err
		}
	}
	return a.Run(ctx)
}

const usage = `usage: tuma [command]

commands:
  serve     run the service (default); serve --banner prints where it is reached once listening
  migrate   apply database migrations and exit
  config    print the effective configuration, secrets redacted
  version   print the version
  smsc      an SMPP 3.4 SMSC simulator for TUMA_CARRIERS=smpp; tuma smsc -h for its flags

Configuration comes from TUMA_* environment variables; see README.md. Load tests, drills
and security checks are the lab's: tuma-lab -h.`
