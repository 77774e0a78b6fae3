// The tenants' SMPP server (TUMA_SMPP_SERVER_ADDR): its binds checked against the accounts'
// SMPP credentials, its submits sent by the same operation as POST /sms/send.

package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/actors"
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

func (b smppBinds) SMPPBound(ctx context.Context, credentialID uuid.UUID) error {
	return b.store.SMPPBound(ctx, credentialID)
}

// smppSends sends a submit_sm as a JSON send of one recipient: the same checks, sender
// resolution, pricing, suppressions and company prefix, recorded with source smpp. The
// message's id (the UUID's text, 36 characters) is what the ESME gets back.
type smppSends struct {
	sending *sms.Handler
	store   *persistence.Store
}

// unknownOutcomeWait is how long a submit whose send timed out looks for its message in the
// store before it is answered as not taken (ESME_RTHROTTLED, which the ESME sends again).
const unknownOutcomeWait = 30 * time.Second

// Submit sends with the message's id chosen first, so that an outcome the send could not tell
// (the engine did not answer in time) is looked up rather than guessed: an ESME told to try
// again sends a second message, charged again, if the first was in fact accepted.
func (s smppSends) Submit(ctx context.Context, sub smppserver.Submit) (smppserver.Accepted, error) {
	if sub.MessageID == uuid.Nil {
		sub.MessageID = persistence.NewID()
	}
	a, err := s.sending.Send(ctx, auth.Principal{AccountID: sub.AccountID, Source: auth.SourceSMPP},
		sms.SendInput{Recipients: []string{sub.To}, Message: sub.Text, SenderID: sub.From, MessageID: sub.MessageID, Receipt: sub.Receipt}, nil)
	switch {
	case errors.Is(err, persistence.ErrDuplicateMessage):
		// A long message's last part sent again after its first send's answer was lost: the
		// message was accepted then, with this id.
		return smppserver.Accepted{MessageID: sub.MessageID.String()}, nil
	case errors.Is(err, actors.ErrBusy) || errors.Is(err, context.DeadlineExceeded):
		if s.found(sub.AccountID, sub.MessageID) {
			return smppserver.Accepted{MessageID: sub.MessageID.String()}, nil
		}
		return smppserver.Accepted{}, err
	case err != nil:
		return smppserver.Accepted{}, smppRefusal(err)
	}
	if a.MessageID == uuid.Nil { // one recipient is always written inline with its job
		return smppserver.Accepted{}, fmt.Errorf("smpp submit: job %s wrote no message inline", a.JobID)
	}
	return smppserver.Accepted{MessageID: a.MessageID.String()}, nil
}

// found looks for a message whose send's outcome is unknown, for up to unknownOutcomeWait:
// a send the engine took commits within it.
func (s smppSends) found(accountID, id uuid.UUID) bool {
	ctx, cancel := context.WithTimeout(context.Background(), unknownOutcomeWait)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := s.store.MessageByID(ctx, accountID, id); err == nil {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
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
