package baseline

// Arena is where the Kepts of one observer keep their one-member tables,
// side by side, one run of tables per broadcast: the tables of broadcast s
// are handed out in the order the frames of s are kept, which is island
// order within a datagram. A receiver restoring a broadcast then reads its
// baselines — the frames of one earlier broadcast — and writes its new
// tables each as one stream through memory, which the processor fetches
// ahead, rather than as hundreds of tables scattered over the heap, each
// cold in the cache after the physics step. On the Fiedler scene (900
// one-body islands) that made the receive about 5 % cheaper, where the
// physics step runs between receives; with everything warm in the cache
// the arena's bookkeeping costs a few nanoseconds per frame kept more
// (BenchmarkKept).
//
// A Kept takes a table from an arena in KeepFrame and gives it back when it
// lets go of it; a table still kept once its broadcast leaves the window
// (an island's newest frame, kept whatever its age) is copied by Prune into
// a table of the Kept's own, so that a broadcast's run is free again once
// every Kept holding one of its tables was pruned. A broadcast whose slot
// is still held by an older broadcast's tables, or whose run is full, gets
// tables of the Kept's own instead: the arena only changes where tables
// live, never what is kept.
//
// The zero value is ready to use, with at most DefaultArenaTables tables
// per broadcast. Not safe for concurrent use; a Kept keeps to one arena.
type Arena struct {
	// MaxTables caps the tables handed out per broadcast: the memory an
	// arena may hold is about arenaSlots × MaxTables tables. Zero means
	// DefaultArenaTables. A receiver sets it to its cap on islands.
	MaxTables int

	slots [arenaSlots]arenaSlot
}

// DefaultArenaTables is an Arena's default cap on tables per broadcast.
const DefaultArenaTables = 4096

// arenaSlots is how many broadcasts' runs an arena holds, the run of
// broadcast s in slot s % arenaSlots: more than Window + Slack, the
// broadcasts whose tables a Kept may hold before Prune lets them go or
// copies them out, so that a slot is free when its next broadcast comes.
const arenaSlots = 48

// arenaChunk is the tables allocated at a time for one slot.
const arenaChunk = 256

// arenaSlot is the run of tables of one broadcast.
type arenaSlot struct {
	seq     uint32               // the broadcast whose run it is
	n, live int                  // tables handed out; of them, still kept
	chunks  []*[arenaChunk]Table // storage, kept for the slot's next broadcasts
}

// take returns the next table of broadcast seq's run, as it is (stale
// contents; fill sets every field a kept table uses), or nil when the slot
// is held by another broadcast's tables or the run is full.
func (a *Arena) take(seq uint32) *Table {
	sl := &a.slots[seq%arenaSlots]
	if sl.seq != seq || sl.live == 0 {
		if sl.live > 0 {
			return nil // an older broadcast's tables are still kept there
		}
		sl.seq, sl.n = seq, 0 // none handed out is kept: the storage is free
	}
	max := a.MaxTables
	if max <= 0 {
		max = DefaultArenaTables
	}
	if sl.n >= max {
		return nil
	}
	c := sl.n / arenaChunk
	if c == len(sl.chunks) {
		sl.chunks = append(sl.chunks, new([arenaChunk]Table))
	}
	t := &sl.chunks[c][sl.n%arenaChunk]
	sl.n++
	sl.live++
	return t
}

// release gives back a table of broadcast seq's run that a Kept let go.
func (a *Arena) release(seq uint32) {
	if sl := &a.slots[seq%arenaSlots]; sl.seq == seq && sl.live > 0 {
		sl.live--
	}
}

// Reset frees every run at once, for an observer that dropped every Kept
// holding tables of a (a sequence numbering that starts over). Storage is
// kept for reuse.
func (a *Arena) Reset() {
	for i := range a.slots {
		a.slots[i].n, a.slots[i].live = 0, 0
	}
}

// Live returns how many tables handed out are still kept.
func (a *Arena) Live() int {
	n := 0
	for i := range a.slots {
		n += a.slots[i].live
	}
	return n
}
