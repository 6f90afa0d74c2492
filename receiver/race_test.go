//go:build race

package receiver

// raceEnabled: the race detector slows everything several times over; the
// big world test and the long budget tests then do not run.
const raceEnabled = true
