package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/tuma-sms/tuma/carriers/smpp"
)

// runSMSC is `tuma smsc`: an SMPP 3.4 SMSC simulator for development, demos and load tests.
func runSMSC(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("smsc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg smpp.SMSCConfig
	var ids, control string
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:2775", "listen address")
	fs.StringVar(&cfg.SystemID, "system-id", "tuma", "the system_id binds must give (empty: any)")
	fs.StringVar(&cfg.Password, "password", "secret", "the password binds must give")
	fs.IntVar(&cfg.TPS, "tps", 0, "submit_sm per second over all binds before ESME_RTHROTTLED (0: no cap)")
	fs.DurationVar(&cfg.ReceiptDelay, "receipt-delay", 0, "submit to delivery receipt")
	fs.Float64Var(&cfg.FailRate, "fail-rate", 0.02, "share of messages whose receipt says UNDELIV")
	fs.StringVar(&cfg.RejectPrefix, "reject-prefix", "", "destinations starting with this are refused (ESME_RINVDSTADR)")
	fs.StringVar(&ids, "ids", "same", "how receipt texts write the submit_sm_resp id: same, hex-dec or dec-hex")
	fs.BoolVar(&cfg.ReceiptTLVs, "receipt-tlvs", true, "add receipted_message_id and message_state to receipts")
	fs.StringVar(&control, "control", "", "HTTP address for POST /mo {from, to, text, concat: udh|udh16|sar}: "+
		"a subscriber's message delivered to a bound ESME; GET /stats[?since=unix]: the counters and "+
		"the submits accepted in each second of the last 600 (empty: off)")
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
	if control != "" {
		ln, err := net.Listen("tcp", control)
		if err != nil {
			s.Close()
			return fmt.Errorf("smsc: control: %w", err)
		}
		srv := &http.Server{Handler: smscControl(s), ReadHeaderTimeout: 5 * time.Second}
		served := make(chan struct{})
		go func() { // owned: shut down and waited for below
			defer close(served)
			_ = srv.Serve(ln)
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
			<-served
		}()
		fmt.Fprintf(stdout, "tuma smsc control on http://%s (POST /mo, GET /stats)\n", ln.Addr())
	}
	err = s.Serve(ctx)
	st := s.Stats()
	fmt.Fprintf(stdout, "tuma smsc: %d binds, %d submits, %d throttled, %d rejected, %d receipts (%d undelivered), %d queries\n",
		st.Binds, st.Submits, st.Throttled, st.Rejected, st.Receipts, st.Undelivered, st.Queries)
	return err
}

// moRequest is the body of the control's POST /mo.
type moRequest struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Text   string `json:"text"`
	Concat string `json:"concat"` // udh (default), udh16 or sar: how a long text's parts are tied
}

// smscStats is the body of the control's GET /stats.
type smscStats struct {
	Binds       uint64       `json:"binds"`
	Submits     uint64       `json:"submits"`
	Throttled   uint64       `json:"throttled"`
	Rejected    uint64       `json:"rejected"`
	Receipts    uint64       `json:"receipts"`
	Undelivered uint64       `json:"undelivered"`
	Queries     uint64       `json:"queries"`
	Seconds     []smscSecond `json:"seconds"`
}

type smscSecond struct {
	Second  int64 `json:"second"` // unix
	Submits int   `json:"submits"`
}

// statsSeconds is how far back GET /stats looks: a drill's run, not the SMSC's whole hour.
const statsSeconds = 600

// smscControl serves POST /mo: it answers 200 {"parts": n} once the bound ESME has taken every
// part (deliver_sm_resp ESME_ROK; refusals for now are offered again, as an SMSC does), 400
// for an empty or too long text, 422 for a refusal for good, 503 when no ESME is bound to
// receive within the request's 30 s. GET /stats answers the counters and the submits accepted
// (ESME_ROK) in each second of the last 600 that had any, oldest first, so a load test can
// check a TPS cap second by second; ?since=<unix seconds> narrows them to a run's.
func smscControl(s *smpp.SMSC) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		since := time.Now().Add(-(statsSeconds - 1) * time.Second)
		if q := r.URL.Query(); q.Has("since") {
			n, err := strconv.ParseInt(q.Get("since"), 10, 64)
			if err != nil {
				http.Error(w, "since: want unix seconds, e.g. since=1700000000", http.StatusBadRequest)
				return
			}
			if t := time.Unix(n, 0); t.After(since) {
				since = t
			}
		}
		st := s.Stats()
		out := smscStats{Binds: st.Binds, Submits: st.Submits, Throttled: st.Throttled, Rejected: st.Rejected,
			Receipts: st.Receipts, Undelivered: st.Undelivered, Queries: st.Queries, Seconds: []smscSecond{}}
		for _, c := range s.Seconds(since) {
			out.Seconds = append(out.Seconds, smscSecond{Second: c.Second, Submits: c.Submits})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("POST /mo", func(w http.ResponseWriter, r *http.Request) {
		var in moRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&in); err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
			return
		}
		spec := smpp.MOSpec{From: in.From, To: in.To, Text: in.Text}
		switch in.Concat {
		case "", "udh":
		case "udh16":
			spec.Ref16 = true
		case "sar":
			spec.Concat = smpp.ConcatSAR
		default:
			http.Error(w, "concat: want udh, udh16 or sar", http.StatusBadRequest)
			return
		}
		if in.From == "" || in.To == "" {
			http.Error(w, "from and to are required", http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		n, err := s.SendMO(ctx, spec)
		var st smpp.Status
		switch {
		case errors.As(err, &st):
			http.Error(w, fmt.Sprintf("refused after %d parts: %s", n, st), http.StatusUnprocessableEntity)
			return
		case errors.Is(err, smpp.ErrEmptyText), errors.Is(err, smpp.ErrFieldTooLong):
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		case errors.Is(err, smpp.ErrNoReceiver):
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		case err != nil:
			http.Error(w, fmt.Sprintf("after %d parts: %s", n, err), http.StatusGatewayTimeout)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int{"parts": n})
	})
	return mux
}
