package assembler

import (
	"slices"

	"github.com/islandsync/islandsync/codec"
)

// Parity (wire 3). A frame cut into k fragments may be sent with m
// Reed–Solomon parity records, so that any k of its k + m records rebuild
// it. The records of such frames are kept here as entries of this
// assembler: they expire with its TTL, count against MaxPending and are
// charged to MaxPendingBytes beside the frames in reassembly (the older of
// the two goes first when either cap is reached), and what happens to them
// is counted among its outcomes. A data fragment is kept in its standalone
// form (codec.AppendStandalone); a rebuilt one is parsed, checked to be a
// fragment of its frame, and handed back for the caller to restore and
// Push like any fragment.

// parityDoneRing is how many finished frames are remembered, so that their
// late records make no new entry.
const parityDoneRing = 64

// parityKey names a frame that carries parity: its island and broadcast
// sequence, all that a parity record says of its frame.
type parityKey struct{ island, seq uint32 }

// parityFrame is what arrived of one frame that carries parity.
type parityFrame struct {
	key     parityKey
	created int64 // caller time of its first record, µs
	k, m    int   // data fragments, parity records (0 until a parity record says)
	shards  [][]byte
	bufs    [][]byte // storage behind shards, kept when the entry is recycled
	have    int
	bytes   int // accounted: FrameOverhead and the capacity of bufs
	link    links[parityFrame]
}

func (pf *parityFrame) links() *links[parityFrame] { return &pf.link }

// ParityData keeps a data fragment of a frame that may carry parity, seq
// being its datagram's broadcast sequence, and returns the data fragments
// it lets the assembler rebuild (see ParityRecord). Until the first parity
// record arrives nothing is kept: a sender without parity costs nothing.
func (a *Assembler) ParityData(now int64, seq uint32, rec *codec.Record) []codec.Record {
	now = a.clock(now)
	a.expire(now)
	if !a.parityOn || rec.Fragments < 2 || rec.Fragments > codec.MaxParityFragments || rec.Index >= rec.Fragments {
		return nil
	}
	key := parityKey{rec.Island, seq}
	pf := a.parityFrame(now, key, rec.Fragments, 0)
	if pf == nil || pf.shards[rec.Index] != nil {
		return nil
	}
	b, ok := a.shardBuf(pf, rec.Index)
	if !ok {
		return nil
	}
	pf.shards[rec.Index] = codec.AppendStandalone(b, rec)
	pf.bufs[rec.Index] = pf.shards[rec.Index]
	pf.have++
	return a.rebuild(pf)
}

// ParityRecord keeps a parity record (kind codec.KindParity) of the frame
// of broadcast seq. Once as many records of a frame as it has data
// fragments are in and some data fragment is still missing, the missing
// ones are rebuilt, each parsed as the standalone form of a fragment of
// that frame (its index, fragment count and island), and returned in index
// order; a rebuild that fails is counted RejectParity and returns nothing
// of it. Each rebuilt fragment counts Rebuilt. The records returned alias
// the assembler's storage: valid until the next ParityData or ParityRecord.
func (a *Assembler) ParityRecord(now int64, seq uint32, rec *codec.Record) []codec.Record {
	now = a.clock(now)
	a.expire(now)
	a.parityOn = true
	if rec.Kind != codec.KindParity || rec.Index >= rec.Parity {
		return nil
	}
	key := parityKey{rec.Island, seq}
	pf := a.parityFrame(now, key, rec.Fragments, rec.Parity)
	if pf == nil || pf.m != rec.Parity || pf.shards[pf.k+rec.Index] != nil {
		return nil
	}
	i := pf.k + rec.Index
	b, ok := a.shardBuf(pf, i)
	if !ok {
		return nil
	}
	pf.shards[i] = append(b, rec.Shard()...)
	pf.bufs[i] = pf.shards[i]
	pf.have++
	return a.rebuild(pf)
}

// parityFrame returns the frame's entry, making one when needed (evicting
// the oldest entries at the caps). m is 0 when a data fragment asks. It
// returns nil for a frame that finished, or whose records disagree on k.
func (a *Assembler) parityFrame(now int64, key parityKey, k, m int) *parityFrame {
	if pf := a.parity[key]; pf != nil {
		if pf.k != k {
			return nil
		}
		if pf.m == 0 && m > 0 {
			pf.m = m
			for range m {
				pf.shards = append(pf.shards, nil)
			}
			for len(pf.bufs) < k+m {
				pf.bufs = append(pf.bufs, nil)
			}
		}
		return pf
	}
	if slices.Contains(a.parityDone[:min(a.parityDoneAt, parityDoneRing)], key) {
		return nil // finished: its late records are of no use
	}
	for len(a.frames)+len(a.parity) >= a.cfg.MaxPending {
		a.evictOldest(nil, EvictedPendingCap)
	}
	var pf *parityFrame
	if n := len(a.parityFree); n > 0 {
		pf, a.parityFree = a.parityFree[n-1], a.parityFree[:n-1]
	} else {
		pf = &parityFrame{}
	}
	pf.key, pf.created, pf.k, pf.m, pf.have, pf.bytes = key, now, k, m, 0, FrameOverhead
	pf.shards = pf.shards[:0]
	for range k + m {
		pf.shards = append(pf.shards, nil)
	}
	for len(pf.bufs) < k+m {
		pf.bufs = append(pf.bufs, nil)
	}
	// The buffers it kept from its last use are charged again.
	for _, b := range pf.bufs {
		pf.bytes += cap(b)
	}
	a.parity[key] = pf
	a.parityOrder.pushBack(pf)
	a.pendingBytes += pf.bytes
	a.makeRoom(nil, 0)
	if a.parity[key] != pf { // its own buffers did not fit the byte cap
		return nil
	}
	a.peak = max(a.peak, a.pendingBytes)
	return pf
}

// shardBuf returns record i's buffer, emptied; a new one holds a whole
// datagram, so that it never grows. It reports false when the byte cap
// cannot make room for a new buffer even by evicting every other entry.
func (a *Assembler) shardBuf(pf *parityFrame, i int) ([]byte, bool) {
	size := a.cfg.MaxDatagram
	if c := cap(pf.bufs[i]); c < size {
		if !a.makeRoomFor(pf, size-c) {
			return nil, false
		}
		pf.bufs[i] = make([]byte, 0, size)
		pf.bytes += size - c
		a.pendingBytes += size - c
		a.peak = max(a.peak, a.pendingBytes)
	}
	return pf.bufs[i][:0], true
}

// makeRoomFor evicts the oldest entries other than pf until charge more
// bytes fit.
func (a *Assembler) makeRoomFor(pf *parityFrame, charge int) bool {
	for a.pendingBytes+charge > a.cfg.MaxPendingBytes {
		if !a.evictOldestBut(nil, pf, EvictedByteCap) {
			return false
		}
	}
	return true
}

// rebuild rebuilds the missing data fragments of pf once k of its records
// are in, and finishes pf when every data fragment is in or was rebuilt.
func (a *Assembler) rebuild(pf *parityFrame) []codec.Record {
	var missing uint32 // bit i: data fragment i has not arrived (k ≤ 32)
	for i, s := range pf.shards[:pf.k] {
		if s == nil {
			missing |= 1 << i
		}
	}
	if missing == 0 {
		a.finishParity(pf)
		return nil
	}
	if pf.m == 0 || pf.have < pf.k {
		return nil
	}
	for i := range pf.k {
		if missing&(1<<i) != 0 {
			if b, ok := a.shardBuf(pf, i); ok {
				pf.shards[i] = b // empty with room: rebuilt in place
			}
		}
	}
	a.finishParity(pf)
	if err := a.pdec.Reconstruct(pf.shards, pf.k, pf.m); err != nil {
		a.counts[RejectParity]++ // parity shards that disagree in length with each other or with the data
		return nil
	}
	a.rebuilt = a.rebuilt[:0]
	a.sdec.StartStandalone()
	for i := range pf.k {
		if missing&(1<<i) == 0 {
			continue
		}
		rec, err := a.sdec.ParseStandalone(pf.shards[i])
		if err != nil || rec.Index != i || rec.Fragments != pf.k || rec.Island != pf.key.island {
			a.counts[RejectParity]++ // parity that does not belong to the fragments it came with
			continue
		}
		a.counts[Rebuilt]++
		a.rebuilt = append(a.rebuilt, rec)
	}
	return a.rebuilt
}

// finishParity forgets a frame that completed or was rebuilt, and
// remembers its key among the last finished, so that its records still to
// come make no new entry. Its shards stay readable until the entry is
// reused.
func (a *Assembler) finishParity(pf *parityFrame) {
	a.parityDone[a.parityDoneAt%parityDoneRing] = pf.key
	a.parityDoneAt++
	a.releaseParity(pf)
}

// dropParity forgets an expired or evicted frame's records and counts the
// frame as ParityDropped when some of its data arrived: it never completed.
// (Its parity records alone, the data having gone by before parity was on,
// are dropped silently.)
func (a *Assembler) dropParity(pf *parityFrame) {
	a.releaseParity(pf)
	if slices.ContainsFunc(pf.shards[:pf.k], func(s []byte) bool { return s != nil }) {
		a.counts[ParityDropped]++
	}
}

// releaseParity forgets a frame's records without counting anything and
// keeps the entry, with its buffers, for reuse; their bytes are no longer
// charged.
func (a *Assembler) releaseParity(pf *parityFrame) {
	delete(a.parity, pf.key)
	a.parityOrder.remove(pf)
	a.pendingBytes -= pf.bytes
	pf.bytes = 0
	if len(a.parityFree) < parityDoneRing {
		a.parityFree = append(a.parityFree, pf)
	}
}

// evictOldest drops the oldest entry — a frame in reassembly other than
// keep, or a parity frame — counting why. It reports false when there is
// none.
func (a *Assembler) evictOldest(keep *pending, why Outcome) bool {
	return a.evictOldestBut(keep, nil, why)
}

// evictOldestBut is evictOldest sparing one parity frame too.
func (a *Assembler) evictOldestBut(keep *pending, keepParity *parityFrame, why Outcome) bool {
	p := a.order.head
	if p == keep && p != nil {
		p = p.link.next
	}
	pf := a.parityOrder.head
	if pf == keepParity && pf != nil {
		pf = pf.link.next
	}
	switch {
	case p == nil && pf == nil:
		return false
	case pf == nil || (p != nil && p.created <= pf.created):
		a.drop(p, why)
	default:
		a.dropParity(pf)
	}
	return true
}

// resetParity forgets every parity frame and every finished one: a new
// timeline numbers its frames anew.
func (a *Assembler) resetParity() {
	for a.parityOrder.head != nil {
		a.releaseParity(a.parityOrder.head)
	}
	a.parityDone, a.parityDoneAt = [parityDoneRing]parityKey{}, 0
}
