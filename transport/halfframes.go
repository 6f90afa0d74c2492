package transport

import (
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/receiver"
)

// tornCounter counts half-frames as an engine would see them: every member
// keeps the frame pair of the view that last placed it, and an island whose
// view shows poses is torn when the members of its manifest stand on
// different frame pairs. A missing view (no poses) places nothing — the
// engine hides the island — and is never torn. Everything placed belongs
// to one run of the authority: a Welcome (a reconnect or a new timeline)
// ends every identity, so what was shown before it is forgotten; without
// that, an island of the new run whose members the old run had in two
// islands counted as torn while it waited for its first frame.
type tornCounter struct {
	shown    map[island.MemberID][2]island.Key
	welcomes uint64 // Timelines + Reconnects when shown was last cleared
}

// maxShown bounds the members remembered: past it (identities of islands
// long gone) the counter starts over.
const maxShown = 1 << 17

func newTornCounter() *tornCounter {
	return &tornCounter{shown: map[island.MemberID][2]island.Key{}}
}

// count records the views of one render and returns how many of them are
// torn. welcomes is the receiver's Timelines + Reconnects; manifest looks
// up an island's current manifest.
func (c *tornCounter) count(views []receiver.IslandView, welcomes uint64, manifest func(uint32) (island.Manifest, bool)) int {
	if welcomes != c.welcomes || len(c.shown) > maxShown {
		clear(c.shown)
		c.welcomes = welcomes
	}
	for i := range views {
		v := &views[i]
		for _, p := range v.Poses {
			c.shown[p.ID] = [2]island.Key{v.Left, v.Right}
		}
	}
	n := 0
	for i := range views {
		if len(views[i].Poses) == 0 {
			continue // missing: nothing of it is shown
		}
		m, ok := manifest(views[i].Island)
		if !ok {
			continue
		}
		if r := views[i].Right; r.Topology != m.Topology || r.Config != m.Config {
			// A version the current manifest replaced, shown until playback
			// reaches the new one's first frame: its members are its own,
			// not the new manifest's (two islands merging each show whole
			// until the merge).
			continue
		}
		var first [2]island.Key
		have := false
		for _, id := range m.Members {
			src, ok := c.shown[id]
			if !ok {
				continue
			}
			if have && src != first {
				n++
				break
			}
			first, have = src, true
		}
	}
	return n
}
