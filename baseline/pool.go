package baseline

import "math/bits"

// Pool recycles the authority's tables, so that making a table of every
// island's frame per broadcast allocates nothing once warm. A table from
// Table counts its references: the caller's own, until Done, and one for
// each place a Sender keeps it (a datagram it was carried in, an
// observer's confirmed frame, a fragmented frame being confirmed). When
// the last one ends, the table goes back to the pool, and Table hands it
// out again. Tables from anywhere else (a Table literal) are never
// counted nor recycled.
//
// The pool keeps at most MaxPooledEntries members' worth of free tables;
// past that a table let go is left to the garbage collector. The zero
// value is an empty pool. Not safe for concurrent use, and neither are its
// tables' counts: every Sender holding its tables must be driven by the
// same goroutine (Sender.Clone copies counted tables rather than share
// them).
type Pool struct {
	free    [poolClasses][]*Table // by capacity class: cap(Entries) ≥ 1<<class
	entries int                   // members' capacity of the free tables
}

// MaxPooledEntries bounds a Pool's free tables, in members of capacity
// (about 80 bytes each).
const MaxPooledEntries = 1 << 18

// poolClasses covers every int capacity.
const poolClasses = 64

// class is the capacity class a table of n members is taken from: the
// smallest k with 1<<k ≥ n.
func class(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}

// Table returns a table of n members (each zero) with ID and Frame zero,
// counted with one reference: the caller's, ended by Done.
func (p *Pool) Table(n int) *Table {
	c := class(n)
	var t *Table
	if l := len(p.free[c]); l > 0 {
		t = p.free[c][l-1]
		p.free[c][l-1] = nil
		p.free[c] = p.free[c][:l-1]
		p.entries -= cap(t.Entries)
		t.ID, t.Frame = 0, FrameInfo{}
		t.Entries = t.Entries[:n]
		clear(t.Entries)
	} else { // room for the whole class, so that the table serves any frame of it
		t = &Table{Entries: make([]Entry, n, 1<<c)}
	}
	t.pool, t.refs = p, 1
	return t
}

// Done ends the caller's reference to a table Table returned.
func (p *Pool) Done(t *Table) { t.drop() }

// Free returns how many tables the pool holds for reuse.
func (p *Pool) Free() int {
	n := 0
	for _, l := range p.free {
		n += len(l)
	}
	return n
}

// put takes back a table nobody refers to any more.
func (p *Pool) put(t *Table) {
	c := cap(t.Entries)
	if c == 0 || p.entries+c > MaxPooledEntries {
		t.pool = nil // the garbage collector's now
		return
	}
	k := bits.Len(uint(c)) - 1 // every table of class k has room for 1<<k
	p.free[k] = append(p.free[k], t)
	p.entries += c
}

// hold counts one more reference to a pooled table.
func (t *Table) hold() {
	if t != nil && t.pool != nil {
		t.refs++
	}
}

// drop ends one reference to a pooled table, handing it back to its pool
// when it was the last.
func (t *Table) drop() {
	if t == nil || t.pool == nil {
		return
	}
	if t.refs--; t.refs == 0 {
		t.pool.put(t)
	}
}

// Refs returns how many references to t are counted: 0 for a table from
// no pool, or one back in its pool.
func (t *Table) Refs() int { return int(t.refs) }

// setRef points *at at t, counting the reference moved.
func setRef(at **Table, t *Table) {
	if *at == t {
		return
	}
	t.hold()
	(*at).drop()
	*at = t
}
