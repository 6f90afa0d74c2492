package transport

import (
	"crypto/rand"
	"encoding/binary"
)

// randomTimeline picks a timeline id for a new run of the authority.
func randomTimeline() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) | 1
}
