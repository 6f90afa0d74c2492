package idtable

import "iter"

const (
	pageBits = 6
	pageSize = 1 << pageBits
)

// page holds the values of the 64 ids that share an id>>pageBits.
type page[T any] struct {
	slot [pageSize]*T
	n    int // values set
}

// Table maps uint32 ids to *T. The zero value is an empty table.
type Table[T any] struct {
	pages map[uint32]*page[T]
	lastK uint32   // page number of last
	last  *page[T] // the page Get used last; nil: none
	n     int
}

// pageOf returns the page of id, nil when it has no value.
func (t *Table[T]) pageOf(id uint32) *page[T] {
	k := id >> pageBits
	if t.last != nil && t.lastK == k {
		return t.last
	}
	p := t.pages[k]
	if p != nil {
		t.last, t.lastK = p, k
	}
	return p
}

// Get returns id's value, nil when it has none.
func (t *Table[T]) Get(id uint32) *T {
	if p := t.pageOf(id); p != nil {
		return p.slot[id&(pageSize-1)]
	}
	return nil
}

// Set makes v id's value; a nil v is Delete.
func (t *Table[T]) Set(id uint32, v *T) {
	if v == nil {
		t.Delete(id)
		return
	}
	p := t.pageOf(id)
	if p == nil {
		if t.pages == nil {
			t.pages = make(map[uint32]*page[T])
		}
		p = &page[T]{}
		k := id >> pageBits
		t.pages[k] = p
		t.last, t.lastK = p, k
	}
	s := &p.slot[id&(pageSize-1)]
	if *s == nil {
		p.n++
		t.n++
	}
	*s = v
}

// Delete removes id's value, if any.
func (t *Table[T]) Delete(id uint32) {
	p := t.pageOf(id)
	if p == nil {
		return
	}
	s := &p.slot[id&(pageSize-1)]
	if *s == nil {
		return
	}
	*s = nil
	p.n--
	t.n--
	if p.n == 0 {
		delete(t.pages, id>>pageBits)
		t.last = nil
	}
}

// Len returns the number of ids with a value.
func (t *Table[T]) Len() int { return t.n }

// Clear removes every value.
func (t *Table[T]) Clear() {
	clear(t.pages)
	t.last, t.n = nil, 0
}

// All yields every id with its value, in no set order. The table must not
// be changed during the iteration.
func (t *Table[T]) All() iter.Seq2[uint32, *T] {
	return func(yield func(uint32, *T) bool) {
		for k, p := range t.pages {
			for i, v := range p.slot {
				if v != nil && !yield(k<<pageBits|uint32(i), v) {
					return
				}
			}
		}
	}
}
