package codec

import (
	"encoding/binary"
	"maps"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// TypePhysicsRef is the control message that gives an island a physics
// description the observer already holds, by its digest, instead of
// sending it again.
const TypePhysicsRef MessageType = 0x0A

// PhysicsRef says that island Island's physics, for its manifest (Topology,
// Config), is the description whose digest is Digest (PhysicsDigest): one
// the observer received in a Physics message on this connection and still
// holds by the PhysicsCache rule. Islands built alike — a field of crates,
// a row of carts — share one description, so a join or a camera sweeping
// over them costs 25 bytes per island instead of a few hundred.
type PhysicsRef struct {
	Island, Topology, Config uint32
	Digest                   uint64
}

const physicsRefBody = 3*4 + 8

func (PhysicsRef) Type() MessageType { return TypePhysicsRef }

func (PhysicsRef) Size() int { return ControlHeaderSize + physicsRefBody }

func (m PhysicsRef) Append(b []byte) []byte {
	b = appendU32s(appendEnvelope(b, m.Type(), m.Size()), m.Island, m.Topology, m.Config)
	return binary.LittleEndian.AppendUint64(b, m.Digest)
}

func (p *ctlParser) physicsRef() (PhysicsRef, error) {
	if err := p.need(physicsRefBody, "physics ref"); err != nil {
		return PhysicsRef{}, err
	}
	return PhysicsRef{Island: p.u32(), Topology: p.u32(), Config: p.u32(), Digest: p.u64()}, nil
}

// physicsDescAt is where a Physics message's description starts: past the
// envelope and the island, topology and config it is bound to.
const physicsDescAt = ControlHeaderSize + 3*4

// PhysicsDigest returns the digest of an encoded Physics message's
// description: XXH64 (seed 0) of its bytes from the step field to the end,
// the island, topology and config left out, so that islands built alike
// share it. b must be one whole Physics message, as Append writes it.
func PhysicsDigest(b []byte) uint64 {
	if len(b) < physicsDescAt {
		return 0
	}
	return xxhash.Sum64(b[physicsDescAt:])
}

// Of the Physics descriptions an observer received on one connection, the
// ones it holds, which a PhysicsRef may name: both ends keep the same
// table by the same rule, the server only the digests. The table starts
// empty with every Welcome. Every Physics message adds its description
// (one already held changes nothing), and while the table holds more than
// PhysicsCacheEntries descriptions, or their Physics messages sum to more
// than PhysicsCacheBytes, the one added longest ago goes.
const (
	PhysicsCacheEntries = 256
	PhysicsCacheBytes   = 1 << 20
)

// PhysicsCache is that table. A server keeps one per observer with nil
// descriptions (to know when a PhysicsRef may stand for a Physics); an
// observer keeps the descriptions. The zero value is empty. Not safe for
// concurrent use.
type PhysicsCache struct {
	order []uint64 // digests, oldest first
	held  map[uint64]physicsEntry
	bytes int
}

type physicsEntry struct {
	size int
	desc *Physics // nil at the server
}

// Reset empties the table, as a Welcome does.
func (c *PhysicsCache) Reset() {
	c.order, c.bytes = c.order[:0], 0
	clear(c.held)
}

// Add records a Physics message of size bytes whose description has
// digest d (desc: the description to keep, or nil), then lets the oldest
// go while the table is over its caps.
func (c *PhysicsCache) Add(d uint64, size int, desc *Physics) {
	if _, ok := c.held[d]; ok {
		return
	}
	if c.held == nil {
		c.held = map[uint64]physicsEntry{}
	}
	c.held[d] = physicsEntry{size: size, desc: desc}
	c.order = append(c.order, d)
	c.bytes += size
	for len(c.order) > PhysicsCacheEntries || c.bytes > PhysicsCacheBytes {
		old := c.order[0]
		c.bytes -= c.held[old].size
		delete(c.held, old)
		c.order = append(c.order[:0], c.order[1:]...)
	}
}

// Holds reports whether description d is in the table.
func (c *PhysicsCache) Holds(d uint64) bool {
	_, ok := c.held[d]
	return ok
}

// Get returns description d, bound to ref's island, topology and config;
// false when it is not held (or was added without its description).
func (c *PhysicsCache) Get(ref PhysicsRef) (Physics, bool) {
	e, ok := c.held[ref.Digest]
	if !ok || e.desc == nil {
		return Physics{}, false
	}
	p := *e.desc
	p.Island, p.Topology, p.Config = ref.Island, ref.Topology, ref.Config
	return p, true
}

// Clone returns an independent copy; descriptions are shared (they are
// never changed).
func (c *PhysicsCache) Clone() PhysicsCache {
	return PhysicsCache{order: slices.Clone(c.order), held: maps.Clone(c.held), bytes: c.bytes}
}
