package codec

import (
	"fmt"
	"slices"

	"github.com/klauspost/reedsolomon"

	"github.com/islandsync/islandsync/island"
)

// Parity (wire v2): a frame cut into fragments can carry Reed–Solomon
// parity records, so that any Fragments of its Fragments+Parity records
// complete it.
const (
	// MaxParity caps the parity records of one frame.
	MaxParity = 16
	// MaxParityFragments is the largest fragment count that gets (and that a
	// receiver reconstructs) parity: it bounds what one frame can make a
	// receiver hold for reconstruction.
	MaxParityFragments = 32
	// parityOverhead is what a parity record needs beside its shard: head,
	// island, fragments, parity, index and shard length.
	parityOverhead = 1 + 5 + 1 + 1 + 1 + 3
)

// KindParity is the logical kind of a parity record: on the wire, a run
// head with the fragment bit, which no run carries.
const KindParity RecordKind = 4

// SetParity makes every frame cut into 2 … MaxParityFragments fragments
// carry m parity records (0 turns parity off). m must be 0 … MaxParity.
func (e *Encoder) SetParity(m int) error {
	if m < 0 || m > MaxParity {
		return fmt.Errorf("codec: parity %d outside [0, %d]", m, MaxParity)
	}
	e.parity = m
	return nil
}

// keepShard records fragment i's standalone form — the record as it would
// stand first in a datagram, island absolute, nothing shared — as data
// shard i.
func (e *Encoder) keepShard(i int, head byte, isl uint32, body []byte) {
	for len(e.shards) <= i {
		e.shards = append(e.shards, nil)
	}
	s := appendU(append(e.shards[i][:0], head&^headSameRef), uint64(isl))
	e.shards[i] = append(s, body...)
	e.shardLen = max(e.shardLen, len(e.shards[i]))
}

// emitParity pads the frame's k data shards to one length, computes the
// parity shards and writes each as a record in its own datagram.
func (e *Encoder) emitParity(head byte, isl uint32, k int) error {
	m := e.parity
	for len(e.shards) < k+m {
		e.shards = append(e.shards, nil)
	}
	for i := range k + m {
		s := e.shards[i]
		if i >= k {
			s = s[:0]
		}
		e.shards[i] = padShard(s, e.shardLen)
	}
	rs, err := rsCodec(&e.rs, k, m)
	if err != nil {
		return err
	}
	if err := rs.Encode(e.shards[:k+m]); err != nil {
		return err
	}
	for j := range m {
		body := e.rec[:0]
		body = appendU(body, uint64(k))
		body = appendU(body, uint64(m))
		body = appendU(body, uint64(j))
		body = appendU(body, uint64(e.shardLen))
		body = append(body, e.shards[k+j]...)
		e.rec = body
		e.place(head, isl, body, 0, 0)
		e.parts = 0
		e.bytes.Records -= int64(len(body)) // parity is its own kind of byte
		e.bytes.Parity += int64(len(body))
		e.close()
	}
	return nil
}

// rsKey names a Reed–Solomon code: data and parity shard counts.
type rsKey struct{ k, m int }

// rsCodec returns the cached Reed–Solomon code for k data and m parity
// shards, making it on first use.
func rsCodec(cache *map[rsKey]reedsolomon.Encoder, k, m int) (reedsolomon.Encoder, error) {
	if *cache == nil {
		*cache = map[rsKey]reedsolomon.Encoder{}
	}
	if c := (*cache)[rsKey{k, m}]; c != nil {
		return c, nil
	}
	c, err := reedsolomon.New(k, m)
	if err != nil {
		return nil, err
	}
	(*cache)[rsKey{k, m}] = c
	return c, nil
}

// AppendStandalone appends the standalone form of a key or delta fragment
// record — the bytes its parity was computed over — to dst.
func AppendStandalone(dst []byte, r *Record) []byte {
	dst = appendU(append(dst, head(r.Kind, r.Class, r.Flags)|headFragment), uint64(r.Island))
	if r.Kind == KindKey {
		dst = appendKeyFields(dst, r.Sender, island.Key{Epoch: r.Epoch, Topology: r.Topology, Config: r.Config}, r.Segment)
	} else {
		dst = appendU(dst, uint64(r.Lag))
	}
	dst = appendPart(appendU(dst, uint64(r.Total)), r.Fragments, r.Index, r.First, r.N, r.Digest)
	return append(appendU(dst, uint64(len(r.raw))), r.raw...)
}

// ParseStandalone parses a reconstructed data shard: one key or delta
// fragment record in standalone form, followed by zero padding only.
func ParseStandalone(b []byte, cfg Config) (Record, error) {
	c, err := cfg.WithDefaults()
	if err != nil {
		return Record{}, err
	}
	var ps parseStorage
	p := ps.parser(b, 0)
	return parseStandalone(&p, &c)
}

// ParseStandalone is the package's ParseStandalone under the decoder's
// caps, keeping the record's residuals in the decoder's storage, so that
// it allocates nothing once that has grown. The record is valid until the
// next Decode; the records Decode returned stay valid.
func (d *Decoder) ParseStandalone(b []byte) (Record, error) {
	ps := &d.ps // appended to, not reset: the records of the last Decode stay
	p := parser{b: b, res: &ps.res, vals: &ps.vals, bits: &ps.bits, st: &ps.st, rc: &ps.rc}
	return parseStandalone(&p, &d.cfg)
}

// StartStandalone lets go of the records ParseStandalone returned since the
// last Decode or StartStandalone, so that a decoder that parses rebuilt
// shards alone reuses its storage: call it before the shards of each
// rebuild.
func (d *Decoder) StartStandalone() {
	d.ps.res, d.ps.vals, d.ps.bits = d.ps.res[:0], d.ps.vals[:0], d.ps.bits[:0]
}

func parseStandalone(p *parser, c *Config) (Record, error) {
	b := p.b
	var r Record
	if len(b) == 0 {
		return r, fail(ErrTruncated, 0, "shard")
	}
	if err := p.record(&r, c, 0, true); err != nil {
		return Record{}, err
	}
	if r.Kind == KindRun || r.Kind == KindParity || r.Fragments < 2 {
		return Record{}, fail(ErrMalformed, 0, "shard kind")
	}
	for _, x := range b[p.off:] {
		if x != 0 {
			return Record{}, fail(ErrMalformed, p.off, "shard padding")
		}
	}
	return r, nil
}

// ParityDecoder rebuilds missing data shards of frames that carry parity.
// Not safe for concurrent use.
type ParityDecoder struct{ rs map[rsKey]reedsolomon.Encoder }

// Reconstruct fills the missing entries (nil or empty) among shards[:k]
// from the others: k data shards — standalone forms as received, shorter
// than the parity shards — then m parity shards of one length; at least k
// present. Present data shards are zero-padded in place to the parity
// length; an empty missing shard with room for it is rebuilt in place, a
// nil one is allocated. Parity shards of different lengths, or a data
// shard longer than them, are ErrMalformed: they are not one frame's.
func (d *ParityDecoder) Reconstruct(shards [][]byte, k, m int) error {
	l := 0
	for _, s := range shards[k : k+m] {
		switch {
		case len(s) == 0:
		case l == 0:
			l = len(s)
		case len(s) != l:
			return fail(ErrMalformed, -1, "parity shard lengths")
		}
	}
	if l == 0 {
		return fail(ErrMalformed, -1, "no parity shard")
	}
	for i, s := range shards[:k] {
		if len(s) > l {
			return fail(ErrMalformed, -1, "data shard longer than parity")
		}
		if len(s) > 0 {
			shards[i] = padShard(s, l)
		}
	}
	rs, err := rsCodec(&d.rs, k, m)
	if err != nil {
		return err
	}
	return rs.ReconstructData(shards)
}

// padShard zero-pads s to l bytes, in place when it has room.
func padShard(s []byte, l int) []byte {
	n := len(s)
	s = slices.Grow(s, l-n)[:l]
	clear(s[n:])
	return s
}
