// Package broadcast is the authority's send path: what is live (identities,
// leases, manifests), a Welcome and catch-up for each joining observer,
// every observer's control messages in order, and each broadcast's frames
// encoded into datagrams. On wire 3 (the default) each frame is quantized
// once and coded per observer as a keyframe or a delta against the newest
// frame of the island that observer holds — learnt from its confirmations
// of the datagrams it was sent (codec.Received; package baseline) — with a
// keyframe at least every KeyframeEvery broadcasts, each island in its own
// turn so that keyframes spread evenly over broadcasts, and whenever asked
// (codec.Keyframes). No control message keeps the baseline window: it
// counts broadcasts, and both ends keep to it. An island's Physics goes to
// an observer as a PhysicsRef when the observer holds a description
// alike (islands built the same way share one): the broadcaster keeps each
// observer's table of held descriptions by the rule codec.PhysicsCache
// states, digests only. The same Physics gives the island's joint-
// prediction links (codec.NewLinks): keyframes and deltas of an island
// whose members hang on each other by pivot joints are coded against where
// the joints put them, which on the 240-link chain halves its bytes — all
// but a keyframe the observer asked for, which restores without the links. A frame cut into
// several datagrams carries up to DefaultParity Reed–Solomon parity records
// (Config.Parity): the frame still completes when up to that many of its
// datagrams are lost; with parity on, a frame of several members that
// would fill a quarter of a datagram or more is cut into two fragments
// so that parity protects it (codec.ParityCut). An observer whose own confirmations
// showed CleanAfter datagrams in a row received is sent none — on a clean
// path parity would only double a big frame's bytes — until one is lost.
// Under a budget, parity is paid from what the broadcast's frames leave of
// it: as many records per fragmented frame (up to Config.Parity) as fit,
// never a frame left out for parity, and none for a second after the
// budget left a frame out (Config.FixedParity spends them whatever the
// path loses); a frame that would fit a datagram is cut for parity only
// when what is left pays for its records twice over, so a lossy path with
// room protects big frames as an unbudgeted one does, and a path short of
// bytes, or near its congestion window, sends them whole.
//
// Every island is quantized at rigid precision
// (1/512 m, 2⁻¹² turn; DefaultClass) unless the game makes it decoration
// with SetClass or Config.Class (quant.Loose: 1/128 m, 2⁻⁹ turn). On wire 1 each
// broadcast is encoded once per distinct datagram cap and subscription and
// shared by every observer in that group. With Config.StampHistory it keeps
// each island's newest frames, so that CheckStamp can judge the view stamps
// observers attach to interactions (package stamp; SetCritical makes an
// island decoration there).
//
// # Budgets
//
// On wire 3 each observer may be held to a byte budget per broadcast: the
// smallest of Config.ObserverKbps, its share of Config.ServerKbps and what
// its path carries now (SetPathRate, which a transport feeds from its
// congestion window and round-trip time). The budget is filled with whole
// frames by priority accumulation: each broadcast an island gains its
// importance (Config.Importance, DefaultImportance from its motion, times
// SetWeight), the most important go first, and a sent island starts again
// from zero. A frame that does not fit is not encoded now rather than sent
// late; the island's next frame is coded against whatever baseline the
// observer still holds, so leaving an island out costs only its freshness.
// No island waits more than 2·⌈S/B⌉·(N + W/w) broadcasts (schedule.go
// states the terms). Budget reports each observer's last broadcast. The
// control bytes Take gives an observer come off its next broadcast's
// budget first, and so do bytes its transport sent it besides (Owe: the
// transport's copies of its control). With no cap and no path rate every
// frame goes, as before.
//
// # Areas of interest
//
// An observer may subscribe to regions (codec.Subscribe.Regions, axis-aligned
// boxes in world metres, sent again as its camera moves) instead of a list
// of islands. The broadcaster keeps each island's bounds from its frames;
// an island entering a region gets its catch-up before its first frame,
// and one out of every region grown by Config.InterestMargin for
// Config.InterestGrace broadcasts gets a Forget (interest.go). Under a
// budget, islands near a region's centre gain up to 8 times the
// importance (Config.FocusRadius), and islands entering enter nearest the
// centre first, their catch-ups taking at most half of each broadcast's
// budget (at least one island enters each broadcast; the rest wait), so a
// camera sweeping into a crowded area keeps the islands in view fresh.
//
// # Usage
//
//	bc, _ := broadcast.New(broadcast.Config{Timeline: rand.Uint64(), SendPeriod: 50_000})
//	bc.Join(id, maxDatagram)              // a connection arrived: Welcome + Announce queued
//	bc.FeedbackBytes(id, b)               // its stream: Subscribe (Lease + Manifest of each island it gains), Received, Keyframes
//	bc.Feedback(id, msg)                  // the same, one parsed message
//	for _, m := range changes { bc.Apply(m) } // Announce, Destroy, Lease, Manifest, Forget
//	bc.SetPathRate(id, bytesPerSecond)    // optional: what its path carries now
//	bc.Frames(frames)                     // one broadcast tick
//	ctl, dgs = bc.Take(id, ctl[:0], dgs[:0]) // write ctl to the stream, send dgs as datagrams
//	bc.Drain(id, &out)                    // or: the same in storage out and bc trade, for a caller done with it by the next Drain
//
// # Guarantees
//
//   - An observer gets no frame of an island before that island's Lease and
//     Manifest were queued on its control stream: frames of islands without
//     an applied Lease and Manifest are not sent to anyone (counted), and a
//     subscription's catch-up is queued the moment it is made, with
//     whatever of each island's Lease, Manifest and Physics is applied by
//     then: the rest goes to the observer live, as it is applied.
//   - A delta names only a frame the observer confirmed holding and still
//     keeps under the window rule; a new stream, segment or generation
//     always goes whole.
//   - Datagrams from Take are the caller's: their bytes are never written
//     again, so transports may queue them, or hand the same bytes to
//     several observers concurrently. On wire 1 each group of observers
//     (same cap, same subscription) costs one encoding per Frames call and
//     shares its bytes.
//   - Every table is capped (observers, islands, identities, acks).
//   - Reading an observer's feedback with FeedbackBytes — confirmations of
//     datagrams and keyframe requests — allocates nothing in steady state;
//     a confirmation costs the same whatever the number of islands, plus
//     the frames the datagrams it newly confirms carried.
//   - A broadcast allocates nothing in steady state (wire 3, observers
//     drained with Drain): the tables of its frames come from a
//     baseline.Pool and go back to it once no observer's datagram, confirmed
//     frame or partly confirmed frame refers to them any more (an island an
//     observer keeps as its anchor for long, asleep or out of interest, keeps
//     that one table), and each observer's datagrams are written into
//     storage Drain trades with the caller. Take copies them out instead:
//     two allocations per call.
//
// # Snapshots
//
// Clone copies a broadcaster whole — what is live, every observer's
// queues, what each observer holds and which datagram carried what —
// sharing only bytes and tables that nobody changes again (pooled tables
// and queued datagrams in an observer's storage are copied). Restrict cuts an observer's
// subscriptions to a set of islands (a connect token's).
//
// # Limits
//
// The Broadcaster does no I/O and keeps no backlog: Take and Drain hand
// everything over, and bounding what a slow observer has not yet sent is the
// transport's job. It starts no goroutine, reads no clock and is not safe
// for concurrent use.
package broadcast
