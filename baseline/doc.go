// Package baseline is what both ends know of the decode baselines of wire
// 3: which frames an observer holds to decode deltas against, and how the
// authority learns it without feedback that grows with the world.
//
// A Table is one island frame in quantized form — per body an integer
// motion record (quant.State), the authority time it was observed at and
// its continuity segment — with the frame's key, sender, time, segment and
// class (FrameInfo), which a delta against it inherits.
//
// # Confirmations count datagrams, not islands
//
// The authority numbers the datagrams it sends each observer. The observer
// confirms datagrams (Arrivals: the newest number and a bitfield of the 64
// before it — one 17-byte control message whatever the number of islands),
// and the authority's Sender, which remembers which frames each of the last
// Remembered datagrams carried, derives from them each island's newest
// frame the observer holds (Track). A frame cut into several datagrams
// counts once every datagram with its data is confirmed. A confirmed
// datagram means every frame in it is held, except frames of islands the
// observer asked for whole (codec.Keyframes, sent first): Track.Refused
// forgets what is held and keeps frames sent before the request from
// counting.
//
// # The window counts broadcasts
//
// Both ends keep to one rule, with no control message at all: an observer
// keeps an island's frames of the last Window (32) broadcasts, counted from
// the newest broadcast it has seen, always the island's newest frame (the
// anchor) whatever its age, and an anchor a newer frame superseded for Slack
// broadcasts more (Kept). The authority codes a delta of
// broadcast c against a confirmed frame of broadcast s only when
// c − s < Window − Slack (24), or when s is the newest frame of the island
// it sent the observer at all (Usable) — so a datagram up to Slack (8)
// broadcasts late still finds its baseline, and an island at rest for
// minutes still costs a predicted island against its anchor. Anything else goes
// whole. An observer therefore holds at most MaxKept (34) frames per island.
//
// # Tables are recycled
//
// The authority makes a table of every island's frame per broadcast. A
// Pool hands them out and takes each back once nothing refers to it any
// more: the Sender counts the references it keeps (a datagram that carried
// the table, an observer's confirmed frame, a fragmented frame being
// confirmed), so a steady broadcast allocates no table at all. Tables
// made any other way are never counted nor recycled. An observer keeps
// each frame it commits with Kept.KeepFrame, which copies it into a table
// the island's window let go: a steady receive allocates none either. A
// table of one body (most islands of a busy world) holds it inline, so
// reading or writing one that is cold in the cache misses once, and an
// observer's islands keep such tables in one Arena, side by side
// broadcast by broadcast, so that a receive reads its baselines and
// writes its new tables as streams through memory rather than one
// scattered table per island. The arena changes where tables live, never
// which are kept: a table still kept when its broadcast leaves the window
// is copied out into the island's own.
//
// Everything here is a pure state machine: no clock, no goroutine, no I/O,
// not safe for concurrent use.
package baseline
