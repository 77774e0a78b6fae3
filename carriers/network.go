// Package carriers holds what Tuma knows about Kenya's mobile networks: which
// network a phone number belongs to (Plan, Normalize) and how a text is
// encoded and split into SMS parts (Segment, Split, EncodeGSM7, EncodeUCS2).
//
// Billing and sending must agree on the number of parts, so both go through
// Segment and Split, which share one splitting routine.
package carriers

// Network is one of the carrier networks Tuma reaches.
type Network uint8

// The networks. NetworkUnknown is the zero value.
const (
	NetworkUnknown Network = iota
	Safaricom
	Airtel
	Telkom
)

// String returns the network's lower-case name: "safaricom", "airtel",
// "telkom", or "unknown" for NetworkUnknown and any other value.
func (n Network) String() string {
	switch n {
	case Safaricom:
		return "safaricom"
	case Airtel:
		return "airtel"
	case Telkom:
		return "telkom"
	default:
		return "unknown"
	}
}

// ParseNetwork returns the network named s. Only the exact lower-case names
// of the three networks are accepted; "unknown" is not a network.
func ParseNetwork(s string) (Network, bool) {
	switch s {
	case "safaricom":
		return Safaricom, true
	case "airtel":
		return Airtel, true
	case "telkom":
		return Telkom, true
	default:
		return NetworkUnknown, false
	}
}

// Networks returns the networks Tuma reaches, in a fresh slice the caller
// may keep or modify: Safaricom, Airtel, Telkom.
func Networks() []Network {
	return []Network{Safaricom, Airtel, Telkom}
}

// NetworkSlots is the length of an array indexed by Network: [NetworkSlots]T holds one T per
// network at its Network value (slot 0, NetworkUnknown, stays unused). Every per-network array
// in the project is indexed this way.
const NetworkSlots = int(Telkom) + 1
