//go:build faults

// Faults of a binary built for the drills' own tests (go build -tags faults): each hook reads
// its switch. A default build has faults_off.go instead, where every hook is a constant.

package persistence

// Faults are deliberate defects a drill turns on to prove it notices them. Only binaries
// built with -tags faults let the configuration set them.
type Faults struct {
	SkipRefunds bool // refunds are written to the ledger but never returned to the wallet
	CrossTenant bool // MessageByID finds any account's message (the security checks' cross-tenant probes)
	SkipCounts  bool // the fold leaves the accounts' message counts (/sms/stats) as they were
}

// skipCounts: the fold moves no account's message counts (the drills must notice them
// disagreeing with the messages).
//
//go:noinline
func (f Faults) skipCounts() bool { return f.SkipCounts }

// skipRefunds: refunds leave the wallets alone (the drills must notice the ledger disagreeing).
//
//go:noinline
func (f Faults) skipRefunds() bool { return f.SkipRefunds }

// messageFilter is MessageByID's WHERE clause; the CrossTenant fault ignores the account.
//
//go:noinline
func (f Faults) messageFilter(where string) string {
	if f.CrossTenant {
		return `m.id = $1 AND $2::uuid IS NOT NULL`
	}
	return where
}
