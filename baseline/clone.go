package baseline

// Clone returns an independent copy of the table.
func (t *Table) Clone() *Table {
	return &Table{ID: t.ID, Entries: append([]Entry(nil), t.Entries...), Frame: t.Frame}
}

// Clone returns an independent copy of the receiver window: its
// generation, every table it holds, the packets it keeps for later, and
// its counters.
func (r *Receiver) Clone() *Receiver {
	c := &Receiver{gen: r.gen, ids: append([]uint32(nil), r.ids...), maxBodies: r.maxBodies, stats: r.stats,
		slots: make([]*Table, len(r.slots)), held: make([]Packet, len(r.held))}
	for i, t := range r.slots {
		c.slots[i] = t.Clone()
	}
	for i, p := range r.held {
		p.Changes = append(p.Changes[:0:0], p.Changes...)
		c.held[i] = p
	}
	return c
}

// Clone returns an independent copy of the sender window. Tables are
// shared, not copied: a table that was sent is never changed again.
func (s *Sender) Clone() *Sender {
	c := *s
	c.sent = append(make([]*Table, 0, maxSent), s.sent...)
	c.acked = append(make([]*Table, 0, Slots), s.acked...)
	return &c
}
