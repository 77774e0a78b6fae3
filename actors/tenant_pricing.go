package actors

import (
	"fmt"
	"strings"

	"github.com/tuma-sms/tuma/persistence"
)

// Tier is a volume pricing tier. Prices are integer cents per SMS part.
type Tier struct {
	Name       string
	MinSMS     int64
	MaxSMS     int64 // -1 for the top tier
	PriceCents int64
}

// Tiers returns the pricing tiers, cheapest last.
func Tiers() []Tier {
	return []Tier{
		{"Starter", 0, 999, 50},
		{"Basic", 1000, 4999, 48},
		{"Growth", 5000, 19999, 46},
		{"Business", 20000, 49999, 44},
		{"Enterprise", 50000, -1, 42},
	}
}

// TierIndex is the index in Tiers of the tier a lifetime volume has reached.
func TierIndex(lifetime int64) int {
	ts := Tiers()
	for i := len(ts) - 1; i > 0; i-- {
		if lifetime >= ts[i].MinSMS {
			return i
		}
	}
	return 0
}

// TierByName finds a tier by name, case-insensitively.
func TierByName(name string) (int, bool) {
	for i, t := range Tiers() {
		if strings.EqualFold(t.Name, name) {
			return i, true
		}
	}
	return 0, false
}

// Pricing is how an account is priced now.
type Pricing struct {
	Tier       Tier
	Index      int
	Override   bool // an operator pinned the tier
	Internal   bool // internal accounts pay nothing
	PriceCents int64
}

// PricingFor derives an account's price. Volume pricing only ever improves because lifetime
// volume only grows.
func PricingFor(lifetime int64, override *string, internal bool) Pricing {
	i := TierIndex(lifetime)
	p := Pricing{Index: i, Internal: internal}
	if override != nil {
		if j, ok := TierByName(*override); ok {
			p.Index, p.Override = j, true
		}
	}
	p.Tier = Tiers()[p.Index]
	p.PriceCents = p.Tier.PriceCents
	if internal {
		p.PriceCents = 0
	}
	return p
}

// tierUpgradeNotice is the notification raised when a send lifts an account into tier i.
func tierUpgradeNotice(i int) (title, message string) {
	ts := Tiers()
	t := ts[i]
	title = fmt.Sprintf("You've reached the %s tier: KES %s per SMS", t.Name, centsString(t.PriceCents))
	message = fmt.Sprintf("Your lifetime volume passed %s SMS, so you now pay KES %s per SMS on the %s tier.",
		thousands(t.MinSMS), centsString(t.PriceCents), t.Name)
	if i+1 < len(ts) {
		n := ts[i+1]
		message += fmt.Sprintf(" Next: %s at %s SMS for KES %s per SMS.", n.Name, thousands(n.MinSMS), centsString(n.PriceCents))
	} else {
		message += " This is our best rate."
	}
	return title, message
}

func centsString(c int64) string { return fmt.Sprintf("%d.%02d", c/100, c%100) }

func thousands(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// topupNotice is the topup_success notification of a credited top-up.
func topupNotice(amountCents, balanceCents int64) persistence.NewNotification {
	return persistence.NewNotification{Type: "topup_success",
		Title: fmt.Sprintf("Top-up received: KES %s", moneyString(amountCents)),
		Message: fmt.Sprintf("KES %s was added to your wallet. Your balance is now KES %s.",
			moneyString(amountCents), moneyString(balanceCents))}
}

// lowBalanceNotice is the low_balance notification.
func lowBalanceNotice(balanceCents, thresholdCents int64) persistence.NewNotification {
	return persistence.NewNotification{Type: "low_balance",
		Title: fmt.Sprintf("Low balance: KES %s left", moneyString(balanceCents)),
		Message: fmt.Sprintf("Your wallet balance is KES %s, below KES %s. Top up to keep your messages going out.",
			moneyString(balanceCents), moneyString(thresholdCents))}
}

// moneyString renders cents as KES with thousands separators: 150000 → "1,500.00".
func moneyString(c int64) string { return thousands(c/100) + fmt.Sprintf(".%02d", c%100) }
