package codec

import (
	"encoding/binary"

	"github.com/islandsync/islandsync/island"
)

// ViewStamp says what an observer saw when the player acted: the playback
// time and generation of the view, how old it was, and for each island the
// interaction involves, the ownership epoch and continuity segment of the
// poses shown and whether they were valid at R. A game attaches it to an
// interaction (a shot, a grab) on a channel of its own; the authority checks
// it against its own history (package stamp) before it acts on what the
// observer claims to have seen.
type ViewStamp struct {
	Timeline   uint64      // the authority timeline of the view (the Welcome's)
	R          island.Time // playback time, authority µs
	Generation uint32      // playback generation: bumped at every re-anchor of the observer's clock
	Age        int64       // estimated server time − R when the view was rendered, µs (≥ 0)
	Islands    []IslandStamp
}

// IslandStamp is one island of a ViewStamp, ascending by Island.
type IslandStamp struct {
	Island  uint32
	Epoch   uint32 // ownership epoch of the poses shown (0 when missing)
	Segment uint32 // continuity segment of the poses shown
	Valid   bool   // the poses were valid at R: not stale, not missing
}

const (
	// ViewStampHeadSize is a stamp's size without islands: timeline (8), R
	// (8), generation (4), age (8) and the island count (2).
	ViewStampHeadSize = 30
	// IslandStampSize is one island's: island, epoch, segment (4 each) and
	// flags (1, bit 0 valid).
	IslandStampSize = 13
	// MaxStampIslands caps the islands of one stamp.
	MaxStampIslands = 4096
)

// Size returns the stamp's encoded size.
func (s *ViewStamp) Size() int { return ViewStampHeadSize + IslandStampSize*len(s.Islands) }

// Append appends the stamp's wire form to b: u64 timeline, i64 R, u32
// generation, i64 age, u16 island count, then per island u32 island, u32
// epoch, u32 segment and u8 flags (bit 0: valid), all little-endian.
func (s *ViewStamp) Append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, s.Timeline)
	b = binary.LittleEndian.AppendUint64(b, uint64(s.R))
	b = binary.LittleEndian.AppendUint32(b, s.Generation)
	b = binary.LittleEndian.AppendUint64(b, uint64(s.Age))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(s.Islands)))
	for _, is := range s.Islands {
		b = binary.LittleEndian.AppendUint32(b, is.Island)
		b = binary.LittleEndian.AppendUint32(b, is.Epoch)
		b = binary.LittleEndian.AppendUint32(b, is.Segment)
		var fl byte
		if is.Valid {
			fl = 1
		}
		b = append(b, fl)
	}
	return b
}

// ParseViewStamp reads one stamp from the start of b into dst, reusing
// dst.Islands' storage, and returns the bytes it took. It refuses
// (ErrTruncated, ErrLimit, ErrMalformed) a stamp cut short, one of more than
// MaxStampIslands islands, a negative age, islands not strictly ascending
// and unknown flag bits.
func ParseViewStamp(b []byte, dst *ViewStamp) (int, error) {
	if len(b) < ViewStampHeadSize {
		return 0, fail(ErrTruncated, len(b), "view stamp")
	}
	s := ViewStamp{Timeline: binary.LittleEndian.Uint64(b), R: island.Time(binary.LittleEndian.Uint64(b[8:])),
		Generation: binary.LittleEndian.Uint32(b[16:]), Age: int64(binary.LittleEndian.Uint64(b[20:])), Islands: dst.Islands[:0]}
	n := int(binary.LittleEndian.Uint16(b[28:]))
	switch {
	case s.Age < 0:
		return 0, fail(ErrMalformed, 20, "view stamp age")
	case n > MaxStampIslands:
		return 0, fail(ErrLimit, 28, "view stamp islands")
	case len(b) < ViewStampHeadSize+n*IslandStampSize:
		return 0, fail(ErrTruncated, len(b), "view stamp islands")
	}
	for i := range n {
		o := ViewStampHeadSize + i*IslandStampSize
		is := IslandStamp{Island: binary.LittleEndian.Uint32(b[o:]), Epoch: binary.LittleEndian.Uint32(b[o+4:]),
			Segment: binary.LittleEndian.Uint32(b[o+8:]), Valid: b[o+12]&1 != 0}
		switch {
		case b[o+12]&^1 != 0:
			return 0, fail(ErrMalformed, o+12, "view stamp flags")
		case i > 0 && is.Island <= s.Islands[i-1].Island:
			return 0, fail(ErrMalformed, o, "view stamp islands not ascending")
		}
		s.Islands = append(s.Islands, is)
	}
	*dst = s
	return ViewStampHeadSize + n*IslandStampSize, nil
}
