// Package island holds the value types that every stage of islandsync shares:
// the composite frame key, serial-number sequence arithmetic, stable member
// identities, body states, whole-island frames, topology manifests and
// authority leases.
//
// # What it owns
//
// A constraint island is a set of dynamic bodies joined by constraints. The
// authority samples the whole island at one simulation time and names the
// sample with a [Key]: (Island, Epoch, Topology, Config, Seq). Each part
// rejects a different kind of staleness and they are never folded into one
// number:
//
//   - Epoch rejects packets of a previous owner after an authority hand-off.
//   - Topology rejects frames of an older membership or joint graph.
//   - Config rejects frames sampled under older constraint parameters.
//   - Seq orders frames within one stream; it wraps, so compare it with
//     [SeqNewer] or [SeqCompare], never with <.
//
// Members are named by [MemberID] (a stable id plus a generation), never by a
// server-side object pointer or index. A reused id with a new generation is a
// different object.
//
// # Units
//
// Authority time ([Time]) is an integer count of microseconds on the
// authority's simulation clock. Positions are metres, angles radians,
// velocities metres per second and radians per second. The library does not
// interpret the physical units; it only carries them.
//
// # Limits
//
// Every value here is plain data: no goroutines, no clock, no I/O. A [State]
// holding NaN or ±Inf is invalid everywhere; [State.Validate] and
// [Frame.Validate] say so and the codec refuses to encode or decode one.
package island
