package codec

import (
	"encoding/binary"
	"math/bits"

	"github.com/cespare/xxhash/v2"

	"github.com/islandsync/islandsync/baseline"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// Wire format version 3: quantized island frames, keyframes or deltas
// against a baseline the observer holds, in datagrams numbered per
// observer so that the observer confirms datagrams, not islands. See
// docs/wire-format.md. (Version 2, whose records named per-island baseline
// windows, is retired: its datagrams are refused as ErrVersion.)
const (
	// VersionV3 is the version byte of a quantized datagram.
	VersionV3 = 3
	// HeaderSize is magic (4), version (1), packet number (4), broadcast
	// sequence (4), authority time (8), sum (4) and check (4).
	HeaderSize = 29
	// sumAt and checkAt are the offsets of the sum and the check fields.
	sumAt   = 21
	checkAt = 25
)

// RecordKind is the kind of a wire-3 island record.
type RecordKind uint8

const (
	// KindKey: a whole frame, every member's quantized state.
	KindKey RecordKind = 0
	// KindDelta: a frame coded against a baseline frame of the same stream:
	// a bitmap of changed members and, per changed member, the residuals of
	// its changed fields against the baseline's motion.
	KindDelta RecordKind = 1
	// KindRun: consecutive islands whose every member moved exactly as the
	// baseline's motion predicts (a body at rest stays put): no member data.
	KindRun RecordKind = 2
	// KindBatch: the whole frames of many islands in one range-coded
	// stream. Decode hands its islands back as key, delta and run records.
	KindBatch RecordKind = 3
)

// Head byte bits of a wire-3 record.
const (
	headKind     = 0x03
	headClass    = 0x0c
	headInitial  = 0x10
	headRelease  = 0x20
	headFragment = 0x40
	// headSameRef: a delta fragment with the lag of the previous delta
	// fragment in the datagram; the field is left out.
	headSameRef = 0x80
)

// Frame is one island frame in quantized form, as a wire-3 encoder takes it.
type Frame struct {
	Sender  island.SenderID
	Key     island.Key // Seq must equal the datagram's broadcast sequence
	Segment uint32
	Flags   island.Flags
	Class   quant.Class
	// Members: the frame's quantized members in manifest order (ascending
	// identity); Record.Time and Record.Segment are ignored (the datagram's
	// time and Segment apply).
	Members []baseline.Entry
	// Links, when set, are the island's joint-prediction links (NewLinks
	// of its Physics for the frame's topology and config): a keyframe or
	// delta of several members may then be joint-predicted, and its
	// receiver needs the same links to restore it. Nil: never.
	Links *Links
	// Sum, when Digested, is the frame's integer digest (FrameSum) at the
	// encoder's time (see Encoder.FrameDigest): a frame sent to many
	// observers is hashed once. When not Digested the encoder computes it.
	// A frame cut into fragments carries it as its digest.
	Sum      uint64
	Digested bool
}

// Ref is what a delta or run record refers to: the observer's baseline
// frame of the same island stream (Base.ID is its sequence, Base.Frame its
// sender, key, time, segment and class, which the delta inherits).
type Ref struct {
	Base *baseline.Table
}

func appendU(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// uvarintLen is the canonical length of v as a uvarint.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// datagramCheck is the datagram check: the low 32 bits of xxhash64 over the
// datagram's first 25 bytes and everything after the check field. It
// catches corruption anywhere — runs included, which carry no digest.
func datagramCheck(dg []byte) uint32 { return checkAround(dg, checkAt) }

// checkAround is the low 32 bits of xxhash64 (seed 0) over dg less the
// 4-byte check field at offset at: the bytes before it, then those after.
func checkAround(dg []byte, at int) uint32 {
	var d xxhash.Digest
	d.Reset()
	_, _ = d.Write(dg[:at])
	_, _ = d.Write(dg[at+4:])
	return uint32(d.Sum64())
}

// FrameSum is a whole frame's integer digest as its observer restores it:
// xxhash64 (seed 0) over u32 island, u32 sender, u32 epoch, u32 topology,
// u32 config, u32 seq, i64 time, u32 segment, u8 flags, u8 class, u32
// member count, then per member u64 stable id, u32 generation and the six
// quantized values as i64 — all little-endian (the member's QuantRecords
// form). A datagram's sum hashes the sums of the whole frames it carries,
// so that a receiver that restored them from other baselines than the
// sender's, or from other bytes, finds out before it commits anything; a
// frame cut into fragments carries its sum as its digest.
func FrameSum(sender island.SenderID, key island.Key, t island.Time, segment uint32, flags island.Flags, class quant.Class, members []baseline.Entry) uint64 {
	// A one-body frame (most islands) is hashed from one buffer on the
	// stack, written at fixed offsets; larger ones stream member by member.
	// Both hash the same bytes.
	if len(members) == 1 {
		var buf [sumHeadSize + MemberSize]byte
		putSumHead((*[sumHeadSize]byte)(buf[:]), sender, key, t, segment, flags, class, 1)
		putMemberSum((*[MemberSize]byte)(buf[sumHeadSize:]), &members[0])
		return xxhash.Sum64(buf[:])
	}
	var buf [sumHeadSize]byte
	putSumHead(&buf, sender, key, t, segment, flags, class, len(members))
	var d xxhash.Digest
	d.Reset()
	_, _ = d.Write(buf[:])
	var m [MemberSize]byte
	for i := range members {
		putMemberSum(&m, &members[i])
		_, _ = d.Write(m[:])
	}
	return d.Sum64()
}

// sumHeadSize is the frame-level part of a frame sum, in bytes.
const sumHeadSize = 42

// putSumHead writes the frame-level fields a frame sum hashes before the
// members.
func putSumHead(w *[sumHeadSize]byte, sender island.SenderID, key island.Key, t island.Time, segment uint32, flags island.Flags, class quant.Class, n int) {
	binary.LittleEndian.PutUint32(w[0:], key.Island)
	binary.LittleEndian.PutUint32(w[4:], uint32(sender))
	binary.LittleEndian.PutUint32(w[8:], key.Epoch)
	binary.LittleEndian.PutUint32(w[12:], key.Topology)
	binary.LittleEndian.PutUint32(w[16:], key.Config)
	binary.LittleEndian.PutUint32(w[20:], key.Seq)
	binary.LittleEndian.PutUint64(w[24:], uint64(t))
	binary.LittleEndian.PutUint32(w[32:], segment)
	w[36], w[37] = byte(flags), byte(class)
	binary.LittleEndian.PutUint32(w[38:], uint32(n))
}

// QuantSum is FrameSum over a frame held as quantized records: h's
// frame-level fields (sender, key, time, segment, flags, class and total
// members) and the records members, in frame order. For members =
// AppendQuantRecords(nil, ents) it equals FrameSum of ents. It does not
// allocate.
func QuantSum(h *FragmentHeader, members QuantRecords) uint64 {
	var head [sumHeadSize]byte
	putSumHead(&head, h.Sender, h.Key, h.Time, h.Segment, h.Flags, h.Class, int(h.TotalMembers))
	var d xxhash.Digest
	d.Reset()
	_, _ = d.Write(head[:])
	_, _ = d.Write(members)
	return d.Sum64()
}

// DatagramSum accumulates a datagram's sum (the header's sum field): the
// frame sums of its whole frames, in record order. Both ends use it — the
// encoder writing the field, a receiver checking what it restored. The
// zero value is ready; Reset starts over. The sums are gathered and hashed
// at once by Sum32; the storage is kept from one datagram to the next.
type DatagramSum struct {
	b []byte // the frame sums added, 8 bytes each
}

// Reset starts a new datagram's sum.
func (s *DatagramSum) Reset() { s.b = s.b[:0] }

// Add adds one whole frame's sum (FrameSum).
func (s *DatagramSum) Add(frameSum uint64) {
	s.b = binary.LittleEndian.AppendUint64(s.b, frameSum)
}

// Sum32 returns the sum field: the low 32 bits of xxhash64 over the frame
// sums added, each 8 bytes little-endian (over nothing when none was).
func (s *DatagramSum) Sum32() uint32 { return uint32(xxhash.Sum64(s.b)) }

// putMemberSum writes m's QuantRecords form to w.
func putMemberSum(w *[MemberSize]byte, m *baseline.Entry) {
	binary.LittleEndian.PutUint64(w[0:], m.ID.Stable)
	binary.LittleEndian.PutUint32(w[8:], m.ID.Generation)
	binary.LittleEndian.PutUint64(w[12:], uint64(m.Q.X))
	binary.LittleEndian.PutUint64(w[20:], uint64(m.Q.Y))
	binary.LittleEndian.PutUint64(w[28:], uint64(m.Q.Angle))
	binary.LittleEndian.PutUint64(w[36:], uint64(m.Q.VX))
	binary.LittleEndian.PutUint64(w[44:], uint64(m.Q.VY))
	binary.LittleEndian.PutUint64(w[52:], uint64(m.Q.AngVel))
}
