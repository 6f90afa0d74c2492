package island

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// Manifest is the expected membership of one island under one topology
// generation and config revision: the ordered member identities a complete
// frame must carry exactly once each. The authority announces it reliably.
type Manifest struct {
	Island   uint32     // island id
	Topology uint32     // topology generation the member list belongs to
	Config   uint32     // config revision of the island's constraints
	Members  []MemberID // expected members, in manifest order
}

// Digest returns the xxhash64 of the manifest's canonical encoding: island,
// topology, config and member count as little-endian uint32, then each member
// as little-endian uint64 stable id and uint32 generation. It does not
// allocate.
func (m *Manifest) Digest() uint64 {
	var d xxhash.Digest
	d.Reset()
	var b [12]byte
	binary.LittleEndian.PutUint32(b[0:], m.Island)
	binary.LittleEndian.PutUint32(b[4:], m.Topology)
	binary.LittleEndian.PutUint32(b[8:], m.Config)
	_, _ = d.Write(b[:])
	binary.LittleEndian.PutUint32(b[0:], uint32(len(m.Members)))
	_, _ = d.Write(b[:4])
	for _, id := range m.Members {
		binary.LittleEndian.PutUint64(b[0:], id.Stable)
		binary.LittleEndian.PutUint32(b[8:], id.Generation)
		_, _ = d.Write(b[:])
	}
	return d.Sum64()
}

// Index returns the manifest position of id, or -1. It is a linear scan;
// receivers that resolve many members build their own index.
func (m *Manifest) Index(id MemberID) int {
	for i, x := range m.Members {
		if x == id {
			return i
		}
	}
	return -1
}

// Lease names the current authority of one island: which sender owns it
// under which epoch. The zero Lease is island 0, epoch 0, owner s0.
type Lease struct {
	Island uint32   // island id
	Epoch  uint32   // authority epoch the owner holds
	Owner  SenderID // the only sender whose frames are accepted
}
