package carriers

import (
	"slices"
	"testing"
)

func TestNetworkString(t *testing.T) {
	tests := []struct {
		n    Network
		want string
	}{
		{NetworkUnknown, "unknown"},
		{Safaricom, "safaricom"},
		{Airtel, "airtel"},
		{Telkom, "telkom"},
		{Network(42), "unknown"},
	}
	for _, tt := range tests {
		if got := tt.n.String(); got != tt.want {
			t.Errorf("Network(%d).String() = %q; want %q", tt.n, got, tt.want)
		}
	}
}

func TestParseNetwork(t *testing.T) {
	tests := []struct {
		s    string
		want Network
		ok   bool
	}{
		{"safaricom", Safaricom, true},
		{"airtel", Airtel, true},
		{"telkom", Telkom, true},
		{"unknown", NetworkUnknown, false},
		{"other", NetworkUnknown, false},
		{"Safaricom", NetworkUnknown, false},
		{" airtel", NetworkUnknown, false},
		{"", NetworkUnknown, false},
	}
	for _, tt := range tests {
		got, ok := ParseNetwork(tt.s)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseNetwork(%q) = %v, %v; want %v, %v", tt.s, got, ok, tt.want, tt.ok)
		}
	}
	for _, n := range Networks() {
		if got, ok := ParseNetwork(n.String()); got != n || !ok {
			t.Errorf("ParseNetwork(%q) = %v, %v; want %v, true", n.String(), got, ok, n)
		}
	}
}

func TestNetworks(t *testing.T) {
	want := []Network{Safaricom, Airtel, Telkom}
	got := Networks()
	if !slices.Equal(got, want) {
		t.Fatalf("Networks() = %v; want %v", got, want)
	}
	got[0] = Telkom
	if again := Networks(); !slices.Equal(again, want) {
		t.Errorf("Networks() after modifying an earlier result = %v; want %v", again, want)
	}
}
