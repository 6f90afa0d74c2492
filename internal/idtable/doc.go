// Package idtable holds one value per island id for the stages of the
// receive path (validator, store): ids that lie close together share a
// page of slots, so that the islands of one datagram — consecutive ids,
// mostly — are found with an index into a page the table already holds
// rather than with a hash lookup each.
//
// Usage:
//
//	var t idtable.Table[history]
//	t.Set(42, &history{})
//	h := t.Get(42) // nil when 42 has no value
//	t.Delete(42)
//
// Limits: a Table keeps no cap of its own — its owner caps how many ids it
// sets, as every table of the receive path does. Memory is one 512-byte
// page per 64-id range that holds at least one value, however far apart the
// ids are, so a hostile spread of ids costs at most one page per value set.
// A page goes when its last value does. Get remembers the page it last
// used: a Table is not safe for concurrent use, not even for reading.
package idtable
