// Package receiver is the observer's whole receive path in one value:
// datagram decoder, fragment assembler, identity registry, validator, frame
// store and playout clock, wired the one way that keeps frames whole.
//
// # Usage
//
// One Receiver per observer connection, owned by the engine's network or
// game thread. Push what arrives, with the local time now in microseconds of
// a monotonic clock; read whole islands out once per render tick:
//
//	rx, _ := receiver.New(receiver.Config{})
//	// control stream, in order:   n, err := rx.ControlBytes(now, b) (or rx.Control(now, msg))
//	// each datagram:              rx.Datagram(now, b)
//	// each render tick:
//	for _, v := range rx.Render(now) {
//		for _, p := range v.Poses { engine.SetPose(p.ID, p.State) } // one frame pair per island
//	}
//	// every 50–100 ms, back to the authority: out = rx.Feedback(out[:0])
//
// A stand-in observer for load tests calls rx.Confirm(b) instead of
// rx.Datagram: the datagram is confirmed without being restored, so the
// authority treats it as received in full, and nothing is shown.
//
// # What it takes care of
//
//   - Control before frames: a frame validates only against the lease,
//     manifest, identities and Physics the control stream delivered. Over
//     QUIC a datagram can overtake the stream (which waits for a lost
//     packet while datagrams do not): a wire-3 datagram whose whole frames
//     failed only for want of such a message — no lease, a newer epoch,
//     topology or config than known, no manifest, an identity not yet
//     announced, no links — is held (Config.MaxParked datagrams, the oldest
//     going first, each at most Config.ParkFor) and received again,
//     validated against the control of that moment, at the next Datagram
//     or Render once control changed; committed then, it is confirmed
//     then. Nothing is guessed. Stats.Wire counts datagrams held, held
//     ones committed and let go ("wire:park-dropped"), and how long the
//     committed ones waited (ParkedWait); the stages count a
//     held datagram's records again each time it is received (a frame it
//     committed the first time then counts as a store duplicate). A frame
//     cut into several datagrams is held the same way once reassembled —
//     its restored members, up to as many frames again, counted apart
//     (FramesParked, "wire:frame-park-dropped") — and a keyframe is asked
//     for meanwhile: a hand-over's first frame of a big island comes in
//     the same broadcast as the new Lease, and its datagrams often first.
//   - The playout clock follows the authority's timeline (Welcome), not an
//     island's ownership epoch: a hand-off of one island does not restart
//     the others' playout. Every Welcome resets every stage through one
//     path — identities, leases, manifests, histories, frames in reassembly
//     with their streams' sequence state, parity, decode baselines,
//     datagram confirmations and keyframe requests — since the catch-up that follows
//     restates what is live and a restarted authority numbers its frames
//     from zero again; a new timeline also puts the clock back to Waiting,
//     while a reconnect to the same timeline keeps it.
//   - Lease changes reach the store, which reports hand-off latency.
//   - Changes happen at their authority time, not when their news arrives
//     (about one interpolation delay earlier): an island new at r — its
//     first frame an Initial one later than r (spawned, split off, merged),
//     or its identities announced for a later time (so a lost Initial
//     frame does not show it early) — is not shown yet and does not count
//     against ViewReady; a Spawn gives its state at that time on the
//     reliable stream, committed as its first frame, so it is shown valid
//     from then on even when that frame's datagram is lost; a Final (a
//     relayed hand-off's last state under the old lease, just before the
//     new Lease) is committed as the frame it repeats, so a datagram the
//     new Lease overtook costs no sample; a new
//     version of an island (topology, config, owner) is shown from its
//     first frame on, the old one until then (package store); a Destroy
//     tombstones its identities and a Forget drops its island when playback
//     reaches their time. One whose time playback has passed takes effect
//     at once (Stats.LateEvents); a Manifest of an island whose Forget
//     waits cancels it.
//   - Wire 3: each island keeps its own decode baselines, apart from the
//     display history: its frames of the last 32 broadcasts and always its
//     newest, and a newest just superseded for 8 broadcasts more (package
//     baseline; old ones of islands not sent are let go within 8
//     broadcasts). The one-body tables of all islands are kept in one
//     baseline.Arena, broadcast by broadcast, whose memory is capped at
//     48 broadcasts of Config.Validator.MaxIslands tables. A delta or run naming a baseline not held, or a
//     frame that validation refuses, is refused whole and a keyframe asked
//     for; every frame that passes validation becomes a baseline, whether
//     or not the history still wanted it. The frames that came whole in one
//     record each are restored together and committed only when the
//     datagram's sum over their integers holds — a forged or mismatched
//     baseline, or altered bytes, commit nothing — then validated from
//     their restored members without reassembly (the store refuses a
//     repeat); a fragment's restored integers go to the assembler as
//     quantized records, the frame completes only when every part arrived
//     and its frame sum over those integers matches the digest every part
//     carries, and it is validated from them and kept as a baseline — no
//     member ever passes through version 1's float records. Feedback
//     encodes what goes back: Keyframes for
//     the islands refused, then Received, which confirms the datagrams
//     that arrived — one 17-byte message whatever the number of islands.
//   - Wire 3 parity: the assembler keeps the records of frames that carry
//     parity, under its own TTL and caps (package assembler, Parity); the
//     fragments it rebuilds come back to be restored and reassembled like
//     any other, frame sum included. Its outcomes Rebuilt, RejectParity
//     ("assembler:parity-bad") and ParityDropped count what happened.
//   - Islands move as the authority moves them, joints and all: each
//     Physics control message describes a local simulation of its island
//     (package localsim), whose space is built the first time the island
//     runs past its newest frame. Past that frame the island continues under
//     its gravity, joints and ground contacts; a wide frame pair is crossed
//     along that continuation; and every view is settled so that its joints
//     stand as in the frames it came from — blends never stretch a joint
//     the authority did not. Without a Physics message for the frame's
//     topology and config, members move along their own velocities. A
//     PhysicsRef stands for a Physics whose description the connection
//     sent before (codec.PhysicsCache); OnControl is handed that Physics.
//     Config.MaxSimBodies caps the simulations' bodies. Each simulation
//     that has stepped also holds about half a megabyte of cp's buffers,
//     whatever its bodies (localsim's doc; 1.7 MB on average, kept bridges
//     included, in a soak of 16 watchers), so a space that has not run for
//     Config.SimIdle (30 s) is let go and built again at the island's next
//     gap (Stats.SimSpaces, SimReleased);
//     Config.StraightExtrapolation turns it all off. The same Physics
//     gives the island's joint-prediction links (codec.NewLinks, kept
//     for its two latest topology and config pairs whatever the local
//     simulation's settings): a joint-predicted keyframe or delta is
//     restored with those of its (baseline's) topology and config, and
//     without them it commits nothing, is counted (WireStats.NoLinks,
//     "wire:no-links") and asks for a keyframe — which comes without
//     joint prediction.
//   - Every known island has a view: one without a valid pose at r comes as
//     missing (Mode store.Empty, no poses), and ViewReady says whether every
//     island critical to interaction is valid at r (never while the clock is
//     Waiting to re-anchor); the game makes an island decoration with
//     SetCritical, and its staleness then blocks nothing. Stamp gives the
//     last view's stamp (codec.ViewStamp: timeline, r, playback generation,
//     age, and per island epoch, segment and validity) for the game to
//     attach to an interaction, which the authority judges (package stamp). While the clock is Frozen the views are held as last
//     shown; a Cut control message ends a segment at its time.
//
// # Islands left out
//
// An authority under a byte budget leaves some islands out of some
// broadcasts. Such an island keeps the time of its own newest frame: it is
// shown extrapolated from it, then Stale (held, not valid at r) once r is
// past it by more than the clock's extrapolation cap, and ViewReady is
// false while a critical island is. Stats.OldestIsland says how far past
// its newest frame the stalest island was at the last Render,
// Stats.StaleIslands how many were Stale.
//
// # Snapshots
//
// Clone copies a receiver whole — every stage's state and counters — so
// that many runs can start from one warm state (the fuzz targets start
// every input from a clone of a receiver 30 snapshots into a run). Local
// simulations are rebuilt in the copy rather than copied.
//
// # Limits
//
// Every table is capped through Config (identities, tombstones, leases,
// manifests, pending fragments and bytes, histories). Bad datagrams are
// counted in Stats, never returned; Stats.Rejects names every reason as
// "stage:reason". Render's views are valid until the next Render.
// Datagram, Render, Feedback and ControlBytes (messages that change what
// is live, such as a Manifest, allocate what they keep)
// allocate nothing in steady state, except what cp allocates for bodies in
// contact while a local simulation steps them; Control with a message from
// codec.ParseControl costs that message's allocations. Nothing
// here starts a goroutine, reads a clock or does I/O; a Receiver is not safe
// for concurrent use.
package receiver
