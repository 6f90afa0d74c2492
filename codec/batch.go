package codec

import (
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
)

// A batch record carries whole frames of many islands in one range-coded
// stream (rangecode.go): for each island, what it is (a prediction, a
// delta or a keyframe) and its values, each symbol in an adaptive context
// that learns from the islands before it in the same record. Every island
// of a broadcast whose frame fits a datagram travels in one; the contexts
// start afresh in every record, so each datagram decodes alone.

// Where an encoder counts the cost of a symbol (ByteBreakdown' categories).
const (
	catFraming = iota
	catIndex
	catPosition
	catAngle
	catVelocity
	numCats
)

var fieldCat = [6]int{catPosition, catPosition, catAngle, catVelocity, catVelocity, catVelocity}

// What a batch island is.
const (
	batchPredicted = 0 // every member moved as its baseline's motion predicts
	batchDelta     = 1 // residuals against a baseline
	batchKey       = 2 // whole values
	batchStart     = 3 // the context before a record's first island
)

// batchModels is every context of one batch record.
type batchModels struct {
	gapZero [2]prob // the island follows the previous one directly; by whether the previous did
	gap     magModel
	coded   [4]prob // not a prediction; by the previous island's kind
	key     [4]prob // a keyframe, when coded; by the previous island's kind
	class   [3]prob // two bits, a binary tree
	flags   [2]prob // Initial, Releasing
	lagSame prob
	lag     magModel
	nSame   prob
	n       magModel
	keySame [5]prob // sender, epoch, topology, config, segment as the previous keyframe's
	keyVal  magModel
	joint   prob       // a delta of several members (or a fragment) is joint-predicted
	changed [3]prob    // a delta member changed: the island's only member; after one that changed; after one that did not
	nz      [6][2]prob // a residual is not zero; by whether the field before it was not
	res     [6]sgnModel
	idMoved prob
	id      sgnModel
	genNew  prob
	gen     magModel
	// a keyframe value is not zero, and the value: the first member's
	// itself, every other member's as its difference from the member
	// before it in the frame
	keyNZ  [2][6]prob
	keyRes [2][6]sgnModel
}

// freshModels is every context at its starting probability, one half.
var freshModels = func() (m batchModels) {
	set := func(ps ...*prob) {
		for _, p := range ps {
			*p = probInit
		}
	}
	for i := range 2 {
		set(&m.gapZero[i], &m.flags[i])
	}
	for i := range 4 {
		set(&m.coded[i], &m.key[i])
	}
	for i := range 3 {
		set(&m.class[i], &m.changed[i])
	}
	for i := range 5 {
		set(&m.keySame[i])
	}
	set(&m.lagSame, &m.nSame, &m.idMoved, &m.genNew, &m.joint)
	for _, mm := range []*magModel{&m.gap, &m.lag, &m.n, &m.keyVal, &m.gen} {
		mm.init()
	}
	m.id.init()
	for k := range 6 {
		set(&m.nz[k][0], &m.nz[k][1], &m.keyNZ[0][k], &m.keyNZ[1][k])
		m.res[k].init()
		m.keyRes[0][k].init()
		m.keyRes[1][k].init()
	}
	return m
}()

// batchState is what both ends of a batch record know between islands.
type batchState struct {
	m batchModels
	batchPos
}

// batchPos is a batch state's scalars: what an encoder saves beside its
// rcMark to take an island back.
type batchPos struct {
	count      int    // islands so far
	last       uint32 // the previous island
	prevGap0   int    // 1 when the previous island followed its predecessor directly
	prevKind   int
	prevLag    uint32
	prevN      int
	prevKey    [5]uint32
	prevStable uint64
	prevGen    uint32
	// within a frame: whether the delta member before changed, and the
	// keyframe member before's values
	deltaPrev int
	keyPrev   [6]int64
	keyHas    bool
}

func (s *batchState) reset() {
	s.m = freshModels
	s.batchPos = batchPos{prevGap0: 1, prevKind: batchStart}
}

// batchIsland is one island as a batch codes it.
type batchIsland struct {
	island uint32
	kind   int
	class  quant.Class
	flags  island.Flags
	lag    uint32 // predicted, delta
	n      int    // delta, key: members
	key    [5]uint32
}

// resMember is one member of a delta: its field mask (bit k: field k's
// residual is not zero) and its residuals, in field order.
type resMember struct {
	mask byte
	d    [6]int64
}

// keyMember is one member of a keyframe: identity and values.
type keyMember struct {
	stable uint64
	gen    uint32
	v      [6]int64
}

// encodeHead codes an island's kind, gap, class, flags, lag and member
// count.
func (s *batchState) encodeHead(e *rcEncoder, it *batchIsland) {
	m := &s.m
	e.cat = catFraming
	if s.count > 0 {
		gap := it.island - s.last - 1
		e.bit(&m.gapZero[s.prevGap0], gap != 0)
		if gap != 0 {
			e.mag(&m.gap, uint64(gap))
		}
	}
	e.bit(&m.coded[s.prevKind], it.kind != batchPredicted)
	if it.kind != batchPredicted {
		e.bit(&m.key[s.prevKind], it.kind == batchKey)
	}
	c := byte(it.class)
	e.bit(&m.class[0], c&2 != 0)
	e.bit(&m.class[1+c>>1], c&1 != 0)
	if it.kind != batchPredicted {
		e.bit(&m.flags[0], it.flags&island.FlagInitial != 0)
		e.bit(&m.flags[1], it.flags&island.FlagReleasing != 0)
	}
	if it.kind != batchKey {
		e.bit(&m.lagSame, it.lag == s.prevLag)
		if it.lag != s.prevLag {
			e.mag(&m.lag, uint64(it.lag))
		}
	}
	if it.kind != batchPredicted {
		e.bit(&m.nSame, it.n == s.prevN)
		if it.n != s.prevN {
			e.mag(&m.n, uint64(it.n))
		}
	}
	if it.kind == batchKey {
		for i, v := range it.key {
			e.bit(&m.keySame[i], v == s.prevKey[i])
			if v != s.prevKey[i] {
				e.mag(&m.keyVal, uint64(v)+1)
			}
		}
	}
	s.after(it)
}

// after moves the state past island it.
func (s *batchState) after(it *batchIsland) {
	s.prevGap0 = 0
	if s.count == 0 || it.island == s.last+1 {
		s.prevGap0 = 1
	}
	s.count++
	s.last = it.island
	s.prevKind = it.kind
	if it.kind != batchKey {
		s.prevLag = it.lag
	}
	if it.kind != batchPredicted {
		s.prevN = it.n
	}
	if it.kind == batchKey {
		s.prevKey = it.key
	}
}

// encodeDelta codes a delta's members: for a delta of several members,
// first whether it is joint-predicted (joint.go).
func (s *batchState) encodeDelta(e *rcEncoder, ms []resMember, joint bool) {
	s.deltaPrev = 1
	if len(ms) > 1 {
		s.encodeJoint(e, joint)
	}
	for i := range ms {
		s.encodeDeltaMember(e, &ms[i], len(ms) > 1)
	}
}

// encodeJoint codes whether a delta (or a delta fragment) is
// joint-predicted.
func (s *batchState) encodeJoint(e *rcEncoder, joint bool) {
	e.cat = catFraming
	e.bit(&s.m.joint, joint)
}

// encodeDeltaMember codes one delta member; multi is false for the only
// member of a one-member frame.
func (s *batchState) encodeDeltaMember(e *rcEncoder, r *resMember, multi bool) {
	m := &s.m
	ctx := 0
	if multi {
		ctx = 2 - s.deltaPrev
	}
	e.cat = catIndex
	e.bit(&m.changed[ctx], r.mask != 0)
	s.deltaPrev = 0
	if r.mask == 0 {
		return
	}
	s.deltaPrev = 1
	c := 0
	for k := range 6 {
		nz := r.mask&(1<<k) != 0
		if k < 5 || r.mask&0x1f != 0 { // a changed member's last field is nonzero if no other is
			e.cat = catIndex
			e.bit(&m.nz[k][c], nz)
		}
		c = 0
		if nz {
			c = 1
			e.cat = fieldCat[k]
			e.signed(&m.res[k], r.d[k])
		}
	}
}

// encodeKey codes a whole keyframe's members: for a keyframe of several
// members, first whether it is joint-predicted, jp then holding each
// member's joint prediction (its parents are all in the record).
func (s *batchState) encodeKey(e *rcEncoder, ms []keyMember, joint bool, jp []jointPred) {
	s.keyHas = false
	if len(ms) > 1 {
		s.encodeJoint(e, joint)
	}
	for i := range ms {
		var p *[4]int64
		if joint && jp[i].ok {
			p = &jp[i].v
		}
		s.encodeKeyMember(e, &ms[i], p)
	}
}

// jointField is, per member field, its place in a joint prediction (x, y,
// vx, vy), or −1 for the angle and angular velocity, which have none.
var jointField = [6]int{0, 1, -1, 2, 3, -1}

// encodeKeyMember codes one keyframe member: its values as such when it
// is the first of its frame (or fragment), else as differences from the
// member before it — but, given its joint prediction jp, its x, y, vx and
// vy as differences from that.
func (s *batchState) encodeKeyMember(e *rcEncoder, k *keyMember, jp *[4]int64) {
	m := &s.m
	e.cat = catIndex
	d := int64(k.stable - s.prevStable)
	e.bit(&m.idMoved, d != 0)
	if d != 0 {
		e.signed(&m.id, d)
	}
	s.prevStable = k.stable
	e.bit(&m.genNew, k.gen != s.prevGen)
	if k.gen != s.prevGen {
		e.mag(&m.gen, uint64(k.gen)+1)
	}
	s.prevGen = k.gen
	j := 0
	if s.keyHas {
		j = 1
	}
	for f, v := range k.v {
		switch jf := jointField[f]; {
		case jp != nil && jf >= 0:
			v -= jp[jf]
		case s.keyHas:
			v -= s.keyPrev[f]
		}
		e.cat = fieldCat[f]
		e.bit(&m.keyNZ[j][f], v != 0)
		if v != 0 {
			e.signed(&m.keyRes[j][f], v)
		}
	}
	s.keyPrev, s.keyHas = k.v, true
}

// decodeHead reads an island's head into it; first is the record's first
// island. It fails, with the field, on a value no encoder writes.
func (s *batchState) decodeHead(d *rcDecoder, it *batchIsland, first uint32, maxMembers int) (string, bool) {
	m := &s.m
	// The bits most islands have — gap, kind, class, flags, lag — are
	// decoded with the range and code in locals (as decodeDeltaMember
	// does), so that they stay in registers; d holds them again before
	// any other read.
	rng, code := d.rng, d.code
	var b bool
	it.island = first
	if s.count > 0 {
		gap := uint64(0)
		if rng, code, b = decideBit(rng, code, &m.gapZero[s.prevGap0]); rng < rcTop {
			rng, code = d.fill(rng, code)
		}
		if b {
			d.rng, d.code = rng, code
			gap = d.mag(&m.gap)
			rng, code = d.rng, d.code
		}
		if uint64(s.last)+1+gap > 1<<32-1 {
			d.rng, d.code = rng, code
			return "island", false
		}
		it.island = s.last + 1 + uint32(gap)
	}
	it.kind = batchPredicted
	if rng, code, b = decideBit(rng, code, &m.coded[s.prevKind]); rng < rcTop {
		rng, code = d.fill(rng, code)
	}
	if b {
		it.kind = batchDelta
		if rng, code, b = decideBit(rng, code, &m.key[s.prevKind]); rng < rcTop {
			rng, code = d.fill(rng, code)
		}
		if b {
			it.kind = batchKey
		}
	}
	var c byte
	if rng, code, b = decideBit(rng, code, &m.class[0]); rng < rcTop {
		rng, code = d.fill(rng, code)
	}
	if b {
		c = 2
	}
	if rng, code, b = decideBit(rng, code, &m.class[1+c>>1]); rng < rcTop {
		rng, code = d.fill(rng, code)
	}
	if b {
		c |= 1
	}
	if quant.Class(c) > quant.Loose {
		d.rng, d.code = rng, code
		return "class", false
	}
	it.class = quant.Class(c)
	it.flags = 0
	if it.kind != batchPredicted {
		if rng, code, b = decideBit(rng, code, &m.flags[0]); rng < rcTop {
			rng, code = d.fill(rng, code)
		}
		if b {
			it.flags |= island.FlagInitial
		}
		if rng, code, b = decideBit(rng, code, &m.flags[1]); rng < rcTop {
			rng, code = d.fill(rng, code)
		}
		if b {
			it.flags |= island.FlagReleasing
		}
	}
	if it.kind == batchKey {
		d.rng, d.code = rng, code
	} else {
		it.lag = s.prevLag
		if rng, code, b = decideBit(rng, code, &m.lagSame); rng < rcTop {
			rng, code = d.fill(rng, code)
		}
		d.rng, d.code = rng, code
		if !b {
			v := d.mag(&m.lag)
			if v > 1<<31 || uint32(v) == s.prevLag {
				return "lag", false
			}
			it.lag = uint32(v)
		} else if s.prevLag == 0 {
			return "lag", false
		}
	}
	if it.kind != batchPredicted {
		it.n = s.prevN
		if !d.bit(&m.nSame) {
			v := d.mag(&m.n)
			if v > uint64(maxMembers) || int(v) == s.prevN {
				return "member count", false
			}
			it.n = int(v)
		} else if s.prevN == 0 {
			return "member count", false
		} else if it.n > maxMembers {
			return "member count", false
		}
	}
	if it.kind == batchKey {
		for i := range it.key {
			it.key[i] = s.prevKey[i]
			if !d.bit(&m.keySame[i]) {
				v := d.mag(&m.keyVal) - 1
				if v > 1<<32-1 || uint32(v) == s.prevKey[i] {
					return "key", false
				}
				it.key[i] = uint32(v)
			}
		}
	}
	s.after(it)
	return "", true
}

// decodeDelta reads n delta members: whether they are joint-predicted
// (only for several members or a fragment, bm not nil), then for each
// changed one its mask then its residuals appended to res, and its bit in
// bm (nil for a one-member frame, whose unchanged member gets a zero mask
// instead).
func (s *batchState) decodeDelta(d *rcDecoder, n int, res []int64, bm []byte) (_ []int64, joint, ok bool) {
	s.deltaPrev = 1
	if bm != nil {
		joint = d.bit(&s.m.joint)
	}
	for i := range n {
		if res, ok = s.decodeDeltaMember(d, i, n > 1 || bm != nil, res, bm); !ok {
			return res, joint, false
		}
	}
	return res, joint, true
}

// decodeDeltaMember reads delta member i (encodeDeltaMember).
func (s *batchState) decodeDeltaMember(d *rcDecoder, i int, multi bool, res []int64, bm []byte) ([]int64, bool) {
	m := &s.m
	ctx := 0
	if multi {
		ctx = 2 - s.deltaPrev
	}
	changed := d.bit(&m.changed[ctx])
	s.deltaPrev = 0
	if !changed {
		if bm == nil {
			res = append(res, 0) // a one-member delta's mask says "unchanged"
		}
		return res, true
	}
	s.deltaPrev = 1
	if bm != nil {
		bm[i>>3] |= 1 << (i & 7)
	}
	at := len(res)
	res = append(res, 0)
	var mask int64
	c := 0
	rng, code := d.rng, d.code // the fields' bits decoded on locals (magAt)
	for k := range 6 {
		nz := true
		if k < 5 || mask != 0 {
			rng, code, nz = decideBit(rng, code, &m.nz[k][c])
			if rng < rcTop {
				rng, code = d.fill(rng, code)
			}
		}
		c = 0
		if nz {
			c = 1
			var neg bool
			var a uint64
			rng, code, neg, a = d.signedAt(rng, code, &m.res[k])
			v, ok := signedValue(neg, a)
			if !ok {
				return res, false
			}
			mask |= 1 << k
			res = append(res, v)
		}
	}
	d.rng, d.code = rng, code
	res[at] = mask
	return res, true
}

// decodeKey reads n key members onto vals: stable id, generation and six
// values each — first, when bit is set (several members, or a fragment),
// whether the keyframe is joint-predicted. A joint-predicted keyframe's
// values are left as coded (Record.ExpandKey resolves them with the
// island's links).
func (s *batchState) decodeKey(d *rcDecoder, n int, vals []int64, bit bool) (_ []int64, joint, ok bool) {
	s.keyHas = false
	if bit {
		joint = d.bit(&s.m.joint)
	}
	for range n {
		if vals, ok = s.decodeKeyMember(d, vals, joint); !ok {
			return vals, joint, false
		}
	}
	return vals, joint, true
}

// decodeKeyMember reads one keyframe member (encodeKeyMember); raw leaves
// its values as coded.
func (s *batchState) decodeKeyMember(d *rcDecoder, vals []int64, raw bool) ([]int64, bool) {
	m := &s.m
	stable := s.prevStable
	if d.bit(&m.idMoved) {
		v, ok := d.signed(&m.id)
		if !ok {
			return vals, false
		}
		stable += uint64(v)
	}
	s.prevStable = stable
	gen := s.prevGen
	if d.bit(&m.genNew) {
		v := d.mag(&m.gen) - 1
		if v > 1<<32-1 || uint32(v) == s.prevGen {
			return vals, false
		}
		gen = uint32(v)
	}
	s.prevGen = gen
	vals = append(vals, int64(stable), int64(gen))
	j := 0
	if s.keyHas {
		j = 1
	}
	for f := range 6 {
		var v int64
		if d.bit(&m.keyNZ[j][f]) {
			var ok bool
			if v, ok = d.signed(&m.keyRes[j][f]); !ok {
				return vals, false
			}
		}
		if s.keyHas && !raw {
			v += s.keyPrev[f]
		}
		s.keyPrev[f] = v
		vals = append(vals, v)
	}
	s.keyHas = true
	return vals, true
}

// The caps of one batch record, which both ends hold to: islands, and
// members of the deltas and keyframes in it.
const (
	MaxBatchIslands = 4096
	MaxBatchMembers = 4096
)
