package persistence

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Errors of verification and password resets.
var (
	ErrAlreadyVerified = errors.New("account already verified")
	ErrTokenExpired    = errors.New("token expired")
	ErrNoCode          = errors.New("no verification code was requested")
	ErrCodeExpired     = errors.New("verification code expired")
	ErrCodeLocked      = errors.New("verification code locked after too many wrong attempts")
)

// WrongCodeError is a wrong verification code, with the attempts left before it locks.
type WrongCodeError struct{ Remaining int }

func (e *WrongCodeError) Error() string {
	return fmt.Sprintf("wrong verification code (%d attempts left)", e.Remaining)
}

// MaxCodeAttempts is how many wrong codes lock a code.
const MaxCodeAttempts = 5

// CodeAttemptsWindow is the span of the account-wide cap on wrong codes.
const CodeAttemptsWindow = 24 * time.Hour

// CodeCapError is an account that entered its daily cap of wrong codes, across codes: no code
// works (not even the right one) until the oldest of them is a day old. It is ErrCodeLocked.
type CodeCapError struct{ RetryAfter time.Duration }

func (e *CodeCapError) Error() string {
	return fmt.Sprintf("too many wrong verification codes today (retry in %v)", e.RetryAfter)
}

// Is makes a capped account a locked code to callers that do not tell them apart.
func (e *CodeCapError) Is(target error) bool { return target == ErrCodeLocked }

// WelcomeBonusCents is the bonus on first verification: 5 SMS at the Starter price.
const WelcomeBonusCents = 5 * 50

// Verified is the outcome of a successful verification.
type Verified struct {
	AccountID uuid.UUID
	// Bonus is the wallet after the welcome bonus, when this verification paid it.
	Bonus *WalletSnapshot
}

// NewLink is a verification link to store and mail.
type NewLink struct {
	TokenHash []byte
	Email     string
	ExpiresAt time.Time
	Mail      Email
}

// AddVerificationLink stores a link for an unverified account and queues its email.
func (s *Store) AddVerificationLink(ctx context.Context, accountID uuid.UUID, l NewLink) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var verified bool
		if err := tx.QueryRow(ctx, `SELECT is_verified FROM accounts WHERE id = $1`, accountID).Scan(&verified); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrNotFound
			}
			return err
		}
		if verified {
			return ErrAlreadyVerified
		}
		return addLink(ctx, tx, accountID, l)
	})
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrAlreadyVerified) {
		err = fmt.Errorf("add verification link: %w", err)
	}
	return err
}

func addLink(ctx context.Context, tx pgx.Tx, accountID uuid.UUID, l NewLink) error {
	if _, err := tx.Exec(ctx, `INSERT INTO verification_tokens (token_hash, account_id, email, expires_at) VALUES ($1, $2, $3, $4)`,
		l.TokenHash, accountID, l.Email, l.ExpiresAt); err != nil {
		return err
	}
	return queueEmail(ctx, tx, l.Mail)
}

// VerifyLink spends a verification link. An unknown or used token is ErrTokenInvalid; an
// expired one ErrTokenExpired. Verifying an already verified account succeeds without a bonus.
func (s *Store) VerifyLink(ctx context.Context, tokenHash []byte, now time.Time) (Verified, error) {
	var v Verified
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			email   string
			expires time.Time
			used    *time.Time
		)
		err := tx.QueryRow(ctx, `SELECT account_id, email, expires_at, used_at FROM verification_tokens
			WHERE token_hash = $1 FOR UPDATE`, tokenHash).Scan(&v.AccountID, &email, &expires, &used)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return ErrTokenInvalid
		case err != nil:
			return err
		case used != nil:
			return ErrTokenInvalid
		case !now.Before(expires):
			return ErrTokenExpired
		}
		if _, err := tx.Exec(ctx, `UPDATE verification_tokens SET used_at = $2 WHERE token_hash = $1`, tokenHash, now); err != nil {
			return err
		}
		v.Bonus, err = verifyAccount(ctx, tx, v.AccountID, email)
		return err
	})
	if err != nil && !errors.Is(err, ErrTokenInvalid) && !errors.Is(err, ErrTokenExpired) {
		err = fmt.Errorf("verify link: %w", err)
	}
	return v, err
}

// verifyAccount marks the account verified when its current email is the one proven, and
// pays the welcome bonus the first time. Concurrent verifications serialise on the account
// row; the ledger's unique index makes a second bonus impossible even so.
func verifyAccount(ctx context.Context, tx pgx.Tx, accountID uuid.UUID, email string) (*WalletSnapshot, error) {
	tag, err := tx.Exec(ctx, `UPDATE accounts SET is_verified = true, updated_at = now()
		WHERE id = $1 AND email = $2 AND NOT is_verified`, accountID, email)
	if err != nil {
		return nil, err
	}
	if tag.RowsAffected() == 0 {
		return nil, nil // already verified, or the link proves an address the account no longer has
	}
	var entry uuid.UUID
	err = tx.QueryRow(ctx, `INSERT INTO wallet_transactions (id, account_id, type, amount_cents, reference, description)
		VALUES ($1, $2, 'topup', $3, 'welcome-bonus', 'Welcome bonus: 5 free SMS')
		ON CONFLICT DO NOTHING RETURNING id`, NewID(), accountID, WelcomeBonusCents).Scan(&entry)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var w WalletSnapshot
	if err := tx.QueryRow(ctx, `UPDATE wallets SET balance_cents = balance_cents + $2, version = version + 1, updated_at = now()
		WHERE account_id = $1 RETURNING `+snapshotColumns, accountID, WelcomeBonusCents).
		Scan(w.fields()...); err != nil {
		return nil, err
	}
	return &w, addNotification(ctx, tx, accountID, NewNotification{Type: "welcome_bonus", Title: "Welcome to Tuma: 5 SMS on us",
		Message: "Your email is verified and KES 2.50 (5 SMS at the Starter rate) is in your wallet. Happy sending!"})
}

// lockUnverified locks an account row for a verification step and returns its email:
// ErrNotFound when there is no such account, ErrAlreadyVerified when there is nothing to do.
func lockUnverified(ctx context.Context, tx pgx.Tx, accountID uuid.UUID) (string, error) {
	var (
		email    string
		verified bool
	)
	err := tx.QueryRow(ctx, `SELECT email, is_verified FROM accounts WHERE id = $1 FOR UPDATE`, accountID).Scan(&email, &verified)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", ErrNotFound
	case err != nil:
		return "", err
	case verified:
		return "", ErrAlreadyVerified
	}
	return email, nil
}

// replaceCode makes c the account's one live code (attempts start again) and queues its mail.
func replaceCode(ctx context.Context, tx pgx.Tx, accountID uuid.UUID, c NewCode) error {
	if _, err := tx.Exec(ctx, `INSERT INTO verification_codes (account_id, code_hash, email, expires_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (account_id) DO UPDATE SET code_hash = EXCLUDED.code_hash, email = EXCLUDED.email,
			expires_at = EXCLUDED.expires_at, attempts = 0, created_at = now()`,
		accountID, c.Hash, c.Email, c.ExpiresAt); err != nil {
		return err
	}
	return queueEmail(ctx, tx, c.Mail)
}

// NewCode is a verification code to store (hashed) and mail.
type NewCode struct {
	Hash      []byte
	Email     string
	ExpiresAt time.Time
	Mail      Email
}

// SetVerificationCode replaces the account's code (resetting its attempts) and queues its
// email; c makes the code for the account's current address.
func (s *Store) SetVerificationCode(ctx context.Context, accountID uuid.UUID, c func(email string) NewCode) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		email, err := lockUnverified(ctx, tx, accountID)
		if err != nil {
			return err
		}
		return replaceCode(ctx, tx, accountID, c(email))
	})
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrAlreadyVerified) {
		err = fmt.Errorf("set verification code: %w", err)
	}
	return err
}

// VerifyCode checks a code against the account's hash in constant time. A wrong code counts
// an attempt (WrongCodeError); after MaxCodeAttempts the code is locked (ErrCodeLocked) even
// for the right code, until a new one is requested. Wrong codes also count against the
// account: once dailyCap of them (0: no cap) fall within CodeAttemptsWindow, every code is
// refused with a CodeCapError, so requesting new codes cannot buy unlimited guesses.
func (s *Store) VerifyCode(ctx context.Context, accountID uuid.UUID, hash []byte, now time.Time, dailyCap int) (Verified, error) {
	v := Verified{AccountID: accountID}
	var wrong *WrongCodeError
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := lockUnverified(ctx, tx, accountID); err != nil {
			return err
		}
		dayLeft := MaxCodeAttempts // a wrong code reports the fewer of the code's and the day's tries left
		if dailyCap > 0 {
			var (
				failures int
				oldest   *time.Time
			)
			if err := tx.QueryRow(ctx, `SELECT count(*), min(failed_at) FROM verification_code_failures
				WHERE account_id = $1 AND failed_at > $2`, accountID, now.Add(-CodeAttemptsWindow)).Scan(&failures, &oldest); err != nil {
				return err
			}
			if failures >= dailyCap {
				return &CodeCapError{RetryAfter: oldest.Add(CodeAttemptsWindow).Sub(now)}
			}
			dayLeft = dailyCap - failures
		}
		var (
			stored   []byte
			email    string
			expires  time.Time
			attempts int
		)
		err := tx.QueryRow(ctx, `SELECT code_hash, email, expires_at, attempts FROM verification_codes WHERE account_id = $1`,
			accountID).Scan(&stored, &email, &expires, &attempts)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return ErrNoCode
		case err != nil:
			return err
		case attempts >= MaxCodeAttempts:
			return ErrCodeLocked
		case !now.Before(expires):
			return ErrCodeExpired
		}
		if subtle.ConstantTimeCompare(stored, hash) != 1 {
			attempts++
			if _, err := tx.Exec(ctx, `UPDATE verification_codes SET attempts = $2 WHERE account_id = $1`, accountID, attempts); err != nil {
				return err
			}
			if dailyCap > 0 {
				if _, err := tx.Exec(ctx, `DELETE FROM verification_code_failures WHERE account_id = $1 AND failed_at <= $2`,
					accountID, now.Add(-CodeAttemptsWindow)); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `INSERT INTO verification_code_failures (account_id, failed_at) VALUES ($1, $2)`,
					accountID, now); err != nil {
					return err
				}
			}
			wrong = &WrongCodeError{Remaining: min(MaxCodeAttempts-attempts, dayLeft-1)}
			return nil // commit the counted attempt
		}
		if _, err := tx.Exec(ctx, `DELETE FROM verification_codes WHERE account_id = $1`, accountID); err != nil {
			return err
		}
		v.Bonus, err = verifyAccount(ctx, tx, accountID, email)
		return err
	})
	if wrong != nil {
		return Verified{}, wrong
	}
	switch {
	case err == nil, errors.Is(err, ErrNotFound), errors.Is(err, ErrAlreadyVerified), errors.Is(err, ErrNoCode),
		errors.Is(err, ErrCodeExpired), errors.Is(err, ErrCodeLocked):
		return v, err
	}
	return Verified{}, fmt.Errorf("verify code: %w", err)
}

// ChangePendingEmail corrects the address of an unverified account, voiding links, codes and
// password resets sent to the old one (whoever holds that address is not the account's
// owner, and a reset would hand them the account), and queues a fresh link and code to the
// new one.
func (s *Store) ChangePendingEmail(ctx context.Context, accountID uuid.UUID, email string, link NewLink, code NewCode) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := lockUnverified(ctx, tx, accountID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE accounts SET email = $2, updated_at = now() WHERE id = $1`, accountID, email); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE verification_tokens SET used_at = now() WHERE account_id = $1 AND used_at IS NULL`, accountID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE password_resets SET used_at = now() WHERE account_id = $1 AND used_at IS NULL`, accountID); err != nil {
			return err
		}
		if err := addLink(ctx, tx, accountID, link); err != nil {
			return err
		}
		return replaceCode(ctx, tx, accountID, code)
	})
	switch {
	case isUniqueViolation(err, "accounts_email_key"):
		return ErrEmailTaken
	case err == nil, errors.Is(err, ErrNotFound), errors.Is(err, ErrAlreadyVerified):
		return err
	}
	return fmt.Errorf("change pending email: %w", err)
}

// AddPasswordReset stores a reset token for the account with this email and queues its mail.
// found is false (and nothing is stored) when no account has the email.
func (s *Store) AddPasswordReset(ctx context.Context, email string, tokenHash []byte, expires time.Time, mail func(name string) Email) (found bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id uuid.UUID
		var name string
		err := tx.QueryRow(ctx, `SELECT id, full_name FROM accounts WHERE email = $1`, email).Scan(&id, &name)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		if _, err := tx.Exec(ctx, `INSERT INTO password_resets (token_hash, account_id, expires_at) VALUES ($1, $2, $3)`,
			tokenHash, id, expires); err != nil {
			return err
		}
		return queueEmail(ctx, tx, mail(name))
	})
	if err != nil {
		return false, fmt.Errorf("add password reset: %w", err)
	}
	return found, nil
}

// ResetPassword spends a reset token (ErrTokenInvalid when unknown, used or older than its
// expiry), sets the password, bumps the token version and ends every session of the account.
// It returns the account and its access to publish to the caches.
func (s *Store) ResetPassword(ctx context.Context, tokenHash []byte, passwordHash string, now time.Time) (uuid.UUID, Access, error) {
	var (
		id  uuid.UUID
		acc Access
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			expires time.Time
			used    *time.Time
		)
		err := tx.QueryRow(ctx, `SELECT account_id, expires_at, used_at FROM password_resets WHERE token_hash = $1 FOR UPDATE`,
			tokenHash).Scan(&id, &expires, &used)
		switch {
		case errors.Is(err, pgx.ErrNoRows), err == nil && (used != nil || !now.Before(expires)):
			return ErrTokenInvalid
		case err != nil:
			return err
		}
		// One reset spends every outstanding reset token of the account.
		if _, err := tx.Exec(ctx, `UPDATE password_resets SET used_at = $2 WHERE account_id = $1 AND used_at IS NULL`, id, now); err != nil {
			return err
		}
		if acc, err = setPassword(ctx, tx, id, passwordHash); err != nil {
			return err
		}
		return revokeAccountTokens(ctx, tx, id)
	})
	if err != nil {
		if !errors.Is(err, ErrTokenInvalid) {
			err = fmt.Errorf("reset password: %w", err)
		}
		return uuid.Nil, Access{}, err
	}
	return id, acc, nil
}
