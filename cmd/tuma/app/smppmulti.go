// submit_multi: one send of the destinations the API takes, the others refused by index.

package app

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/api/sms"
	"github.com/tuma-sms/tuma/transport/auth"
	"github.com/tuma-sms/tuma/transport/smppserver"
)

// SubmitMulti sends a submit_multi as a JSON send of its destinations. The send refuses a
// body with any bad number, naming up to 100 of them: those are taken out and the rest sent
// again (at most 3 rounds for 255 destinations), so one bad number does not stop the others.
func (s smppSends) SubmitMulti(ctx context.Context, m smppserver.Multi) (smppserver.MultiAccepted, error) {
	p := auth.Principal{AccountID: m.AccountID, Source: auth.SourceAPI}
	left := make([]int, len(m.To)) // indexes in m.To still to send
	for i := range left {
		left[i] = i
	}
	var refused []int
	for len(left) > 0 {
		to := make([]string, len(left))
		for k, i := range left {
			to[k] = m.To[i]
		}
		a, err := s.sending.Send(ctx, p, sms.SendInput{Recipients: to, Message: m.Text, SenderID: m.From}, nil)
		if err == nil {
			slices.Sort(refused)
			return smppserver.MultiAccepted{MessageID: a.JobID.String(), Refused: refused}, nil
		}
		bad := badRecipients(err)
		if len(bad) == 0 {
			return smppserver.MultiAccepted{}, smppRefusal(err)
		}
		var keep []int
		for k, i := range left {
			if _, out := bad[k]; out {
				refused = append(refused, i)
			} else {
				keep = append(keep, i)
			}
		}
		left = keep
	}
	slices.Sort(refused)
	return smppserver.MultiAccepted{Refused: refused}, smppserver.ErrBadDestination
}

// badRecipients are the indexes of the recipients a send refused (its recipients[i] field
// errors); none for any other error.
func badRecipients(err error) map[int]struct{} {
	var p *api.Problem
	if !errors.As(err, &p) {
		return nil
	}
	out := map[int]struct{}{}
	for _, f := range p.Errors {
		var i int
		if _, err := fmt.Sscanf(f.Field, "recipients[%d]", &i); err == nil {
			out[i] = struct{}{}
		}
	}
	return out
}
