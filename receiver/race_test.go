//go:build race

package receiver

// raceEnabled: the race detector slows everything several times over; the
// big world test then does not run.
const raceEnabled = true
