package receiver

import (
	"testing"

	"github.com/islandsync/islandsync/quant"
)

// packerCount is a reference to measure the default wire against on the
// same scene: what a hand-tuned bit-packer in the style of Glenn Fiedler's
// "Snapshot Compression" articles, cut down to 2D, spends on each snapshot
// at the same precision and against the same baseline. It is only counted,
// never coded. Per snapshot it sends which bodies changed — the cheaper of
// one bit per body and the changed bodies' index differences in tiers —
// and for each changed body its deltas against the baseline in bounded
// tiers:
//
//   - position: one bit "both axes small", then 5 bits an axis for
//     deltas in [−16, 15]; else one bit "medium", then 12 bits an axis for
//     deltas in [−2048, 2047]; else 20 bits an axis, absolute;
//   - angle: one bit "small", then 5 bits; else 12 bits, absolute (one
//     turn at 2⁻¹² turn);
//   - with velocities, linear velocity as position (small 5 bits an axis,
//     medium 12, else 16 absolute) and angular velocity as angle (small 5
//     bits, else 16 absolute).
//
// A body without a baseline is sent absolute. The variant without
// velocities is the one the articles measure; its bodies change when their
// position or angle does.
type packerCount struct {
	bodies      int64
	bits, vbits int64 // without and with velocities
	idx, vidx   []int // this snapshot's changed bodies
	n           int   // bodies this snapshot
	bodyBits    int64
	bodyVelBits int64
}

// add counts body i of the snapshot (in frame order) against its baseline
// b, when it has one.
func (c *packerCount) add(b *quant.State, s quant.State) {
	i := c.n
	c.n++
	if b == nil {
		c.idx = append(c.idx, i)
		c.vidx = append(c.vidx, i)
		c.bodyBits += 2 + 2*20 + 1 + 12
		c.bodyVelBits += 2 + 2*20 + 1 + 12 + 2 + 2*16 + 1 + 16
		return
	}
	d := quant.State{X: s.X - b.X, Y: s.Y - b.Y, Angle: s.Angle - b.Angle, VX: s.VX - b.VX, VY: s.VY - b.VY, AngVel: s.AngVel - b.AngVel}
	pa := pairBits(d.X, d.Y, 20) + oneBits(d.Angle, 12)
	if d.X != 0 || d.Y != 0 || d.Angle != 0 {
		c.idx = append(c.idx, i)
		c.bodyBits += pa
	}
	if d != (quant.State{}) {
		c.vidx = append(c.vidx, i)
		c.bodyVelBits += pa + pairBits(d.VX, d.VY, 16) + oneBits(d.AngVel, 16)
	}
}

// pairBits is what two deltas cost in the position tiers, absolute values
// taking abs bits each.
func pairBits(x, y int64, abs int64) int64 {
	in := func(v, lo, hi int64) bool { return v >= lo && v <= hi }
	switch {
	case in(x, -16, 15) && in(y, -16, 15):
		return 1 + 2*5
	case in(x, -2048, 2047) && in(y, -2048, 2047):
		return 2 + 2*12
	}
	return 2 + 2*abs
}

// oneBits is what one delta costs in the angle tiers.
func oneBits(v int64, abs int64) int64 {
	if v >= -16 && v <= 15 {
		return 1 + 5
	}
	return 1 + abs
}

// indexBits is what telling which bodies changed costs: one bit to choose,
// then the cheaper of one bit per body and a 10-bit count followed by each
// changed body's distance from the one before in tiers (1: 1 bit; 2–5:
// 2+2; 6–13: 3+3; 14–29: 4+4; 30–61: 5+5; 62–125: 6+6; else 6+16).
func indexBits(idx []int, n int) int64 {
	var rel int64 = 10
	last := -1
	for _, i := range idx {
		switch d := i - last; {
		case d == 1:
			rel++
		case d <= 5:
			rel += 4
		case d <= 13:
			rel += 6
		case d <= 29:
			rel += 8
		case d <= 61:
			rel += 10
		case d <= 125:
			rel += 12
		default:
			rel += 22
		}
		last = i
	}
	return 1 + min(rel, int64(n))
}

// end closes a snapshot.
func (c *packerCount) end() {
	c.bodies += int64(c.n)
	c.bits += c.bodyBits + indexBits(c.idx, c.n)
	c.vbits += c.bodyVelBits + indexBits(c.vidx, c.n)
	c.idx, c.vidx, c.n, c.bodyBits, c.bodyVelBits = c.idx[:0], c.vidx[:0], 0, 0, 0
}

// perBody returns bits per body per snapshot without and with velocities.
func (c *packerCount) perBody() (float64, float64) {
	if c.bodies == 0 {
		return 0, 0
	}
	return float64(c.bits) / float64(c.bodies), float64(c.vbits) / float64(c.bodies)
}

// TestPackerCount holds the reference packer to its tiers: a snapshot of
// bodies at rest costs the choice bit and one bit per body (or the count),
// and each tier costs what its comment says.
func TestPackerCount(t *testing.T) {
	var c packerCount
	b := quant.State{X: 100, Y: 50, Angle: 7}
	rest := b
	small := quant.State{X: 115, Y: 34, Angle: 7 - 16}
	medium := quant.State{X: 100 + 2047, Y: 50, Angle: 7 + 16, VX: 1}
	far := quant.State{X: 100 - 2049, Y: 50, Angle: 7}
	for _, s := range []quant.State{rest, small, medium, far} {
		c.add(&b, s)
	}
	c.add(nil, rest)
	c.end()
	// indices 1, 2, 3, 4 changed of 5: relative 10+1+1+1+1 = 14 > 5 bits
	// of bitmap.
	want := int64(1+5) + (1 + 10 + 1 + 5) + (2 + 24 + 1 + 12) + (2 + 40 + 1 + 5) + (2 + 40 + 1 + 12)
	wantVel := int64(1+5) + (1 + 10 + 1 + 5 + 1 + 10 + 1 + 5) + (2 + 24 + 1 + 12 + 1 + 10 + 1 + 5) +
		(2 + 40 + 1 + 5 + 1 + 10 + 1 + 5) + (2 + 40 + 1 + 12 + 2 + 32 + 1 + 16)
	if c.bits != want || c.vbits != wantVel {
		t.Fatalf("bits %d, %d with velocities; want %d, %d", c.bits, c.vbits, want, wantVel)
	}
	if got := indexBits([]int{0, 1, 7, 200}, 1000); got != 1+10+1+1+6+22 {
		t.Fatalf("relative indices cost %d", got)
	}
	if got := indexBits(nil, 900); got != 1+10 {
		t.Fatalf("no change costs %d", got)
	}
}
