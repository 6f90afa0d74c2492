package assembler

import (
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// This file holds the free lists and intrusive lists that let the assembler
// run without allocating in steady state. The free lists belong to one
// Assembler; nothing here is global.

// maxFree bounds each free list so a burst does not pin memory forever.
const maxFree = 256

// retainBytes is the largest member buffer a pending frame keeps when it is
// poisoned or recycled (about 270 members). Larger buffers go back to the
// garbage collector, so the memory held beyond the accounted bytes is at most
// (MaxPending + maxFree) × retainBytes.
const retainBytes = 16 << 10

// releaseBuffers empties p's member buffer, dropping it when it is larger
// than retainBytes.
func (p *pending) releaseBuffers() {
	if cap(p.raw) > retainBytes {
		p.raw = nil
		return
	}
	p.raw = p.raw[:0]
}

func (a *Assembler) newPending() *pending {
	if n := len(a.freeFrames); n > 0 {
		p := a.freeFrames[n-1]
		a.freeFrames = a.freeFrames[:n-1]
		raw, frags, covered := p.raw[:0], p.frags[:0], p.covered
		covered.SetBitsetFrom(covered.Words()[:0])
		*p = pending{raw: raw, frags: frags, covered: covered}
		return p
	}
	return &pending{}
}

func (a *Assembler) newIsland(id islandID) *islandState {
	var s *islandState
	if n := len(a.freeIslands); n > 0 {
		s = a.freeIslands[n-1]
		a.freeIslands = a.freeIslands[:n-1]
	} else {
		s = &islandState{cands: make([]*pending, 0, a.cfg.MaxCandidatesPerIsland)}
	}
	s.id = id
	s.cands = s.cands[:0]
	a.islands[id] = s
	return s
}

func (a *Assembler) newStream(id streamID) *streamState {
	var s *streamState
	if n := len(a.freeStreams); n > 0 {
		s = a.freeStreams[n-1]
		a.freeStreams = a.freeStreams[:n-1]
	} else {
		s = &streamState{}
	}
	*s = streamState{id: id}
	a.streams[id] = s
	return s
}

func (a *Assembler) forgetStream(s *streamState) {
	a.streamOrder.remove(s)
	delete(a.streams, s.id)
	a.forgot++
	if len(a.freeStreams) < maxFree {
		a.freeStreams = append(a.freeStreams, s)
	}
}

// links are the intrusive list pointers embedded in a pending frame or a
// stream record.
type links[T any] struct{ prev, next *T }

// linked is implemented by *pending and *streamState.
type linked[T any] interface {
	*T
	links() *links[T]
}

// list is an intrusive doubly linked list: oldest at head, newest at tail.
type list[T any, P linked[T]] struct{ head, tail P }

func (l *list[T, P]) pushBack(p P) {
	lk := p.links()
	lk.prev, lk.next = (*T)(l.tail), nil
	if l.tail != nil {
		l.tail.links().next = (*T)(p)
	} else {
		l.head = p
	}
	l.tail = p
}

func (l *list[T, P]) remove(p P) {
	lk := p.links()
	if lk.prev != nil {
		P(lk.prev).links().next = lk.next
	} else {
		l.head = P(lk.next)
	}
	if lk.next != nil {
		P(lk.next).links().prev = lk.prev
	} else {
		l.tail = P(lk.prev)
	}
	lk.prev, lk.next = nil, nil
}

func (p *pending) links() *links[pending]         { return &p.link }
func (s *streamState) links() *links[streamState] { return &s.link }

// grow extends b to length n, keeping its contents.
func grow(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	t := make([]byte, n)
	copy(t, b)
	return t
}

// dedupSet finds a repeated member identity in O(n) with an open-addressing
// table that is reused across frames. Slots are tagged with a generation
// stamp, so clearing between frames costs nothing.
type dedupSet struct {
	slots []dedupSlot
	stamp uint32
}

type dedupSlot struct {
	id    island.MemberID
	stamp uint32
}

func (d *dedupSet) hasDuplicate(ms codec.Records) bool {
	n := ms.Len()
	if strictlyAscending(ms, n) {
		return false // manifests are usually in id order: no table needed
	}
	size := 16
	for size < 2*n {
		size <<= 1
	}
	if len(d.slots) < size {
		d.slots = make([]dedupSlot, size)
		d.stamp = 0
	}
	d.stamp++
	if d.stamp == 0 { // wrapped: old stamps could alias
		clear(d.slots)
		d.stamp = 1
	}
	mask := uint64(len(d.slots) - 1)
	for i := 0; i < n; i++ {
		id := ms.ID(i)
		h := mix(id.Stable ^ uint64(id.Generation)<<32 ^ uint64(id.Generation))
		for j := h & mask; ; j = (j + 1) & mask {
			s := &d.slots[j]
			if s.stamp != d.stamp {
				*s = dedupSlot{id: id, stamp: d.stamp}
				break
			}
			if s.id == id {
				return true
			}
		}
	}
	return false
}

// mix is the splitmix64 finalizer: it spreads sequential ids across slots.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// strictlyAscending reports whether the n identities in ms are in strictly
// increasing (Stable, Generation) order, which rules out duplicates.
func strictlyAscending(ms codec.Records, n int) bool {
	if n == 0 {
		return true
	}
	prev := ms.ID(0)
	for i := 1; i < n; i++ {
		cur := ms.ID(i)
		if !prev.Less(cur) {
			return false
		}
		prev = cur
	}
	return true
}
