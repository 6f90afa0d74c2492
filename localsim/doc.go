// Package localsim is the observer's own physics: it continues a
// constraint island past the newest frame the authority sent, and keeps
// the island's joints standing in whatever the observer shows.
//
// An Island is built from the island's Physics control message (package
// codec): the authority's step, solver iterations, gravity and damping,
// every member's mass, moment and collision box, every joint, and the
// static ground. It owns a cp/v2 space holding exactly that, built the
// first time a continuation needs it: New only checks and keeps the
// description, so an island whose topology changes many times a second
// (stacks of loose boxes that touch and part) pays for a space only when
// the observer actually runs past its newest frame.
//
//   - Continue seeds the space from a frame's poses and velocities and
//     steps it at the authority's fixed step to the time asked for,
//     blending the two steps around it. Asked again for the same frame and
//     a later time — the next render tick — it carries on, so a tick costs
//     what the authority spends on the island in the same time (its solver
//     steps). Past a step cap it holds.
//   - Bridge crosses a wide frame pair (frames lost between them) along
//     the continuation of the first frame, moved by a growing share of the
//     gap to the second, so swinging bodies follow their arcs rather than
//     the chords a straight blend cuts. The continuation is simulated once
//     per pair and kept (up to 64 solver steps and 16 384 states, 786 kB;
//     65 states, 3 kB, a body), so the pair's later render ticks cost no
//     steps.
//   - Settle moves and turns shown poses as little as it can so that every
//     joint stands as the frames they were blended from have it
//     (Separations), solving all the island's joints at once in a banded
//     factorization. It fixes what blending and correction break and keeps
//     what the authority's own solver leaves.
//
// Package receiver wires an Island into the store (store.Extrapolator) for
// every island it has a Physics message for; an engine using the receiver
// needs nothing more.
//
// Limits: only the island's own bodies and the static ground are in the
// space — contacts with other islands are not. The authority's solver
// impulses do not travel: a continuation warms its solver for WarmSteps
// steps at the frame's state, and still a long, fast chain drifts from the
// authority by up to a few centimetres within a tenth of a second; the
// continuation is still several times closer than moving each body along
// its own velocity, and its joints hold. A Physics message is
// hostile input: New refuses masses or moments outside [1e-9, 1e9], lengths
// over 100 km and gravity over 1e4 m/s², a frame further than 100 km out
// or faster than 100 km/s is not continued, and a solver that blows up
// stops (the caller then moves the members along their velocities); Settle
// drops a correction that is not finite. Memory: an Island that has
// stepped holds about half a megabyte whatever its size — cp gives each
// space a contact-buffer ring and tree-node pools of a fixed size
// (BenchmarkIslandMemory: 739 kB for a 6-body ragdoll, 457 kB for the
// 40-body bridge, 601 kB for the 240-link chain) — so a receiver's
// MaxSimBodies, which counts bodies, does not bound it; Release lets a
// space go (the receiver does so after Config.SimIdle unused), and the
// next continuation builds it afresh. The package is not
// pure: cp
// allocates and numbers bodies, so spaces are built through package
// physics, which serializes that. An Island is not safe for concurrent
// use.
package localsim
