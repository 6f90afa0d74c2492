package netsim

import (
	"bytes"
	"math/rand/v2"

	"github.com/islandsync/islandsync/baseline"
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
	dec     *codec.FloatDecoder
	enc     *codec.FloatEncoder
	latest  map[uint32]island.Key // newest key seen per island
	old     map[uint32][][]byte   // datagrams of a superseded epoch or topology, per island
	oldKind map[uint32]int        // 0 epoch, 1 topology
	recent  [][]byte
	stats   AdversaryStats
	forged  island.Frame

	// wire 3
	dec2    *codec.Decoder
	enc2    *codec.Encoder
	keys    map[uint32]codec.Frame // newest key record seen per island, for forgeries
	recent2 []recentWire
}

// recentWire is a recent v2 datagram and the islands it carries records of.
type recentWire struct {
	dg      []byte
	islands []uint32
}

// NewAdversary injects with probability rate per observed datagram.
func NewAdversary(seed uint64, rate float64) *Adversary {
	dec, _ := codec.NewFloatDecoder(codec.Config{})
	enc, _ := codec.NewFloatEncoder(codec.Config{})
	dec2, _ := codec.NewDecoder(codec.Config{MaxDatagram: codec.MaxMaxDatagram})
	enc2, _ := codec.NewEncoder(codec.Config{})
	return &Adversary{r: rand.New(rand.NewPCG(seed, 0xbad)), rate: rate, dec: dec, enc: enc,
		latest: map[uint32]island.Key{}, old: map[uint32][][]byte{}, oldKind: map[uint32]int{},
		dec2: dec2, enc2: enc2, keys: map[uint32]codec.Frame{}}
}

// Stats returns what was injected.
func (a *Adversary) Stats() AdversaryStats { return a.stats }

// Observe looks at one legitimate datagram and returns hostile datagrams to
// inject now (possibly none).
func (a *Adversary) Observe(dg []byte) [][]byte {
	if v, err := codec.DatagramVersion(dg); err == nil && v == codec.VersionV3 {
		return a.observeWire(dg)
	}
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

// observeWire is Observe for wire-3 datagrams: replays of datagrams of an
// island's previous epoch or topology, key records forged from a spoofed
// sender with a correct digest, and copies with one byte changed.
func (a *Adversary) observeWire(dg []byte) [][]byte {
	h, recs, err := a.dec2.Decode(dg)
	if err != nil {
		return nil
	}
	var islands []uint32
	for i := range recs {
		r := &recs[i]
		islands = append(islands, r.Island)
		if r.Kind != codec.KindKey {
			continue
		}
		k := island.Key{Island: r.Island, Epoch: r.Epoch, Topology: r.Topology, Config: r.Config, Seq: h.Seq}
		if prev, ok := a.latest[r.Island]; ok && (prev.Epoch != k.Epoch || prev.Topology != k.Topology) {
			kind := 1
			if prev.Epoch != k.Epoch {
				kind = 0
			}
			var ammo [][]byte
			for _, rd := range a.recent2 {
				for _, id := range rd.islands {
					if id == r.Island {
						ammo = append(ammo, rd.dg)
						break
					}
				}
			}
			a.old[r.Island], a.oldKind[r.Island] = ammo, kind
		}
		a.latest[r.Island] = k
		if r.Fragments == 1 {
			// A joint-predicted keyframe needs the island's links, which
			// the adversary does not read: it forges from the others.
			if ms, err := r.ExpandKey(nil, nil, h.Time); err == nil {
				a.keys[r.Island] = codec.Frame{Sender: r.Sender, Key: k, Segment: r.Segment, Class: r.Class, Members: ms}
			}
		}
	}
	a.recent2 = append(a.recent2, recentWire{dg: bytes.Clone(dg), islands: islands})
	if len(a.recent2) > 256 {
		a.recent2 = a.recent2[1:]
	}
	if a.r.Float64() >= a.rate || len(islands) == 0 {
		return nil
	}
	target := islands[a.r.IntN(len(islands))]
	switch a.r.IntN(4) {
	case 0, 1:
		if old := a.old[target]; len(old) > 0 {
			if a.oldKind[target] == 0 {
				a.stats.OldEpoch++
			} else {
				a.stats.StaleTopology++
			}
			return [][]byte{old[a.r.IntN(len(old))]}
		}
		fallthrough
	case 2:
		f, ok := a.keys[target]
		if !ok {
			return nil
		}
		f.Sender += 1000
		f.Key.Seq = h.Seq
		f.Members = append([]baseline.Entry(nil), f.Members...)
		for i := range f.Members {
			f.Members[i].Q.X += 2560 // 5 m at 2^-9 m
		}
		a.enc2.Begin(h.Packet, h.Seq, h.Time)
		if err := a.enc2.AddKey(&f); err != nil {
			return nil
		}
		a.stats.Spoofed++
		var out [][]byte
		for _, d := range a.enc2.Datagrams() {
			out = append(out, bytes.Clone(d))
		}
		return out
	default:
		c := bytes.Clone(dg)
		if len(c) > codec.HeaderSize+2 {
			c[codec.HeaderSize+2+a.r.IntN(len(c)-codec.HeaderSize-2)] ^= 0x01
		}
		a.stats.Conflicting++
		return [][]byte{c}
	}
}
