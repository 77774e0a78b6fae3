// The tenants' SMPP server (TUMA_SMPP_SERVER_ADDR): its binds checked against the accounts'
// SMPP credentials, its submits sent by the same operation as POST /sms/send.

package app

import (
	"context"
	"errors"
	"strings"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/api/sms"
	"github.com/tuma-sms/tuma/transport/auth"
	"github.com/tuma-sms/tuma/transport/smppserver"
)

// smppBinds checks binds with the passwords' checker the credentials are hashed for.
type smppBinds struct {
	store     *persistence.Store
	passwords *auth.Passwords
}

func (b smppBinds) VerifySMPPCredential(ctx context.Context, systemID, password string) (persistence.SMPPBind, error) {
	return b.store.VerifySMPPCredential(ctx, systemID, password, b.passwords)
}

// smppSends sends a submit_sm as a JSON send of one recipient: the same checks, sender
// resolution, pricing, suppressions and company prefix. The job's id is the message id the
// ESME gets back (one recipient: one message).
type smppSends struct{ sending *sms.Handler }

func (s smppSends) Submit(ctx context.Context, sub smppserver.Submit) (smppserver.Accepted, error) {
	a, err := s.sending.Send(ctx, auth.Principal{AccountID: sub.AccountID, Source: auth.SourceAPI},
		sms.SendInput{Recipients: []string{sub.To}, Message: sub.Text, SenderID: sub.From}, nil)
	if err != nil {
		return smppserver.Accepted{}, smppRefusal(err)
	}
	return smppserver.Accepted{MessageID: a.JobID.String()}, nil
}

// smppRefusal names the field a send refused (a 422 problem) as the server's error for it.
func smppRefusal(err error) error {
	var p *api.Problem
	if !errors.As(err, &p) {
		return err
	}
	for _, f := range p.Errors {
		switch {
		case strings.HasPrefix(f.Field, "recipients"):
			return errors.Join(smppserver.ErrBadDestination, err)
		case f.Field == "sender_id":
			return errors.Join(smppserver.ErrBadSource, err)
		case f.Field == "message":
			return errors.Join(smppserver.ErrBadText, err)
		}
	}
	return err
}
