package baseline

import (
	"slices"

	"github.com/islandsync/islandsync/island"
)

// The window both ends keep to, counted in broadcasts (the sequence every
// frame of one broadcast shares), not per island, so that it costs no
// control message at all.
const (
	// Window is how many broadcasts back an observer keeps an island's
	// committed frames as baselines: a frame of broadcast s is kept while
	// the newest broadcast the observer has seen is below s + Window, and
	// the island's newest kept frame is kept whatever its age (the anchor).
	Window = 32
	// Slack is how many broadcasts late a datagram may arrive and still
	// find its baselines: the authority codes a delta at broadcast c only
	// against a frame of broadcast s with c − s < Window − Slack, or against
	// the newest frame of the island it sent the observer at all.
	Slack = 8
)

// MaxKept is the most tables a Kept holds: the frames of Window broadcasts,
// an anchor they superseded, and the newest.
const MaxKept = Window + 2

// Kept is one island's decode baselines at an observer: the tables of the
// frames it committed, ascending by sequence, at most MaxKept of them. The
// zero value holds nothing. Not safe for concurrent use.
//
// The sequences are held beside the tables, inline: finding, keeping and
// pruning read one short array rather than a table each, which matters
// when a receiver visits hundreds of islands per broadcast with the
// physics step between visits evicting them from the cache.
type Kept struct {
	n      int             // tables held: ids[:n], tables[:n]
	ids    [MaxKept]uint32 // ids[i] == tables[i].ID
	tables [MaxKept]*Table // ascending by ID
	spare  []*Table        // tables let go, for NewTable: storage sized for this island
}

// maxSpare bounds the tables a Kept holds for reuse.
const maxSpare = 4

// NewTable returns an empty table, recycled from those k let go when it
// can, so that keeping a baseline per broadcast allocates nothing once warm.
func (k *Kept) NewTable() *Table {
	if n := len(k.spare); n > 0 {
		t := k.spare[n-1]
		k.spare[n-1] = nil
		k.spare = k.spare[:n-1]
		t.Entries = t.Entries[:0]
		return t
	}
	return &Table{}
}

func (k *Kept) recycle(t *Table) {
	if len(k.spare) < maxSpare {
		k.spare = append(k.spare, t)
	}
}

// Find returns the table of frame seq, or nil.
func (k *Kept) Find(seq uint32) *Table {
	for i := k.n - 1; i >= 0; i-- { // the newest is named most
		if k.ids[i] == seq {
			return k.tables[i]
		}
	}
	return nil
}

// Newest returns the newest table kept, or nil.
func (k *Kept) Newest() *Table {
	if k.n == 0 {
		return nil
	}
	return k.tables[k.n-1]
}

// Len returns how many tables are kept.
func (k *Kept) Len() int { return k.n }

// Keep adds t, the table of a frame the observer committed, and lets go of
// every table the window no longer keeps given newest, the newest broadcast
// sequence the observer has seen: those of broadcasts at least Window
// before it, except the newest table. It reports whether t was kept (not
// when a table of the same sequence is held already). k owns t from now
// on; tables let go are reused by NewTable.
func (k *Kept) Keep(t *Table, newest uint32) bool {
	i := k.n
	for i > 0 && island.SeqNewer(k.ids[i-1], t.ID) {
		i--
	}
	if i > 0 && k.ids[i-1] == t.ID {
		k.recycle(t)
		return false
	}
	copy(k.ids[i+1:k.n+1], k.ids[i:k.n])
	copy(k.tables[i+1:k.n+1], k.tables[i:k.n])
	k.ids[i], k.tables[i] = t.ID, t
	k.n++
	k.Prune(newest)
	// The rule keeps at most Window frames of the window, the anchor it
	// superseded and the newest; the cap keeps the table bounded whatever
	// sequences arrive (the arrays have room for one more, just kept).
	if k.n > MaxKept {
		k.recycle(k.tables[0])
		k.remove(1)
	}
	return slices.Contains(k.tables[:k.n], t)
}

// remove drops the m oldest tables (already recycled or let go).
func (k *Kept) remove(m int) {
	copy(k.ids[:], k.ids[m:k.n])
	copy(k.tables[:], k.tables[m:k.n])
	clear(k.tables[k.n-m : k.n])
	k.n -= m
}

// Prune lets go of every table the window no longer keeps when newest is
// the newest broadcast the observer has seen: a table of a broadcast at
// least Window before it — but never the newest table, nor one whose next
// newer table is less than Slack broadcasts old (the authority may have
// coded a delta against it as its anchor just before sending that newer
// frame, and the delta may arrive after it). Keep prunes an island as it
// keeps a frame of it; a receiver prunes the islands that are not sent
// (bodies at rest, islands out of interest) now and then, so that their
// old frames do not linger.
func (k *Kept) Prune(newest uint32) {
	// Tables are in sequence order, so those to let go are a prefix.
	m := 0
	for m < k.n-1 && expired(k.ids[m], newest) && superseded(k.ids[m+1], newest) {
		k.recycle(k.tables[m])
		m++
	}
	if m > 0 {
		k.remove(m)
	}
}

// superseded reports whether a table whose next newer table is of
// broadcast next no longer serves as an anchor: next is at least Slack
// broadcasts before newest.
func superseded(next, newest uint32) bool {
	return !island.SeqNewer(next, newest) && newest-next >= Slack
}

// expired reports whether a frame of broadcast s is out of the window when
// the newest broadcast seen is newest.
func expired(s, newest uint32) bool {
	return !island.SeqNewer(s, newest) && newest-s >= Window
}

// Clone returns an independent copy: every table copied.
func (k *Kept) Clone() Kept {
	c := Kept{n: k.n, ids: k.ids}
	for i, t := range k.tables[:k.n] {
		c.tables[i] = t.Clone()
	}
	return c
}

// Usable reports whether the authority may code a delta of broadcast c
// against the frame of broadcast s that the observer confirmed, when last
// is the newest frame of the island sent to that observer: s within
// Window − Slack broadcasts of c, or s the newest frame sent (the observer
// keeps its newest frame of every island whatever its age).
func Usable(s, c, last uint32) bool {
	return s == last || (!island.SeqNewer(s, c) && c-s < Window-Slack)
}
