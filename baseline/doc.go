// Package baseline is the decode-baseline window of delta frames: record
// tables restored from packets, the integer deltas between them, and the
// protocol that bounds how many a receiver keeps.
//
// A Table is the full record table one packet restores: per body a
// quantized motion record (quant.State), the authority time it was observed
// at and its continuity segment. A Packet names its baseline table and
// carries Changes — a Full record, a Delta of the changed fields, or a
// Remove — plus the digest of the table it restores. Bodies a packet leaves
// out keep their records, observation time included.
//
// # The window
//
// A Receiver keeps at most Slots (32) immutable tables of one window
// generation, apart from any display history. It decodes a packet only
// against a table it holds, checks the digest, and refuses anything else
// whole (ErrNoBaseline and ErrDigest call for a keyframe); it stores, and so
// lets the caller acknowledge, only while a slot is free. A Sender references
// only tables the observer acknowledged in the current generation, the newest
// first, and falls back to keyframes when none is usable.
//
// The window advances without a 33rd acknowledgement: the sender keeps one
// acknowledged anchor and sends a Control {Gen: w+1, Keep: [anchor]}
// reliably; until it is confirmed, packets stay in w and reference only the
// anchor. The receiver applies the control once (deduplicated by generation,
// never backwards), releases every other table, and from then on refuses
// packets of w. Packets of w+1 that overtake the control are held, at most
// MaxHeld, and decoded when it arrives — never guessed.
//
// Everything here is a pure state machine: no clock, no goroutine, no I/O,
// not safe for concurrent use.
package baseline
