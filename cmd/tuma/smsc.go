package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/tuma-sms/tuma/carriers/smpp"
)

// runSMSC is `tuma smsc`: an SMPP 3.4 SMSC simulator for development, demos and load tests.
func runSMSC(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("smsc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg smpp.SMSCConfig
	var ids string
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:2775", "listen address")
	fs.StringVar(&cfg.SystemID, "system-id", "tuma", "the system_id binds must give (empty: any)")
	fs.StringVar(&cfg.Password, "password", "secret", "the password binds must give")
	fs.IntVar(&cfg.TPS, "tps", 0, "submit_sm per second over all binds before ESME_RTHROTTLED (0: no cap)")
	fs.DurationVar(&cfg.ReceiptDelay, "receipt-delay", 0, "submit to delivery receipt")
	fs.Float64Var(&cfg.FailRate, "fail-rate", 0.02, "share of messages whose receipt says UNDELIV")
	fs.StringVar(&cfg.RejectPrefix, "reject-prefix", "", "destinations starting with this are refused (ESME_RINVDSTADR)")
	fs.StringVar(&ids, "ids", "same", "how receipt texts write the submit_sm_resp id: same, hex-dec or dec-hex")
	fs.BoolVar(&cfg.ReceiptTLVs, "receipt-tlvs", true, "add receipted_message_id and message_state to receipts")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	form, err := smpp.ParseMessageIDForm(ids)
	if err != nil {
		return err
	}
	cfg.IDForm = form
	log := slog.New(slog.NewTextHandler(stderr, nil))
	s, err := smpp.NewSMSC(cfg, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "tuma smsc listening on %s (system_id %q)\n", s.Addr(), cfg.SystemID)
	err = s.Serve(ctx)
	st := s.Stats()
	fmt.Fprintf(stdout, "tuma smsc: %d binds, %d submits, %d throttled, %d rejected, %d receipts (%d undelivered), %d queries\n",
		st.Binds, st.Submits, st.Throttled, st.Rejected, st.Receipts, st.Undelivered, st.Queries)
	return err
}
