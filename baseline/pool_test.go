package baseline

import "testing"

// TestPool: a table goes back to its pool when its last reference ends,
// not before; the pool hands it out again, zeroed, for any frame its class
// has room for; a table from no pool is never counted; the pool keeps no
// more than MaxPooledEntries members of free tables.
func TestPool(t *testing.T) {
	var p Pool
	a := p.Table(3)
	if len(a.Entries) != 3 || cap(a.Entries) != 4 || a.Refs() != 1 {
		t.Fatalf("Table(3): %d members, room for %d, %d references", len(a.Entries), cap(a.Entries), a.Refs())
	}
	a.ID, a.Entries[0].Q.X = 7, 99
	a.hold() // a sender keeps it
	p.Done(a)
	if p.Free() != 0 || a.Refs() != 1 {
		t.Fatalf("a table still held went back to the pool (%d free, %d references)", p.Free(), a.Refs())
	}
	a.drop()
	if p.Free() != 1 {
		t.Fatalf("%d free after the last reference ended, want 1", p.Free())
	}
	if b := p.Table(4); b != a || b.ID != 0 || len(b.Entries) != 4 || b.Entries[0].Q.X != 0 || b.Refs() != 1 {
		t.Fatalf("Table(4) did not reuse the free table of room 4 as a new one: %+v", b)
	}
	c := p.Table(5) // room for 8: nothing free of that class
	if c == a || cap(c.Entries) != 8 {
		t.Fatalf("Table(5): room for %d", cap(c.Entries))
	}

	lit := &Table{ID: 1}
	lit.hold()
	lit.drop()
	lit.drop()
	if lit.Refs() != 0 || p.Free() != 0 {
		t.Fatal("a table from no pool was counted")
	}

	var q Pool
	big := make([]*Table, 0, 3)
	for range 3 {
		big = append(big, q.Table(MaxPooledEntries/2))
	}
	for _, tb := range big {
		q.Done(tb)
	}
	if q.Free() != 2 || q.entries != MaxPooledEntries {
		t.Fatalf("%d free tables of %d members, want 2 of %d", q.Free(), q.entries, MaxPooledEntries)
	}
}
