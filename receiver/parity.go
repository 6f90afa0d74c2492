package receiver

import (
	"slices"

	"github.com/islandsync/islandsync/codec"
)

// Parity (wire v2): fragments and parity records of frames that carry
// parity are kept, bounded, until either every data fragment arrived or
// enough records arrived to rebuild the missing ones.
const (
	// maxParityFrames caps the frames whose records are kept for rebuilding.
	maxParityFrames = 64
	// parityTTL is how long a frame's records are kept, µs.
	parityTTL = 250_000
	// maxParityBytes caps the buffers behind kept records, all frames
	// together: a record that would need more is not kept.
	maxParityBytes = 4 << 20
)

type parityKey struct{ island, seq uint32 }

// doneKey is a slot of the ring of finished frames; ok marks it used.
type doneKey struct {
	key parityKey
	ok  bool
}

// parityFrame is what arrived of one frame that carries parity.
type parityFrame struct {
	created int64
	k, m    int      // data fragments, parity records
	shards  [][]byte // k data shards (standalone form), then m parity shards; nil: missing
	bufs    [][]byte // storage behind shards, reused when the entry is recycled
	have    int
	done    bool // rebuilt, or every data fragment arrived
}

// slot returns shard i's reusable buffer, emptied; a new one holds a whole
// datagram, so that it never grows. It reports false when a new buffer
// would take the receiver's parity buffers past maxParityBytes.
func (r *Receiver) slot(pf *parityFrame, i int) ([]byte, bool) {
	size := r.dec.Config().MaxDatagram
	for len(pf.bufs) <= i {
		pf.bufs = append(pf.bufs, nil)
	}
	if c := cap(pf.bufs[i]); c < size {
		if r.parityBytes-c+size > maxParityBytes {
			return nil, false
		}
		r.parityBytes += size - c
		pf.bufs[i] = make([]byte, 0, size)
	}
	return pf.bufs[i][:0], true
}

// set stores b as shard i and keeps its storage for reuse.
func (pf *parityFrame) set(i int, b []byte) {
	pf.shards[i] = b
	pf.bufs[i] = b
}

// V2 parity counters live in V2Stats: Rebuilt (data fragments rebuilt from
// parity) and ParityDropped (frames evicted or expired before completing).

// parityData keeps a data fragment of a frame that may carry parity. Until
// the first parity record arrives nothing is kept: a sender without parity
// costs no copies.
func (r *Receiver) parityData(now int64, h codec.V2Header, rec *codec.V2Record) {
	if !r.parityOn || rec.Fragments < 2 || rec.Fragments > codec.MaxParityFragments {
		return
	}
	key := parityKey{rec.Island, h.Seq}
	pf := r.parityFrame(now, key, rec.Fragments, 0)
	if pf == nil || pf.done || pf.shards[rec.Index] != nil {
		return
	}
	b, ok := r.slot(pf, rec.Index)
	if !ok {
		return
	}
	pf.set(rec.Index, codec.AppendStandalone(b, rec))
	pf.have++
	r.rebuild(now, h, key, pf)
}

// parityRecord keeps a parity record and rebuilds what it can.
func (r *Receiver) parityRecord(now int64, h codec.V2Header, rec *codec.V2Record) {
	r.parityOn = true
	key := parityKey{rec.Island, h.Seq}
	pf := r.parityFrame(now, key, rec.Fragments, rec.Parity)
	if pf == nil || pf.done || pf.m != rec.Parity || pf.shards[pf.k+rec.Index] != nil {
		return
	}
	i := pf.k + rec.Index
	b, ok := r.slot(pf, i)
	if !ok {
		return
	}
	pf.set(i, append(b, rec.Shard()...))
	pf.have++
	r.rebuild(now, h, key, pf)
}

// parityFrame returns the frame's entry, making one (evicting the oldest
// or expired ones) when needed. m is 0 when a data fragment asks.
func (r *Receiver) parityFrame(now int64, key parityKey, k, m int) *parityFrame {
	if pf := r.parity[key]; pf != nil {
		if pf.k != k {
			return nil
		}
		if pf.m == 0 && m > 0 {
			pf.m = m
			for range m {
				pf.shards = append(pf.shards, nil)
			}
		}
		return pf
	}
	for _, d := range r.parityDone {
		if d.ok && d.key == key {
			return nil // finished: its late records are of no use
		}
	}
	for key2, pf := range r.parity {
		if now-pf.created >= parityTTL {
			r.dropParity(key2, pf)
		}
	}
	if len(r.parity) >= maxParityFrames {
		var oldKey parityKey
		var old *parityFrame
		for key2, pf := range r.parity {
			if old == nil || pf.created < old.created {
				oldKey, old = key2, pf
			}
		}
		r.dropParity(oldKey, old)
	}
	var pf *parityFrame
	if n := len(r.parityFree); n > 0 {
		pf, r.parityFree = r.parityFree[n-1], r.parityFree[:n-1]
	} else {
		pf = &parityFrame{}
	}
	pf.created, pf.k, pf.m, pf.have, pf.done = now, k, m, 0, false
	pf.shards = pf.shards[:0]
	for range k + m {
		pf.shards = append(pf.shards, nil)
	}
	r.parity[key] = pf
	return pf
}

// finishParity forgets a frame that completed or was rebuilt, and
// remembers its key among the last few finished, so that its records still
// to come make no new entry. The entry goes back to the free list; its
// shards stay readable until the entry is reused.
func (r *Receiver) finishParity(key parityKey, pf *parityFrame) {
	pf.done = true
	r.parityDone[r.parityDoneAt%len(r.parityDone)] = doneKey{key, true}
	r.parityDoneAt++
	r.releaseParity(key, pf)
}

// dropParity forgets an expired or evicted frame's records, keeps the entry
// for reuse, and counts the frame as dropped when some of its data arrived
// but it never completed.
func (r *Receiver) dropParity(key parityKey, pf *parityFrame) {
	r.releaseParity(key, pf)
	if pf.done || !slices.ContainsFunc(pf.shards[:pf.k], func(s []byte) bool { return s != nil }) {
		return // finished, or none of its data seen here (it went by before parity was on)
	}
	r.stats.V2.ParityDropped++
}

// releaseParity forgets a frame's records without counting anything and
// keeps the entry for reuse.
func (r *Receiver) releaseParity(key parityKey, pf *parityFrame) {
	delete(r.parity, key)
	if len(r.parityFree) < maxParityFrames {
		r.parityFree = append(r.parityFree, pf)
	}
}

// rebuild restores the missing data fragments once k records of the frame
// arrived, and pushes them as if they had arrived.
func (r *Receiver) rebuild(now int64, h codec.V2Header, key parityKey, pf *parityFrame) {
	var missing uint32 // bit i: data fragment i has not arrived (k ≤ 32)
	for i, s := range pf.shards[:pf.k] {
		if s == nil {
			missing |= 1 << i
		}
	}
	if missing == 0 {
		r.finishParity(key, pf)
		return
	}
	if pf.m == 0 || pf.have < pf.k {
		return
	}
	for i := range pf.k {
		if missing&(1<<i) != 0 {
			if b, ok := r.slot(pf, i); ok {
				pf.shards[i] = b // empty with room: rebuilt in place
			}
		}
	}
	r.finishParity(key, pf)
	if err := r.pdec.Reconstruct(pf.shards, pf.k, pf.m); err != nil {
		r.stats.V2.ParityBad++ // parity shards that disagree in length with each other or with the data
		return
	}
	for i := range pf.k {
		if missing&(1<<i) == 0 {
			continue
		}
		rec, err := r.dec2.ParseStandalone(pf.shards[i])
		if err != nil || rec.Index != i || rec.Fragments != pf.k || rec.Island != key.island {
			r.stats.V2.ParityBad++ // parity that does not belong to the fragments it came with
			continue
		}
		r.stats.V2.Rebuilt++
		switch rec.Kind {
		case codec.KindKey:
			r.v2KeyRecord(now, h, &rec)
		case codec.KindDelta:
			r.v2Delta(now, h, &rec)
		}
	}
}
