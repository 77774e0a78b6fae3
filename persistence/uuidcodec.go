package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// registerUUID teaches a connection's type map github.com/google/uuid.UUID as 16 bytes.
// Without it pgx treats uuid.UUID as a driver.Valuer and sql.Scanner: every id becomes a
// string and is parsed back, which cost over a third of the engine's CPU in the dispatch
// benchmark.
func registerUUID(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{tryWrapUUIDEncode}, m.TryWrapEncodePlanFuncs...)
	m.TryWrapScanPlanFuncs = append([]pgtype.TryWrapScanPlanFunc{tryWrapUUIDScan}, m.TryWrapScanPlanFuncs...)
	// pgx asks a codec to plan a scan before it tries the wrappers, and settles for
	// uuid.UUID's sql.Scanner (a string, parsed back) when the codec declines: so the uuid
	// codec itself must know uuid.UUID.
	m.RegisterType(&pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}})
	// Arrays of ids are most of what the batch statements send: a million-message dispatch
	// encodes tens of millions of them, each through the element codec's plan (5% of the
	// node's CPU). []uuid.UUID is written whole instead.
	elem, _ := m.TypeForOID(pgtype.UUIDOID)
	m.RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID, Codec: &uuidArrayCodec{pgtype.ArrayCodec{ElementType: elem}}})
}

// uuidArrayCodec is pgx's uuid[] codec that writes a []uuid.UUID in binary in one go.
type uuidArrayCodec struct{ pgtype.ArrayCodec }

func (c *uuidArrayCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.([]uuid.UUID); ok && format == pgtype.BinaryFormatCode {
		return encodeUUIDArray{}
	}
	return c.ArrayCodec.PlanEncode(m, oid, format, value)
}

type encodeUUIDArray struct{}

// Encode writes PostgreSQL's binary array: dimensions, a no-NULLs flag, the element type,
// the length and lower bound, then each element's length and bytes. A nil slice is NULL.
func (encodeUUIDArray) Encode(value any, buf []byte) ([]byte, error) {
	ids := value.([]uuid.UUID)
	if ids == nil {
		return nil, nil
	}
	buf = slices.Grow(buf, 20+20*len(ids)) // one growth, not a doubling per few hundred ids
	buf = append(buf, 0, 0, 0, 1, 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint32(buf, pgtype.UUIDOID)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(ids)))
	buf = append(buf, 0, 0, 0, 1)
	for i := range ids {
		buf = append(buf, 0, 0, 0, 16)
		buf = append(buf, ids[i][:]...)
	}
	return buf, nil
}

// uuidCodec is pgx's UUIDCodec that also scans binary uuids straight into uuid.UUID.
type uuidCodec struct{ pgtype.UUIDCodec }

func (c uuidCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*uuid.UUID); ok && format == pgtype.BinaryFormatCode {
		return scanBinaryUUID{}
	}
	return c.UUIDCodec.PlanScan(m, oid, format, target)
}

type scanBinaryUUID struct{}

func (scanBinaryUUID) Scan(src []byte, dst any) error {
	if src == nil {
		return errors.New("cannot scan NULL into uuid.UUID")
	}
	if len(src) != 16 {
		return fmt.Errorf("invalid length for uuid: %d", len(src))
	}
	copy(dst.(*uuid.UUID)[:], src)
	return nil
}

// pgUUID is uuid.UUID seen through pgtype's UUID interfaces.
type pgUUID uuid.UUID

func (u pgUUID) UUIDValue() (pgtype.UUID, error) { return pgtype.UUID{Bytes: u, Valid: true}, nil }

func (u *pgUUID) ScanUUID(v pgtype.UUID) error {
	if !v.Valid {
		return errors.New("cannot scan NULL into uuid.UUID")
	}
	*u = v.Bytes
	return nil
}

func tryWrapUUIDEncode(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	if v, ok := value.(uuid.UUID); ok {
		return &uuidEncodePlan{}, pgUUID(v), true
	}
	return nil, nil, false
}

type uuidEncodePlan struct{ next pgtype.EncodePlan }

func (p *uuidEncodePlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *uuidEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode(pgUUID(value.(uuid.UUID)), buf)
}

func tryWrapUUIDScan(target any) (pgtype.WrappedScanPlanNextSetter, any, bool) {
	if t, ok := target.(*uuid.UUID); ok {
		return &uuidScanPlan{}, (*pgUUID)(t), true
	}
	return nil, nil, false
}

type uuidScanPlan struct{ next pgtype.ScanPlan }

func (p *uuidScanPlan) SetNext(next pgtype.ScanPlan) { p.next = next }

func (p *uuidScanPlan) Scan(src []byte, dst any) error {
	return p.next.Scan(src, (*pgUUID)(dst.(*uuid.UUID)))
}
