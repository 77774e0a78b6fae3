// SMPP credentials (issue 36): the system_id and password a tenant's ESME binds to Tuma's
// SMPP server with, the addresses it may bind from and how many binds it may hold at once.

package persistence

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// SMPP credential limits: SMPP 3.4 gives system_id 16 octets with its terminating NUL.
const (
	MaxSMPPSystemIDLen  = 15
	DefaultSMPPMaxBinds = 4
	MaxSMPPBinds        = 100
)

// Errors of SMPP credentials callers tell apart.
var (
	// ErrSMPPSystemIDTaken: a credential of some account has this system_id (any case).
	ErrSMPPSystemIDTaken = errors.New("smpp system_id taken")
	// ErrSMPPCredentialLimit: the account has as many credentials as NewSMPPCredential.Limit.
	ErrSMPPCredentialLimit = errors.New("smpp credential limit reached")
	// ErrSMPPBindRefused: no credential has this system_id, or the password is not its.
	ErrSMPPBindRefused = errors.New("smpp system_id or password wrong")
	// ErrSMPPCredentialDisabled: the password is right, the credential disabled by its account.
	ErrSMPPCredentialDisabled = errors.New("smpp credential disabled")
	// ErrSMPPAccountSuspended: the password is right, the account suspended.
	ErrSMPPAccountSuspended = errors.New("account suspended")
)

// SMPPCredential is a credential as its tenant sees it (never its password or hash).
type SMPPCredential struct {
	ID, AccountID uuid.UUID
	SystemID      string
	AllowedIPs    AllowList
	MaxBinds      int
	Enabled       bool
	CreatedAt     time.Time
	UpdatedAt     time.Time
	LastBoundAt   *time.Time // nil: never bound
}

// NewSMPPCredential is a credential to create. The password is the caller's to generate and
// hash (transport/auth).
type NewSMPPCredential struct {
	AccountID    uuid.UUID
	SystemID     string // "": one is made from the account's company name
	PasswordHash string
	AllowedIPs   AllowList
	MaxBinds     int // 0: DefaultSMPPMaxBinds
	Limit        int // most credentials the account may have; 0: no limit
}

// SMPPCredentialPatch changes the fields that are set.
type SMPPCredentialPatch struct {
	AllowedIPs *AllowList
	MaxBinds   *int
	Enabled    *bool
}

// ValidSMPPSystemID reports a system_id a tenant may choose: 1 to 15 of A-Z, a-z, 0-9, _ and -.
func ValidSMPPSystemID(s string) bool {
	if s == "" || len(s) > MaxSMPPSystemIDLen {
		return false
	}
	for _, c := range []byte(s) {
		if !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// smppLockClass is the first key of the advisory lock that orders the creations of an
// account's credentials (the second is the account's hash), so two at once cannot both pass
// the limit.
const smppLockClass = 0x736d // "sm"

const smppColumns = `id, account_id, system_id, allowed_ips, max_binds, enabled, created_at, updated_at, last_bound_at`

func scanSMPPCredential(row pgx.Row) (SMPPCredential, error) {
	var c SMPPCredential
	var ips []netip.Prefix
	var binds int16
	err := row.Scan(&c.ID, &c.AccountID, &c.SystemID, &ips, &binds, &c.Enabled, &c.CreatedAt, &c.UpdatedAt, &c.LastBoundAt)
	c.AllowedIPs, c.MaxBinds = AllowList(ips), int(binds)
	if c.AllowedIPs == nil {
		c.AllowedIPs = AllowList{}
	}
	return c, err
}

// prefixes is an allow-list as the cidr[] parameter it is stored as: never NULL.
func (l AllowList) prefixes() []netip.Prefix {
	if l == nil {
		return []netip.Prefix{}
	}
	return l
}

// generatedIDTries is how often a made system_id is drawn again when it is taken: its six
// random characters make a second collision all but impossible.
const generatedIDTries = 5

// CreateSMPPCredential stores a credential. A system_id taken (in any case) is
// ErrSMPPSystemIDTaken, one more than n.Limit ErrSMPPCredentialLimit; nothing is stored then.
func (s *Store) CreateSMPPCredential(ctx context.Context, n NewSMPPCredential) (SMPPCredential, error) {
	if n.MaxBinds == 0 {
		n.MaxBinds = DefaultSMPPMaxBinds
	}
	if n.SystemID != "" && !ValidSMPPSystemID(n.SystemID) || n.MaxBinds < 1 || n.MaxBinds > MaxSMPPBinds || n.PasswordHash == "" {
		return SMPPCredential{}, fmt.Errorf("create smpp credential: invalid fields (system_id %q, max_binds %d)", n.SystemID, n.MaxBinds)
	}
	var c SMPPCredential
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var company string
		err := tx.QueryRow(ctx, `SELECT company_name FROM accounts, pg_advisory_xact_lock($2, hashtext($1::uuid::text))
			WHERE id = $1`, n.AccountID, smppLockClass).Scan(&company)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if n.Limit > 0 {
			var count int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM smpp_credentials WHERE account_id = $1`, n.AccountID).Scan(&count); err != nil {
				return err
			}
			if count >= n.Limit {
				return ErrSMPPCredentialLimit
			}
		}
		for try := 0; ; try++ {
			id := n.SystemID
			if id == "" {
				if id, err = newSystemID(company); err != nil {
					return err
				}
			}
			// ON CONFLICT leaves the transaction usable for another draw.
			c, err = scanSMPPCredential(tx.QueryRow(ctx, `INSERT INTO smpp_credentials
				(id, account_id, system_id, password_hash, allowed_ips, max_binds) VALUES ($1, $2, $3, $4, $5, $6)
				ON CONFLICT ((lower(system_id))) DO NOTHING RETURNING `+smppColumns,
				NewID(), n.AccountID, id, n.PasswordHash, n.AllowedIPs.prefixes(), n.MaxBinds))
			switch {
			case errors.Is(err, pgx.ErrNoRows) && (n.SystemID != "" || try+1 == generatedIDTries):
				return ErrSMPPSystemIDTaken
			case errors.Is(err, pgx.ErrNoRows):
				continue
			}
			return err
		}
	})
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrSMPPCredentialLimit), errors.Is(err, ErrSMPPSystemIDTaken):
		return SMPPCredential{}, err
	case err != nil:
		return SMPPCredential{}, fmt.Errorf("create smpp credential: %w", err)
	}
	return c, nil
}

// systemIDAlphabet is what a made system_id's random part is drawn from: lower case only, so
// it reads the same whoever types it.
const systemIDAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// newSystemID makes a system_id from a company name: up to 8 of its letters and digits, lower
// case ("tuma" when it has none), "_" and 6 random characters, e.g. acmeltd_k3x9q2.
func newSystemID(company string) (string, error) {
	var b strings.Builder
	for _, c := range []byte(strings.ToLower(company)) {
		if isAlnum(c) && b.Len() < 8 {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		b.WriteString("tuma")
	}
	b.WriteByte('_')
	max := big.NewInt(int64(len(systemIDAlphabet)))
	for range 6 {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", fmt.Errorf("generate system_id: %w", err)
		}
		b.WriteByte(systemIDAlphabet[n.Int64()])
	}
	return b.String(), nil
}

// SMPPCredentials lists the account's credentials, oldest first.
func (s *Store) SMPPCredentials(ctx context.Context, accountID uuid.UUID) ([]SMPPCredential, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+smppColumns+` FROM smpp_credentials WHERE account_id = $1 ORDER BY account_id, id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("smpp credentials: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SMPPCredential, error) { return scanSMPPCredential(r) })
	if err != nil {
		return nil, fmt.Errorf("smpp credentials: %w", err)
	}
	return out, nil
}

// SMPPCredentialByID returns one of the account's credentials; another account's is ErrNotFound.
func (s *Store) SMPPCredentialByID(ctx context.Context, accountID, id uuid.UUID) (SMPPCredential, error) {
	return s.smppCredential(ctx, "smpp credential",
		`SELECT `+smppColumns+` FROM smpp_credentials WHERE id = $1 AND account_id = $2`, id, accountID)
}

// UpdateSMPPCredential changes the fields of p that are set; another account's credential is
// ErrNotFound.
func (s *Store) UpdateSMPPCredential(ctx context.Context, accountID, id uuid.UUID, p SMPPCredentialPatch) (SMPPCredential, error) {
	var ips, binds any // NULL: unchanged
	if p.AllowedIPs != nil {
		ips = p.AllowedIPs.prefixes()
	}
	if p.MaxBinds != nil {
		if *p.MaxBinds < 1 || *p.MaxBinds > MaxSMPPBinds {
			return SMPPCredential{}, fmt.Errorf("update smpp credential: max_binds %d out of range", *p.MaxBinds)
		}
		binds = *p.MaxBinds
	}
	return s.smppCredential(ctx, "update smpp credential", `UPDATE smpp_credentials SET
			allowed_ips = coalesce($3::cidr[], allowed_ips), max_binds = coalesce($4::smallint, max_binds),
			enabled = coalesce($5::boolean, enabled), updated_at = now()
		WHERE id = $1 AND account_id = $2 RETURNING `+smppColumns, id, accountID, ips, binds, p.Enabled)
}

// SetSMPPPassword replaces a credential's password hash: the old password binds no more
// (binds already made are the SMPP server's to end).
func (s *Store) SetSMPPPassword(ctx context.Context, accountID, id uuid.UUID, hash string) (SMPPCredential, error) {
	if hash == "" {
		return SMPPCredential{}, errors.New("set smpp password: empty hash")
	}
	return s.smppCredential(ctx, "set smpp password", `UPDATE smpp_credentials SET password_hash = $3, updated_at = now()
		WHERE id = $1 AND account_id = $2 RETURNING `+smppColumns, id, accountID, hash)
}

// DeleteSMPPCredential removes a credential; its system_id may be taken again.
func (s *Store) DeleteSMPPCredential(ctx context.Context, accountID, id uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM smpp_credentials WHERE id = $1 AND account_id = $2`, id, accountID)
	if err != nil {
		return fmt.Errorf("delete smpp credential: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// smppCredential runs a statement returning one credential of an account.
func (s *Store) smppCredential(ctx context.Context, what, sql string, args ...any) (SMPPCredential, error) {
	c, err := scanSMPPCredential(s.pool.QueryRow(ctx, sql, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return SMPPCredential{}, ErrNotFound
	}
	if err != nil {
		return SMPPCredential{}, fmt.Errorf("%s: %w", what, err)
	}
	return c, nil
}

// PasswordChecker compares a password with its stored hash in constant time, and takes as
// long for an empty hash (transport/auth.Passwords, at the cost the credentials are hashed at:
// auth.SMPPPasswordCost).
type PasswordChecker interface {
	Verify(hash, password string) bool
}

// SMPPBind is what the SMPP server needs of a credential that checked.
type SMPPBind struct {
	CredentialID uuid.UUID
	AccountID    uuid.UUID
	AllowedIPs   AllowList // the peer's address must be in it (empty: any)
	MaxBinds     int       // binds of the credential at once, across its bind types
}

// VerifySMPPCredential checks a bind's system_id (in any case) and password. An unknown
// system_id costs the same password comparison as a known one, and both answer
// ErrSMPPBindRefused, so neither time nor answer tells which; only once the password is
// right does a disabled credential or a suspended account say so.
func (s *Store) VerifySMPPCredential(ctx context.Context, systemID, password string, pw PasswordChecker) (SMPPBind, error) {
	var (
		b       SMPPBind
		hash    string
		ips     []netip.Prefix
		binds   int16
		enabled bool
		status  AccountStatus
	)
	err := s.pool.QueryRow(ctx, `SELECT c.id, c.account_id, c.password_hash, c.allowed_ips, c.max_binds, c.enabled, a.status
		FROM smpp_credentials c JOIN accounts a ON a.id = c.account_id WHERE lower(c.system_id) = lower($1)`, systemID).
		Scan(&b.CredentialID, &b.AccountID, &hash, &ips, &binds, &enabled, &status)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return SMPPBind{}, fmt.Errorf("verify smpp credential: %w", err)
	}
	if !pw.Verify(hash, password) || hash == "" { // hash "": no such system_id, compared all the same
		return SMPPBind{}, ErrSMPPBindRefused
	}
	switch {
	case !enabled:
		return SMPPBind{}, ErrSMPPCredentialDisabled
	case status != StatusActive:
		return SMPPBind{}, ErrSMPPAccountSuspended
	}
	b.AllowedIPs, b.MaxBinds = AllowList(ips), int(binds)
	if b.AllowedIPs == nil {
		b.AllowedIPs = AllowList{}
	}
	return b, nil
}

// SMPPBound records that a credential bound just now (last_bound_at, shown with the
// credential).
func (s *Store) SMPPBound(ctx context.Context, credentialID uuid.UUID) error {
	if _, err := s.pool.Exec(ctx, `UPDATE smpp_credentials SET last_bound_at = now() WHERE id = $1`, credentialID); err != nil {
		return fmt.Errorf("record smpp bind: %w", err)
	}
	return nil
}
