//go:build race

package cluster

// raceEnabled: the race detector slows the physics several times over, so
// that a cluster on 2 cores falls behind real time; what depends on keeping
// up with it (the playout never going back to Waiting) is not checked then.
const raceEnabled = true
