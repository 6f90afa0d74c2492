package netsim

import (
	"bytes"
	"math/rand/v2"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// AdversaryStats counts injected packets by kind.
type AdversaryStats struct {
	OldEpoch, Spoofed, StaleTopology, Conflicting uint64
}

// Total returns all injected packets.
func (s AdversaryStats) Total() uint64 {
	return s.OldEpoch + s.Spoofed + s.StaleTopology + s.Conflicting
}

// Adversary watches the legitimate datagrams on the path and injects hostile
// ones: replays of a previous epoch after a hand-off, frames from a spoofed
// sender for real islands, replays of fragments of a superseded topology, and
// copies of fresh fragments with altered member bytes (conflicting
// duplicates). It is seeded and deterministic.
type Adversary struct {
	r       *rand.Rand
	rate    float64 // probability of injecting after each observed datagram
	dec     *codec.Decoder
	enc     *codec.Encoder
	latest  map[uint32]island.Key // newest key seen per island
	old     map[uint32][][]byte   // datagrams of a superseded epoch or topology, per island
	oldKind map[uint32]int        // 0 epoch, 1 topology
	recent  [][]byte
	stats   AdversaryStats
	forged  island.Frame
}

// NewAdversary injects with probability rate per observed datagram.
func NewAdversary(seed uint64, rate float64) *Adversary {
	dec, _ := codec.NewDecoder(codec.Config{})
	enc, _ := codec.NewEncoder(codec.Config{})
	return &Adversary{r: rand.New(rand.NewPCG(seed, 0xbad)), rate: rate, dec: dec, enc: enc,
		latest: map[uint32]island.Key{}, old: map[uint32][][]byte{}, oldKind: map[uint32]int{}}
}

// Stats returns what was injected.
func (a *Adversary) Stats() AdversaryStats { return a.stats }

// Observe looks at one legitimate datagram and returns hostile datagrams to
// inject now (possibly none).
func (a *Adversary) Observe(dg []byte) [][]byte {
	frags, err := a.dec.Decode(dg)
	if err != nil || len(frags) == 0 {
		return nil
	}
	h := frags[0].Header
	k := h.Key
	if prev, ok := a.latest[k.Island]; ok && (prev.Epoch != k.Epoch || prev.Topology != k.Topology) {
		// The island moved on: everything recorded under the previous key
		// becomes ammunition for late-packet replays.
		kind := 1
		if prev.Epoch != k.Epoch {
			kind = 0
		}
		a.old[k.Island] = a.recentOf(prev)
		a.oldKind[k.Island] = kind
	}
	a.latest[k.Island] = k
	a.recent = append(a.recent, bytes.Clone(dg))
	if len(a.recent) > 256 {
		a.recent = a.recent[1:]
	}
	if a.r.Float64() >= a.rate {
		return nil
	}
	var out [][]byte
	switch a.r.IntN(4) {
	case 0, 1:
		if old := a.old[k.Island]; len(old) > 0 {
			out = append(out, old[a.r.IntN(len(old))])
			if a.oldKind[k.Island] == 0 {
				a.stats.OldEpoch++
			} else {
				a.stats.StaleTopology++
			}
			break
		}
		fallthrough
	case 2:
		out = append(out, a.spoof(h, frags[0]))
		a.stats.Spoofed++
	case 3:
		c := bytes.Clone(dg)
		// Flip a byte inside the first member record: same fragment index,
		// different content.
		off := codec.DatagramHeaderSize + codec.RecordLengthSize + codec.FragmentHeaderSize + 12 + a.r.IntN(48)
		if off < len(c) {
			c[off] ^= 0x01
		}
		out = append(out, c)
		a.stats.Conflicting++
	}
	return out
}

func (a *Adversary) recentOf(k island.Key) [][]byte {
	var out [][]byte
	for _, dg := range a.recent {
		frags, err := a.dec.Decode(dg)
		if err == nil && len(frags) > 0 && frags[0].Header.Key.Island == k.Island &&
			frags[0].Header.Key.Epoch == k.Epoch && frags[0].Header.Key.Topology == k.Topology {
			out = append(out, dg)
		}
	}
	return out
}

// spoof builds a whole, self-consistent frame for a real island key from a
// sender that does not own it, with a correct digest: only the validator's
// lease check can refuse it.
func (a *Adversary) spoof(h codec.FragmentHeader, f codec.Fragment) []byte {
	a.forged = island.Frame{Sender: h.Sender + 1000, Key: h.Key, Time: h.Time, Segment: h.Segment,
		Members: a.forged.Members[:0]}
	for i := range f.Raw.Len() {
		m, _ := f.Raw.Member(i)
		a.forged.Members = append(a.forged.Members, m)
	}
	a.forged.Key.Seq += 1 << 20
	for i := range a.forged.Members {
		a.forged.Members[i].State.X += 5
	}
	a.enc.Reset()
	if err := a.enc.Add(&a.forged); err != nil {
		return nil
	}
	return bytes.Clone(a.enc.Datagrams()[0])
}
