// Package scenario holds the demo's physics scenarios — a bridge, a long
// chain, ragdolls, a breaking joint, a config change, an authority hand-off
// and a teleport — and Authority, which runs any set of them side by side on
// one authority timeline and turns what happens into control messages and
// sampled frames. The demo and cmd/islandserver are built on it.
//
// Each world gets its own range of stable ids (IDSpan), so islands of
// different scenarios never share an id; Restart rebuilds every world with
// fresh ids on the same timeline, destroying the old identities and
// forgetting the old islands.
//
// A shard authority (NewShardAuthority) steps only the worlds it gained,
// for a cluster: it starts on a step of the timeline that is a multiple of
// the steps between broadcasts, so that every authority of one timeline
// samples at the same instants; a gained world's script counts from the
// timeline's origin, not from the gain, so every holder of a shard agrees
// on what its script has done — a world gained after a scripted event
// starts with it done, and it does not happen again (each Authority's own
// worlds, and those Restart builds, count from when they were built); a
// world it gains continues from the
// states a Continue gives, first run forward to now when they are at most
// MaxCatchUp steps old (Gain, or Prepare on another goroutine and Adopt
// on the authority's, for a caller whose loop must not wait for the
// build); and one whose steps fell behind the clock moves its
// time on without stepping (Behind, Skip). It reads no clock itself: the
// caller passes the timeline's time.
package scenario
