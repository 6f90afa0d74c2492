package baseline

// Clone returns an independent copy of the table.
func (t *Table) Clone() *Table {
	return &Table{ID: t.ID, Entries: append([]Entry(nil), t.Entries...), Frame: t.Frame}
}
