//go:build race

package transport

// raceEnabled: the race detector slows everything several times over; the
// end-to-end test then runs fewer watchers.
const raceEnabled = true
