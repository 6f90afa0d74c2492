package baseline

import "github.com/islandsync/islandsync/island"

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
// A table of one member kept with KeepFrame may live in an Arena the
// observer's islands share rather than in storage of k's own; Prune moves
// it to k's own once its broadcast leaves the window, and Clear gives it
// back. Which tables are kept is the same either way.
//
// Everything is held inline, the tables in a ring with their sequences
// beside them: finding, keeping and pruning read one short array rather
// than a table each and move nothing, which matters when a receiver visits
// hundreds of islands per broadcast with the physics step between visits
// evicting them from the cache.
type Kept struct {
	head, n int              // the oldest table's slot; tables held
	nSpare  int              // beside head and n: the line Find reads
	inArena uint64           // bit s set: tables[s] is arena's, not k's own
	arena   *Arena           // the arena of the tables in inArena
	spare   [maxSpare]*Table // tables let go, for reuse: storage sized for this island
	ids     [ring]uint32     // ids[s] == tables[s].ID for every slot in use
	tables  [ring]*Table     // logical i (0: the oldest) at slot (head+i) % ring
}

// ring is the slots of a Kept: MaxKept and one for the table Keep inserts
// before it prunes.
const ring = MaxKept + 1

// inArena has a bit per slot.
const _ uint = 64 - ring

// maxSpare bounds the tables a Kept holds for reuse.
const maxSpare = 4

// slot is the slot of the i-th oldest table.
func (k *Kept) slot(i int) int {
	s := k.head + i // both below ring
	if s >= ring {
		s -= ring
	}
	return s
}

// NewTable returns an empty table, recycled from those k let go when it
// can, so that keeping a baseline per broadcast allocates nothing once warm.
func (k *Kept) NewTable() *Table {
	t := k.take()
	t.Entries = t.Entries[:0]
	return t
}

// KeepFrame keeps a copy of the frame f with members ents as Keep keeps
// a table: a frame of one member in a table of arena a when a is not nil
// and has one for it (Arena says why), any other in a table k let go
// before when it holds one. A receiver keeps every frame it commits this
// way and allocates nothing once warm.
func (k *Kept) KeepFrame(a *Arena, f *FrameInfo, ents []Entry, newest uint32) bool {
	i, dup := k.position(f.Key.Seq)
	if dup {
		return false
	}
	var t *Table
	fromArena := false
	if a != nil && len(ents) == 1 && (k.inArena == 0 || k.arena == a) && !expired(f.Key.Seq, newest) {
		if t = a.take(f.Key.Seq); t != nil {
			fromArena, k.arena = true, a
		}
	}
	if t == nil {
		t = k.take()
	}
	t.fill(f, ents)
	return k.insert(i, t, fromArena, newest)
}

// take returns a table k let go, or a new one, as it is.
func (k *Kept) take() *Table {
	if k.nSpare > 0 {
		k.nSpare--
		t := k.spare[k.nSpare]
		k.spare[k.nSpare] = nil
		return t
	}
	return newTable()
}

func (k *Kept) recycle(t *Table) {
	if k.nSpare < maxSpare {
		k.spare[k.nSpare] = t
		k.nSpare++
	}
}

// Find returns the table of frame seq, or nil.
func (k *Kept) Find(seq uint32) *Table {
	for i := k.n - 1; i >= 0; i-- { // the newest is named most
		if s := k.slot(i); k.ids[s] == seq {
			return k.tables[s]
		}
	}
	return nil
}

// Newest returns the newest table kept, or nil.
func (k *Kept) Newest() *Table {
	if k.n == 0 {
		return nil
	}
	return k.tables[k.slot(k.n-1)]
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
	i, dup := k.position(t.ID)
	if dup {
		k.recycle(t)
		return false
	}
	return k.insert(i, t, false, newest)
}

// position returns where a table of broadcast seq goes among those held
// (how many are older), and whether one of seq is held already.
func (k *Kept) position(seq uint32) (int, bool) {
	i := k.n
	for i > 0 && island.SeqNewer(k.ids[k.slot(i-1)], seq) {
		i--
	}
	return i, i > 0 && k.ids[k.slot(i-1)] == seq
}

// insert is Keep for a table t that goes i-th oldest, of k's arena when
// fromArena.
func (k *Kept) insert(i int, t *Table, fromArena bool, newest uint32) bool {
	for j := k.n; j > i; j-- { // frames arrive in order: this rarely moves any
		to, from := k.slot(j), k.slot(j-1)
		k.ids[to], k.tables[to] = k.ids[from], k.tables[from]
		k.setArena(to, k.isArena(from))
	}
	s := k.slot(i)
	k.ids[s], k.tables[s] = t.ID, t
	k.setArena(s, fromArena)
	k.n++
	held := k.n
	k.Prune(newest)
	// The rule keeps at most Window frames of the window, the anchor it
	// superseded and the newest; the cap keeps the table bounded whatever
	// sequences arrive.
	if k.n > MaxKept {
		k.drop(1)
	}
	// Both let go of the oldest tables only: t, the i-th oldest, stays
	// unless more than i went.
	return i >= held-k.n
}

// drop lets go of the m oldest tables.
func (k *Kept) drop(m int) {
	for range m {
		if h := k.head; k.isArena(h) {
			k.arena.release(k.ids[h])
			k.setArena(h, false)
		} else {
			k.recycle(k.tables[h])
		}
		k.tables[k.head] = nil
		k.head = k.slot(1)
		k.n--
	}
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
	// Tables are in sequence order, so those to let go are the oldest.
	m := 0
	for m < k.n-1 && expired(k.ids[k.slot(m)], newest) && superseded(k.ids[k.slot(m+1)], newest) {
		m++
	}
	k.drop(m)
	// A table of the arena still held once its broadcast left the window
	// (the anchor, or one the anchor rule keeps) moves to a table of k's
	// own, so that its broadcast's run in the arena comes free.
	for i := 0; i < k.n && k.inArena != 0; i++ {
		s := k.slot(i)
		if !expired(k.ids[s], newest) {
			break
		}
		if k.isArena(s) {
			k.ownCopy(s)
		}
	}
}

// ownCopy replaces the arena's table at slot s with a copy in a table of
// k's own, and gives the arena's back.
func (k *Kept) ownCopy(s int) {
	old := k.tables[s]
	t := k.take()
	t.fill(&old.Frame, old.Entries)
	t.ID = k.ids[s]
	k.tables[s] = t
	k.setArena(s, false)
	k.arena.release(k.ids[s])
}

// Clear lets go of every table, giving those of an arena back: for an
// island the observer forgets.
func (k *Kept) Clear() { k.drop(k.n) }

// isArena reports whether the table at slot s is k's arena's.
func (k *Kept) isArena(s int) bool { return k.inArena&(1<<uint(s)) != 0 }

// setArena records whether the table at slot s is k's arena's.
func (k *Kept) setArena(s int, in bool) {
	if in {
		k.inArena |= 1 << uint(s)
	} else {
		k.inArena &^= 1 << uint(s)
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

// Clone returns an independent copy: every table copied into storage of
// the copy's own, none in an arena.
func (k *Kept) Clone() Kept {
	c := Kept{head: k.head, n: k.n, ids: k.ids}
	for i := range k.n {
		s := k.slot(i)
		c.tables[s] = k.tables[s].Clone()
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
