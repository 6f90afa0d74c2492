package codec

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// Records is a run of member records in wire form, MemberSize bytes each.
// Receivers keep members this way until the last stage that needs values, so
// each member is decoded once, straight into its final place.
type Records []byte

// Len returns the number of whole records.
func (r Records) Len() int { return len(r) / MemberSize }

// ID decodes only the identity of record i.
func (r Records) ID(i int) island.MemberID {
	b := (*[12]byte)(r[i*MemberSize:])
	return island.MemberID{Stable: binary.LittleEndian.Uint64(b[:8]), Generation: binary.LittleEndian.Uint32(b[8:])}
}

// Member decodes record i and reports whether its floats are all finite
// (records that came through a FloatDecoder always are).
func (r Records) Member(i int) (island.Member, bool) {
	st, ok := r.State(i)
	return island.Member{ID: r.ID(i), State: st}, ok
}

// State decodes only the state of record i and reports whether it is all
// finite (records that came through a FloatDecoder always are). It builds the
// state in registers: decoding through a pointer and copying the struct out
// costs Validate a third of its time per member.
func (r Records) State(i int) (island.State, bool) {
	b := (*[MemberSize]byte)(r[i*MemberSize:])
	x, y, a := binary.LittleEndian.Uint64(b[12:]), binary.LittleEndian.Uint64(b[20:]), binary.LittleEndian.Uint64(b[28:])
	vx, vy, av := binary.LittleEndian.Uint64(b[36:]), binary.LittleEndian.Uint64(b[44:]), binary.LittleEndian.Uint64(b[52:])
	return island.State{X: math.Float64frombits(x), Y: math.Float64frombits(y), Angle: math.Float64frombits(a),
			VX: math.Float64frombits(vx), VY: math.Float64frombits(vy), AngVel: math.Float64frombits(av)},
		nonFinite(x)|nonFinite(y)|nonFinite(a)|nonFinite(vx)|nonFinite(vy)|nonFinite(av) == 0
}

// QuantRecords is a run of quantized member records, MemberSize bytes each:
// u64 stable id, u32 generation, then the six quantized values x, y, angle,
// vx, vy and angular velocity as i64, all little-endian — what a frame sum
// hashes of each member. A quantized frame is reassembled in this form.
type QuantRecords []byte

// AppendQuantRecords appends the records of ents' members to b.
func AppendQuantRecords(b []byte, ents []baseline.Entry) []byte {
	n := len(b)
	b = slices.Grow(b, len(ents)*MemberSize)[:n+len(ents)*MemberSize]
	for i := range ents {
		putMemberSum((*[MemberSize]byte)(b[n:]), &ents[i])
		n += MemberSize
	}
	return b
}

// Len returns the number of whole records.
func (r QuantRecords) Len() int { return len(r) / MemberSize }

// ID decodes only the identity of record i.
func (r QuantRecords) ID(i int) island.MemberID { return Records(r).ID(i) }

// Quant decodes the quantized state of record i.
func (r QuantRecords) Quant(i int) quant.State {
	b := (*[MemberSize]byte)(r[i*MemberSize:])
	return quant.State{
		X: int64(binary.LittleEndian.Uint64(b[12:])), Y: int64(binary.LittleEndian.Uint64(b[20:])),
		Angle: int64(binary.LittleEndian.Uint64(b[28:])), VX: int64(binary.LittleEndian.Uint64(b[36:])),
		VY: int64(binary.LittleEndian.Uint64(b[44:])), AngVel: int64(binary.LittleEndian.Uint64(b[52:])),
	}
}

// AppendEntries appends every record to dst as a baseline entry (identity
// and quantized state; Time and Segment left zero).
func (r QuantRecords) AppendEntries(dst []baseline.Entry) []baseline.Entry {
	for i := range r.Len() {
		dst = append(dst, baseline.Entry{ID: r.ID(i), Record: baseline.Record{Q: r.Quant(i)}})
	}
	return dst
}
