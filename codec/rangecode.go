package codec

import (
	"math"
	"math/bits"
)

// The batch record's entropy coder: an adaptive binary range coder in
// integer arithmetic only, so that both ends compute the same bits on every
// architecture. A probability is the chance of a 0 in units of 2⁻¹², kept
// in [15, 4081] by its update rule; the range is 32 bits, renormalised a
// byte at a time whenever it falls below 2²⁴. docs/wire-format.md states
// the arithmetic exactly.
const (
	probBits  = 12
	probOne   = 1 << probBits
	probInit  = probOne / 2
	probShift = 4 // adaptation speed: a probability moves 1/16 of the way per bit
	rcTop     = 1 << 24
)

// prob is one adaptive binary context.
type prob uint16

// rcEncoder writes a range-coded stream. The leading byte of the classic
// carry-propagating coder is always zero and is left out; trailing zero
// bytes are left out too (a decoder reads zeros past the end).
type rcEncoder struct {
	low     uint64 // 33 bits: a carry sits in bit 32
	rng     uint32
	cache   byte
	pending int // bytes held back for a carry: cache, then pending−1 × 0xFF
	out     []byte
	first   bool // the next byte shifted out is the leading zero
	// undo, when set, logs every context change so that an island that
	// does not fit can be taken back (rcMark, rollback).
	undo []undoEntry
	log  bool
	// costs adds up each symbol's ideal cost in 1/256 bits by category
	// (cat): where the stream's bytes went, for ByteBreakdown.
	costs [numCats]int64
	cat   int
}

type undoEntry struct {
	p   *prob
	old prob
}

// rcMark is an encoder's state between two symbols.
type rcMark struct {
	low     uint64
	rng     uint32
	cache   byte
	pending int
	n       int
	first   bool
	costs   [numCats]int64
}

func (e *rcEncoder) reset(out []byte) {
	*e = rcEncoder{rng: 0xFFFFFFFF, pending: 1, out: out[:0], first: true, undo: e.undo[:0]}
}

func (e *rcEncoder) mark() rcMark {
	e.undo = e.undo[:0]
	e.log = true
	return rcMark{e.low, e.rng, e.cache, e.pending, len(e.out), e.first, e.costs}
}

// rollback returns to m, restoring every context changed since.
func (e *rcEncoder) rollback(m rcMark) {
	for i := len(e.undo) - 1; i >= 0; i-- {
		*e.undo[i].p = e.undo[i].old
	}
	e.undo = e.undo[:0]
	e.low, e.rng, e.cache, e.pending, e.out, e.first = m.low, m.rng, m.cache, m.pending, e.out[:m.n], m.first
	e.costs = m.costs
}

// bound is at most the length the stream would have if finished now.
func (e *rcEncoder) bound() int { return len(e.out) + e.pending + 4 }

func (e *rcEncoder) bit(p *prob, b bool) {
	if e.log {
		e.undo = append(e.undo, undoEntry{p, *p})
	}
	bound := (e.rng >> probBits) * uint32(*p)
	if !b {
		e.costs[e.cat] += int64(costOf[*p])
		e.rng = bound
		*p += (probOne - *p) >> probShift
	} else {
		e.costs[e.cat] += int64(costOf[probOne-*p])
		e.low += uint64(bound)
		e.rng -= bound
		*p -= *p >> probShift
	}
	for e.rng < rcTop {
		e.rng <<= 8
		e.shift()
	}
}

// direct codes b at probability one half, with no context.
func (e *rcEncoder) direct(b bool) {
	e.costs[e.cat] += 256
	e.rng >>= 1
	if b {
		e.low += uint64(e.rng)
	}
	for e.rng < rcTop {
		e.rng <<= 8
		e.shift()
	}
}

// shift moves the top byte of low out, once any carry into it is known.
func (e *rcEncoder) shift() {
	if uint32(e.low) < 0xFF000000 || e.low >= 1<<32 {
		carry := byte(e.low >> 32)
		c := e.cache
		for ; e.pending > 0; e.pending-- {
			if e.first {
				e.first = false // always zero, and never carried into
			} else {
				e.out = append(e.out, c+carry)
			}
			c = 0xFF
		}
		e.cache = byte(e.low >> 24)
	}
	e.pending++
	e.low = (e.low & 0x00FFFFFF) << 8
}

// finish ends the stream: it picks the value in the final interval with
// the most trailing zero bits, shifts it out, and drops trailing zero
// bytes. It returns the stream.
func (e *rcEncoder) finish() []byte {
	e.log = false
	top := e.low + uint64(e.rng)
	for n := 32; n >= 0; n-- {
		m := uint64(1)<<n - 1
		if v := (e.low + m) &^ m; v < top {
			e.low = v
			break
		}
	}
	for range 5 {
		e.shift()
	}
	for len(e.out) > 0 && e.out[len(e.out)-1] == 0 {
		e.out = e.out[:len(e.out)-1]
	}
	return e.out
}

// rcDecoder reads a range-coded stream. Any bytes decode to some symbols:
// past its end the stream reads as zeros.
type rcDecoder struct {
	b    []byte
	pos  int
	rng  uint32
	code uint32
}

func (d *rcDecoder) reset(b []byte) {
	*d = rcDecoder{b: b, rng: 0xFFFFFFFF}
	for range 4 {
		d.code = d.code<<8 | uint32(d.next())
	}
}

func (d *rcDecoder) next() byte {
	if d.pos < len(d.b) {
		c := d.b[d.pos]
		d.pos++
		return c
	}
	return 0
}

func (d *rcDecoder) bit(p *prob) bool {
	var b bool
	d.rng, d.code, b = decideBit(d.rng, d.code, p)
	if d.rng < rcTop {
		d.rng, d.code = d.fill(d.rng, d.code)
	}
	return b
}

// decideBit decodes one bit in context p from the range and code given,
// without renormalising: bit's arithmetic on a state the caller may hold
// in locals over a run of bits (mag), so that it stays in registers.
func decideBit(rng, code uint32, p *prob) (uint32, uint32, bool) {
	bound := (rng >> probBits) * uint32(*p)
	if code < bound {
		*p += (probOne - *p) >> probShift
		return bound, code, false
	}
	*p -= *p >> probShift
	return rng - bound, code - bound, true
}

// fill renormalises: it reads bytes into code until rng is at least rcTop.
func (d *rcDecoder) fill(rng, code uint32) (uint32, uint32) {
	for rng < rcTop {
		rng <<= 8
		code = code<<8 | uint32(d.next())
	}
	return rng, code
}

func (d *rcDecoder) direct() bool {
	var b bool
	d.rng, d.code, b = decideDirect(d.rng, d.code)
	if d.rng < rcTop {
		d.rng, d.code = d.fill(d.rng, d.code)
	}
	return b
}

// decideDirect decodes one bit of probability one half from the range and
// code given, without renormalising (decideBit).
func decideDirect(rng, code uint32) (uint32, uint32, bool) {
	rng >>= 1
	if code >= rng {
		return rng, code - rng, true
	}
	return rng, code, false
}

// A magnitude (an integer ≥ 1) is coded Elias-gamma style: its bit length
// less one, k, in unary (k ones, then a zero unless k is 63), each unary
// position with its own context up to magBuckets; then its k bits below
// the leading one, most significant first, the first magMant of them in
// contexts of their own per k (k < magBuckets), the rest direct.
const (
	magBuckets = 20
	magMant    = 2
)

// magModel is the contexts of one kind of magnitude.
type magModel struct {
	bucket [magBuckets]prob
	mant   [magBuckets][magMant]prob
}

func (m *magModel) init() {
	for i := range m.bucket {
		m.bucket[i] = probInit
	}
	for i := range m.mant {
		for j := range m.mant[i] {
			m.mant[i][j] = probInit
		}
	}
}

func (e *rcEncoder) mag(m *magModel, a uint64) {
	k := bits.Len64(a) - 1
	for i := range k {
		e.bit(&m.bucket[min(i, magBuckets-1)], true)
	}
	if k < 63 {
		e.bit(&m.bucket[min(k, magBuckets-1)], false)
	}
	for j := k - 1; j >= 0; j-- {
		b := a>>uint(j)&1 != 0
		if i := k - 1 - j; i < magMant && k < magBuckets {
			e.bit(&m.mant[k][i], b)
		} else {
			e.direct(b)
		}
	}
}

func (d *rcDecoder) mag(m *magModel) uint64 {
	var a uint64
	d.rng, d.code, a = d.magAt(d.rng, d.code, m)
	return a
}

// magAt is mag on the range and code given, held by the caller in locals
// (bit and direct inline): it returns them after the magnitude, and the
// magnitude.
func (d *rcDecoder) magAt(rng, code uint32, m *magModel) (uint32, uint32, uint64) {
	k := 0
	for k < 63 {
		var b bool
		rng, code, b = decideBit(rng, code, &m.bucket[min(k, magBuckets-1)])
		if rng < rcTop {
			rng, code = d.fill(rng, code)
		}
		if !b {
			break
		}
		k++
	}
	a := uint64(1)
	for j := k - 1; j >= 0; j-- {
		var b bool
		if i := k - 1 - j; i < magMant && k < magBuckets {
			rng, code, b = decideBit(rng, code, &m.mant[k][i])
		} else {
			rng, code, b = decideDirect(rng, code)
		}
		if rng < rcTop {
			rng, code = d.fill(rng, code)
		}
		a <<= 1
		if b {
			a |= 1
		}
	}
	return rng, code, a
}

// sgnModel is the contexts of a signed value: zero or not, its sign, its
// magnitude.
type sgnModel struct {
	sign prob
	mag  magModel
}

func (m *sgnModel) init() {
	m.sign = probInit
	m.mag.init()
}

// signed codes a nonzero v: its sign (1 negative), then |v|.
func (e *rcEncoder) signed(m *sgnModel, v int64) {
	e.bit(&m.sign, v < 0)
	a := uint64(v)
	if v < 0 {
		a = -a
	}
	e.mag(&m.mag, a)
}

// signed reads a nonzero value; ok is false for a magnitude no int64 has
// with that sign.
func (d *rcDecoder) signed(m *sgnModel) (v int64, ok bool) {
	var a uint64
	var neg bool
	d.rng, d.code, neg, a = d.signedAt(d.rng, d.code, m)
	return signedValue(neg, a)
}

// signedValue is the value of sign neg and magnitude a; ok is false for a
// magnitude no int64 has with that sign.
func signedValue(neg bool, a uint64) (int64, bool) {
	if neg {
		return -int64(a), a <= 1<<63
	}
	return int64(a), a < 1<<63
}

// costOf[p] is −log₂(p / 2¹²) in 1/256 bits: what coding a symbol of
// probability p costs. Only the encoder's accounting uses it.
var costOf = func() (t [probOne + 1]uint16) {
	for p := 1; p <= probOne; p++ {
		t[p] = uint16(math.Round(-256 * math.Log2(float64(p)/probOne)))
	}
	t[0] = t[1]
	return t
}()

// signedAt reads a nonzero value's sign and magnitude on the range and
// code given (magAt).
func (d *rcDecoder) signedAt(rng, code uint32, m *sgnModel) (uint32, uint32, bool, uint64) {
	rng, code, neg := decideBit(rng, code, &m.sign)
	if rng < rcTop {
		rng, code = d.fill(rng, code)
	}
	rng, code, a := d.magAt(rng, code, &m.mag)
	return rng, code, neg, a
}
