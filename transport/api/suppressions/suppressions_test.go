package suppressions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

func TestSearchRange(t *testing.T) {
	for _, tc := range []struct {
		in       string
		from, to uint32
		ok       bool
	}{
		{"0712", 712000000, 712999999, true},
		{"254712", 712000000, 712999999, true},
		{"+254 712", 712000000, 712999999, true},
		{"712", 712000000, 712999999, true},
		{"(0712) 345-678", 712345678, 712345678, true},
		{"+254712345678", 712345678, 712345678, true},
		{"011", 110000000, 119999999, true},
		{"07", 700000000, 799999999, true},
		{"0", 0, 999999999, true},
		{"+25", 0, 999999999, true},
		{"254", 0, 999999999, true},
		{"+", 0, 999999999, true},
		{"0812", 0, 0, false},        // no mobile number starts with 8
		{"812", 0, 0, false},         //
		{"+0712", 0, 0, false},       // not an international form
		{"2567", 0, 0, false},        // another country
		{"07123456789", 0, 0, false}, // longer than a number
		{"07a", 0, 0, false},
		{"071+2", 0, 0, false},
		{"--", 0, 0, false},
	} {
		from, to, ok := searchRange(tc.in)
		if ok != tc.ok || (ok && (from != tc.from || to != tc.to)) {
			t.Errorf("searchRange(%q) = %d, %d, %v; want %d, %d, %v", tc.in, from, to, ok, tc.from, tc.to, tc.ok)
		}
	}
}

func TestCursorRoundTrip(t *testing.T) {
	s := persistence.Suppression{NSN: 712345678, CreatedAt: time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)}
	c := decodeCursor(encodeCursor(s))
	if !c.CreatedAt.Equal(s.CreatedAt) || c.NSN != s.NSN {
		t.Errorf("cursor of %v decodes as %v", s, c)
	}
}

// fakeStore holds one account's list.
type fakeStore struct {
	Store
	rows map[uint32]persistence.Suppression
}

func (f *fakeStore) Suppress(_ context.Context, _ uuid.UUID, nsn uint32, src persistence.SuppressionSource, reason string) (persistence.Suppression, bool, error) {
	if s, ok := f.rows[nsn]; ok {
		return s, false, nil
	}
	s := persistence.Suppression{NSN: nsn, Source: src, Reason: reason, CreatedAt: time.Now()}
	f.rows[nsn] = s
	return s, true, nil
}

func (f *fakeStore) Unsuppress(_ context.Context, _ uuid.UUID, nsn uint32, _ ...persistence.SuppressionSource) error {
	if _, ok := f.rows[nsn]; !ok {
		return persistence.ErrNotFound
	}
	delete(f.rows, nsn)
	return nil
}

type change struct {
	nsn        uint32
	suppressed bool
}

type fakeTenants struct {
	changes []change
	imports int // SuppressionsImported calls
	err     error
}

func (f *fakeTenants) SuppressionsImported(context.Context, uuid.UUID) error {
	f.imports++
	return f.err
}

func (f *fakeTenants) SuppressionChanged(_ context.Context, _ uuid.UUID, nsn uint32, suppressed bool) error {
	f.changes = append(f.changes, change{nsn, suppressed})
	return f.err
}

func ptr[T any](v T) *T { return &v }

// The tenant hears of every add (a number suppressed already included) and every removal, and
// of nothing else: not of a refused input or a number that was not suppressed.
func TestTenantHearsOfEveryAdd(t *testing.T) {
	store, tenants := &fakeStore{rows: map[uint32]persistence.Suppression{}}, &fakeTenants{}
	h := New(Deps{Store: store, Tenants: tenants})
	ctx, acct := context.Background(), uuid.New()

	if _, added, err := h.Add(ctx, acct, Input{Phone: ptr("0712345678"), Reason: ptr("  asked  ")}); err != nil || !added {
		t.Fatalf("add = %v, %v", added, err)
	}
	if s := store.rows[712345678]; s.Reason != "asked" || s.Source != persistence.SuppressedByAPI {
		t.Errorf("stored %+v; want the trimmed reason, source api", s)
	}
	if _, added, err := h.Add(ctx, acct, Input{Phone: ptr("+254 712 345 678")}); err != nil || added {
		t.Fatalf("add again = %v, %v; want unchanged", added, err)
	}
	for _, in := range []Input{{}, {Phone: ptr("12345")}, {Phone: ptr("0722000000"), Reason: ptr(strings.Repeat("r", 201))}} {
		var p *api.Problem
		if _, _, err := h.Add(ctx, acct, in); !errors.As(err, &p) || p.Status != 422 {
			t.Errorf("add %+v = %v; want a 422", in, err)
		}
	}
	// A Kenyan number on a network Tuma does not reach is still suppressed.
	if _, added, err := h.Add(ctx, acct, Input{Phone: ptr("0744123456")}); err != nil || !added {
		t.Errorf("add of an unsupported network's number = %v, %v", added, err)
	}
	if err := h.Remove(ctx, acct, "254712345678"); err != nil {
		t.Fatalf("remove = %v", err)
	}
	var p *api.Problem
	if err := h.Remove(ctx, acct, "0712345678"); !errors.As(err, &p) || p.Status != 404 {
		t.Errorf("remove again = %v; want a 404", err)
	}
	if err := h.Remove(ctx, acct, "nope"); !errors.As(err, &p) || p.Status != 422 || p.Errors[0].Field != "phone" {
		t.Errorf("remove of no number = %v; want a 422 naming phone", err)
	}
	// The unchanged add is told too: an earlier call may have stored it and failed to tell.
	want := []change{{712345678, true}, {712345678, true}, {744123456, true}, {712345678, false}}
	if len(tenants.changes) != len(want) {
		t.Fatalf("tenant heard %v; want %v", tenants.changes, want)
	}
	for i := range want {
		if tenants.changes[i] != want[i] {
			t.Errorf("tenant heard %v; want %v", tenants.changes, want)
		}
	}

	// A tenant that does not take the change fails the request (a retry may find it stored).
	tenants.err = errors.New("busy")
	if _, _, err := h.Add(ctx, acct, Input{Phone: ptr("0733000000")}); !errors.Is(err, tenants.err) {
		t.Errorf("add with the tenant failing = %v; want its error", err)
	}
}

// manyStore records, with each batch an import writes, how many times the tenant had been
// told of the import by then.
type manyStore struct {
	fakeStore
	tenants *fakeTenants
	toldAt  []int
}

func (m *manyStore) SuppressMany(_ context.Context, _ uuid.UUID, nsns []uint32, _ []string, _ persistence.SuppressionSource) (int64, error) {
	m.toldAt = append(m.toldAt, m.tenants.imports)
	return int64(len(nsns)), nil
}

// An import tells the tenant before its first write (jobs under way look their recipients
// up from then on) and once more after its last (the tenant reads the whole list again).
func TestImportTellsTheTenantBeforeAndAfter(t *testing.T) {
	tenants := &fakeTenants{}
	store := &manyStore{tenants: tenants}
	h := New(Deps{Store: store, Tenants: tenants})
	res, err := h.Import(context.Background(), uuid.New(), strings.NewReader("phone\n0712345678\n0722345678,asked\n"))
	if err != nil || res.Added != 2 {
		t.Fatalf("import = %+v, %v", res, err)
	}
	if len(store.toldAt) != 1 || store.toldAt[0] != 1 || tenants.imports != 2 {
		t.Errorf("tenant told %d times before the writes %v, %d in all; want once before the first, twice in all",
			len(store.toldAt), store.toldAt, tenants.imports)
	}
}
