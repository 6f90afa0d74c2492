// Package store holds validated island frames and turns them into what an
// engine shows: every island moved on one time base, one frame pair at a
// time, never half a frame.
//
// # What it owns
//
//   - Store: per island a bounded history (default 8) of
//     validator.Validated frames. Commit is compare-and-commit: if the
//     island's lease, topology or config changed since validation, the whole
//     frame is discarded (CommitVersionChanged). A frame under a new version
//     (a topology or config change, a hand-off) starts a new history; the
//     replaced one goes on being shown while playback is before the new
//     version's first frame — a change takes effect at its authority time,
//     not when its frames arrive — and then goes, with what was shown of it.
//     An island whose first frame is an Initial one later than r is Pending:
//     it does not exist yet at r (spawned, split off, merged).
//   - Clock: one playout clock per observer: states Waiting,
//     Playing, Frozen; adaptive delay D from the 95th percentile G of the last
//     64 advancing arrival intervals (recomputed once per second), Dtarget = clamp(G + T, 2T, max(2T,
//     250 ms)), D moving at most 10 ms per second; target = min(serverEstimate
//     − D, latest − T); rate = clamp(1 + 2·(target − r), 0.95, 1.05); r never
//     moves backwards and stops at latest + E (Frozen); resume at the same r
//     once latest − r ≥ max(2T, 100 ms) and two samples cover r; after R =
//     500 ms frozen, a lost left sample or a backlog |target − r| > R,
//     re-anchor at clamp(target, max(earliest, rOld), secondLatest) only when
//     secondLatest ≥ rOld, bumping the playback generation; a new server epoch
//     starts a new timeline.
//   - Evaluate: an island at r uses one frame pair and one alpha
//     (Interpolate), or one projection time capped at ExtrapolationCap
//     (Extrapolate), or holds whole (Stale, HoldOldest). Bracketing frames in
//     different continuity segments give the right frame's state
//     (SegmentCut), never an interpolation across the cut. Angles take the
//     shortest arc. The View reports poses, handles, sample time, mode,
//     segment and whether the poses are valid at r.
//   - Playout rules: a frame whose time is not after the r an island was
//     last shown at is refused (CommitLate) — a late frame may fill a gap
//     ahead of r, never rewrite what was shown; Cut ends a segment at its
//     authority time (never extrapolated past it; Empty, i.e. missing, until
//     the new segment's frame); an island Stale for StaleCleanup loses its
//     history; Hold shows the last poses unchanged while the clock is
//     Frozen, so r and the poses freeze together.
//   - Recovery smoothing: leaving Extrapolate, Stale or a Hold for Interpolate, each
//     member's offset between the pose last shown and the new pose decays
//     linearly over SmoothDuration, starting and ending at the same moment for
//     the whole island. Initial/Releasing frames, segment cuts, a new
//     continuity segment (whatever the distance) and offsets above
//     SnapDistance apply at once, for every member.
//   - An Extrapolator (SetExtrapolator; package receiver sets one backed by
//     package localsim) makes the island behave as one body of joints:
//     past the newest frame it continues the island with a simulation
//     instead of moving each member along its own velocity; a frame pair
//     wider than BridgeGap (frames lost between them) is crossed along that
//     continuation; and after every blend — interpolation, extrapolation,
//     recovery smoothing — the poses are settled so that the joints stand
//     as in the frames they came from. Between the old segment's last frame
//     and a known Cut, the old segment continues until the cut's time.
//
// # Time
//
// Authority times (frame times, r) are island.Time microseconds. Local times
// (now) are microseconds of the caller's monotonic clock. Nothing here reads
// a clock.
//
// # Usage
//
//	// After a successful Commit. timeline counts the authority's timelines
//	// (bump it when the authority restarts); it is never an island's
//	// ownership epoch, which would restart every island's playout at a
//	// hand-off. package receiver does all of this for you.
//	clock.Observe(now, timeline, vf.Time())
//	clock.Advance(now)                            // once per render tick
//	if r, ok := clock.R(); ok {
//		v := st.Evaluate(islandID, r, now, clock.Generation())
//		for i, h := range v.Handles { engine.SetPose(h, v.Poses[i]) } // one read-out per island
//	}
//
// # Snapshots
//
// Store.Clone and Clock.Clone copy their state whole, for a receiver that
// is copied (receiver.Receiver.Clone).
//
// # Limits
//
// One frame history per island and one manifest order per history: every
// frame in a history has the same members in the same order. Validate,
// Commit and Evaluate allocate nothing in steady state (an Extrapolator's
// own work aside). Neither Store nor Clock is safe for concurrent use.
package store
