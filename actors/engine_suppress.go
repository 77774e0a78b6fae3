package actors

import (
	"context"

	"github.com/google/uuid"
)

// SuppressionChanged tells the account's tenant that a number was (un)suppressed; it answers once the tenant holds the change.
func (e *Engine) SuppressionChanged(ctx context.Context, accountID uuid.UUID, nsn uint32, suppressed bool) error {
	return nil
}
