// Package validator decides whether an assembled frame may be shown: it
// re-checks the frame against the island's current authority lease and
// topology manifest and resolves every member's stable identity to a local,
// generation-safe handle. Only when all of that holds for every member does
// it produce an immutable ValidatedIslandFrame (type Validated), members in
// manifest order. All or nothing.
//
// # What it owns
//
//   - Registry: reliable spawn and destroy announcements map MemberID (stable
//     id + generation) to Handle (slot + slot generation). A reused slot bumps
//     its generation, so a stale handle never resolves; a destroyed
//     generation leaves a tombstone, so late records of it never revive the
//     object; a newer generation never inherits the old one's slot or state.
//   - Leases (island → epoch, owner) and manifests (island → topology,
//     config, ordered members, digest), set from reliable announcements.
//   - Validate: lease, sender, epoch, topology, config, exact member set
//     (count, no stranger, no repeat), identity resolution, finite states —
//     in that order, each failure with its own Reason and counter.
//     ValidateStates makes the same checks on a frame the caller already
//     holds decoded (identities and states, not member records): wire v2
//     restores whole frames from integers and needs no second parse.
//
// Frames whose identities are not announced yet are rejected
// (UnknownIdentity), not held: the authority re-broadcasts at a fixed
// cadence, so the next frame after the announcement validates, and nothing
// is ever guessed. Epoch, topology and config that are ahead of what the
// observer knows are rejected as Future* (waiting for the announcement), and
// behind as Stale*; serial-number order decides which.
//
// # Usage
//
//	reg := validator.NewRegistry(0, 0)
//	v := validator.New(reg, validator.Config{})
//	v.SetLease(lease); _ = v.SetManifest(manifest); reg.Announce(id) // from reliable control messages
//	if reason, vf := v.Validate(frame); reason == validator.OK {
//		store.Commit(now, vf) // compare-and-commit against v.Stamp
//	}
//
// Validate allocates nothing in steady state; the returned frame is reused by
// the next call (the store copies it). A Validator is not safe for
// concurrent use: the game thread owns it. Stamp returns the version the
// store compares at commit time, so that a version change between validation
// and commit discards the whole frame.
package validator
