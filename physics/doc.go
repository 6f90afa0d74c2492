// Package physics is the authority side of islandsync on Chipmunk2D
// (github.com/jakecoffman/cp/v2): a World stepped at a fixed rate whose
// dynamic bodies carry stable ids, grouped into constraint islands, and a
// Sampler that captures whole islands at one simulation time.
//
// # What it owns
//
//   - Islands are the connected components of dynamic bodies linked by
//     constraints; the static body joins none. An island's id is its
//     smallest member stable id, so a split keeps the id on the part holding
//     that member and a merge keeps the smaller id. Members are listed in
//     ascending MemberID order (the manifest order).
//   - Version counters per island: Topology bumps when its member or joint
//     set changes (add, remove, break, split, merge); Config bumps on
//     constraint parameter changes (SetSlideRange); Epoch bumps on authority
//     hand-off (HandOff); Segment bumps on teleport (Teleport). An id that
//     disappears and later returns continues its counters.
//   - Sampler: every island at a fixed broadcast cadence independent of the
//     step rate (e.g. 60 Hz step, 20 Hz send), on the steps of the
//     authority's timeline that are a multiple of the steps between
//     broadcasts (World.StepBase counts the timeline's steps before the
//     world's first), so worlds built at different times sample at the same
//     instants; a fresh island (new, changed, handed off) goes out at once
//     with FlagInitial; Releasing frames mark the last frame before a
//     hand-off.
//   - Replica: the observer's kinematic cp twin of the scene. ApplyIsland
//     poses a whole island in one call; every pose carries its Source (the
//     frame or frame pair it came from), and Measure reports displayed joint
//     error and half-frames (a joint whose bodies show different sources).
//   - JointError: how far displayed poses violate a pivot, pin or slide
//     joint — the measure of a torn structure.
//
// # Limits
//
// The world is single-threaded and not safe for concurrent use. Each step
// runs Substeps solver steps so long chains hold their joints. Event and
// island order are deterministic for a given construction order.
package physics
