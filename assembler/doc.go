// Package assembler turns decoded fragments, arriving in any order with loss,
// duplication, staleness and forgery, into whole frames identical to what the
// sender encoded — or into nothing. It never emits half a frame.
//
// # What it guarantees
//
//   - A frame is emitted only when every fragment index 0…Count−1 arrived,
//     their member ranges tile 0…Total−1 exactly (bitset coverage, no
//     overlap, no gap), the member identities are distinct and the xxhash64
//     digest in the header matches the frame-level header fields plus the
//     members in frame order. The emitted Frame holds those member records
//     byte for byte: version 1's float records (codec.Records), or the
//     restored integers of a quantized frame (codec.QuantRecords, the
//     header marked Quantized), whose digest is its frame sum
//     (codec.QuantSum, the class included). Frame.ID and Frame.State read
//     either; the fragments of one frame must agree on being quantized and
//     on the class.
//   - Fragments are grouped by (Sender, Key): the same key from two senders
//     is two frames and is never mixed.
//   - An identical duplicate fragment is accepted idempotently (outcome
//     Duplicate; no bytes accounted twice). Any inconsistency — a different
//     fragment under a held index, a header field that disagrees, overlapping
//     ranges, more members than the total, every fragment present with members
//     missing, a duplicate identity, a digest mismatch — rejects the whole
//     frame, which stays poisoned (later fragments: RejectPoisoned) until its
//     TTL ends. On any failure the caller gets nothing.
//   - Staleness follows serial-number order per (Sender, Stream): a frame that
//     already completed, or lies 64 or more behind the stream's newest
//     completed frame, is rejected (RejectStale), so a frame never completes
//     twice; an older frame that never completed may still, even after a
//     newer one did — under reordering its last fragments often come later
//     — and the store decides whether it fills a gap ahead of playback or
//     comes too late.
//   - Every push returns an Outcome and bumps its counter in Stats; frames
//     dropped by expiry or a cap are counted too.
//
// # Caps, defaults and eviction
//
//	TTL                     250 ms  incomplete frames older than this are dropped (Expired)
//	MaxCandidatesPerIsland  8       incomplete frames per island, all senders together
//	MaxPending              1024    incomplete + poisoned frames and frames kept for parity, overall
//	MaxPendingBytes         8 MiB   accounted bytes overall, parity buffers included
//	MaxStreams              4096    remembered streams (least recently completed forgotten)
//	MaxMembers, MaxFragments        codec defaults (4096, 512)
//	MaxDatagram                     codec default (1200): the size of each parity buffer
//
// Accounting charges FrameOverhead per frame, FragmentOverhead per declared
// fragment and MemberCharge per received member; a frame whose full size
// could not fit MaxPendingBytes is refused at its first fragment
// (RejectTooLarge). A frame that comes whole in one fragment and checks out
// completes at once: it takes no place among the pending frames and evicts
// nothing. Memory is charged for bytes actually received, not for
// the total a peer claims. Eviction is deterministic: when a new frame would
// exceed its island's cap, a candidate of the sender holding the most of that
// island's candidates goes — the one with the fewest members received, then
// the oldest — so a flooding sender evicts its own (EvictedIslandCap); when the global frame cap is reached, the oldest frame
// overall goes (EvictedPendingCap); when bytes would exceed the byte cap, the
// oldest other frames go until they fit (EvictedByteCap). "Oldest" is the
// order of first fragments. When everything has completed or expired,
// PendingBytes is exactly zero.
//
// # Parity
//
// A quantized frame cut into k fragments may come with m Reed–Solomon
// parity records (wire 3), any k of the k + m rebuilding the frame.
// ParityRecord keeps a parity record and ParityData a data fragment's
// standalone form (only once some parity record arrived: a sender without
// parity costs nothing). Once k records of a frame are in and a data
// fragment is missing, the missing ones are rebuilt, each parsed and checked
// to be the fragment of that frame it stands for, and handed back for the
// caller to restore (a delta needs its baseline) and Push like any other —
// the frame's digest then vouches for them. A rebuild that fails is
// RejectParity; each fragment rebuilt counts Rebuilt. The records kept are
// entries beside the frames in reassembly, under the same TTL and caps:
// each buffer (MaxDatagram bytes) and FrameOverhead per frame are charged to
// MaxPendingBytes, a kept frame counts against MaxPending, and at either cap
// the oldest entry of the two kinds goes; one some of whose data arrived
// that expires or goes unfinished counts ParityDropped. The last 64 frames
// finished are remembered, so that their late records make no entry.
//
// # A new timeline
//
// Reset drops every incomplete frame (counted as DroppedReset) and every
// frame kept for parity, and forgets every stream's sequence state and the
// frames finished. Call it when the sender starts numbering
// its frames again — a restarted authority — or its frames, numbered from
// zero again, are refused as stale until they pass the old run's sequences.
//
// # Snapshots
//
// Clone copies an assembler whole: frames in progress, records kept for
// parity, streams and counters.
//
// # Time
//
// The assembler reads no clock. Every Push and Expire takes now, an integer
// count of microseconds on the caller's monotonic clock (an earlier now than
// one already seen is treated as the latest). A frame first seen at t is held
// while now − t < TTL and dropped once now − t ≥ TTL. NextDeadline tells the
// caller when to call Expire next.
//
// # Usage
//
// One assembler per receive loop; it is not safe for concurrent use:
//
//	dec, _ := codec.NewFloatDecoder(codec.Config{})
//	asm, _ := assembler.New(assembler.Config{})
//	for {
//		n, _ := conn.Read(buf)
//		now := time.Since(start).Microseconds()
//		frags, err := dec.Decode(buf[:n])
//		if err != nil { continue } // counted by the caller
//		for i := range frags {
//			if o, f := asm.Push(now, &frags[i]); o == assembler.Completed {
//				validate(f) // f is valid until the next Push or Expire
//			}
//		}
//		if d, ok := asm.NextDeadline(); ok && now >= d { asm.Expire(now) }
//	}
//
// # Limits
//
// Fragments must come from codec.FloatDecoder or codec.ParseFragment: Push
// re-checks their structure (index, counts, ranges, sizes) but not float
// finiteness, which the decoder guarantees; Frame.Decode reports a
// non-finite member of a hand-built fragment. The assembler authenticates
// nothing: a peer that can forge fragments for a live frame can poison that
// frame (counted), but cannot make a forged frame complete under a key whose
// digest it did not compute, nor grow memory past the caps. Deciding whether
// a completed frame is current and from the island's owner is the validator's
// job.
package assembler
