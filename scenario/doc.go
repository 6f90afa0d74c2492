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
package scenario
