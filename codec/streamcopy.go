package codec

import "encoding/binary"

// A StreamCopy carries a run of the server's control-stream bytes in a
// datagram. The stream is reliable but, over a lossy path, a lost packet of
// it waits for the transport's retransmission (one round trip and more);
// meanwhile frames that need the message it carried (a new manifest's
// Physics, a split island's Lease) are held. A server may send the bytes it
// just wrote to the stream once more in datagrams; an observer reads the
// stream from whichever copy of a byte arrives first, in stream order, so
// nothing about the stream's meaning changes: a copy only moves bytes
// earlier, and the stream's own bytes must equal it (package transport).
type StreamCopy struct {
	// Offset is the stream position of Bytes[0]: how many bytes the server
	// had written on the stream before it (the Welcome's envelope starts
	// at 0).
	Offset uint64
	// Bytes is the run, 1 … MaxStreamCopy bytes. ParseStreamCopy returns
	// it as a sub-slice of the datagram.
	Bytes []byte
}

const (
	// StreamCopyMagic starts every stream copy datagram (frames' datagrams
	// start with "ISYN").
	StreamCopyMagic = "ISYC"
	// StreamCopyVersion is the only stream copy version.
	StreamCopyVersion = 1
	// StreamCopyHeaderSize is a copy's size before its bytes: magic (4),
	// version (1), offset (8) and check (4).
	StreamCopyHeaderSize = 17
	// MaxStreamCopy caps a copy's bytes: the largest UDP payload less the
	// header.
	MaxStreamCopy = 65507 - StreamCopyHeaderSize
)

// IsStreamCopy reports whether datagram b is a stream copy: it starts with
// StreamCopyMagic. Only ParseStreamCopy says whether it is a good one.
func IsStreamCopy(b []byte) bool {
	return len(b) >= 4 && string(b[:4]) == StreamCopyMagic
}

// Append appends the copy's datagram to b: the magic, u8 version, u64
// offset, u32 check — the low 32 bits of xxhash64 (seed 0) over the 13
// bytes before it and every byte of the run — and the run, little-endian.
// It panics on an empty run or one over MaxStreamCopy: the sender chooses
// the run.
func (c StreamCopy) Append(b []byte) []byte {
	if len(c.Bytes) == 0 || len(c.Bytes) > MaxStreamCopy {
		panic("codec: stream copy of 0 bytes or over MaxStreamCopy")
	}
	start := len(b)
	b = append(b, StreamCopyMagic...)
	b = append(b, StreamCopyVersion)
	b = binary.LittleEndian.AppendUint64(b, c.Offset)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = append(b, c.Bytes...)
	binary.LittleEndian.PutUint32(b[start+13:], streamCopyCheck(b[start:]))
	return b
}

// ParseStreamCopy reads the stream copy datagram b. Bytes aliases b. It
// refuses a datagram that is not a copy (ErrBadMagic), another version
// (ErrVersion), one with no run or over the largest datagram (ErrTruncated,
// ErrLimit), one whose run would pass stream offset 2⁶⁴ − 1 or whose check
// differs (ErrMalformed).
func ParseStreamCopy(b []byte) (StreamCopy, error) {
	switch {
	case len(b) < 5:
		return StreamCopy{}, fail(ErrTruncated, len(b), "stream copy magic")
	case string(b[:4]) != StreamCopyMagic:
		return StreamCopy{}, fail(ErrBadMagic, 0, "stream copy magic")
	case b[4] != StreamCopyVersion:
		return StreamCopy{}, fail(ErrVersion, 4, "stream copy version")
	case len(b) <= StreamCopyHeaderSize:
		return StreamCopy{}, fail(ErrTruncated, len(b), "stream copy bytes")
	case len(b) > StreamCopyHeaderSize+MaxStreamCopy:
		return StreamCopy{}, fail(ErrLimit, StreamCopyHeaderSize+MaxStreamCopy, "stream copy bytes")
	}
	c := StreamCopy{Offset: binary.LittleEndian.Uint64(b[5:]), Bytes: b[StreamCopyHeaderSize:]}
	if c.Offset > ^uint64(0)-uint64(len(c.Bytes))+1 {
		return StreamCopy{}, fail(ErrMalformed, 5, "stream copy offset")
	}
	if binary.LittleEndian.Uint32(b[13:]) != streamCopyCheck(b) {
		return StreamCopy{}, fail(ErrMalformed, 13, "stream copy check")
	}
	return c, nil
}

// streamCopyCheck is the low 32 bits of xxhash64 over a copy's first 13
// bytes and its run.
func streamCopyCheck(dg []byte) uint32 { return checkAround(dg, 13) }
