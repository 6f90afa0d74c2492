package baseline

import (
	"slices"
	"testing"
)

// FuzzAcks drives the acknowledgement model — an authority's Sender and an
// observer's Kept tables and Arrivals — through a lossy, reordering,
// delaying channel both ways (feedback in order, as on the reliable
// stream; only a feedback without keyframe requests may be lost), with
// operations read from the input:
// broadcasts of three islands (each sent or not, whole or in two
// datagrams), datagrams delivered in any order or lost, feedback produced,
// delayed or lost, keyframe requests, pruning. It checks the property the
// wire rests on: a delta the authority codes against a baseline finds that
// baseline at the observer whenever its datagram arrives no more than
// Slack broadcasts late; and no island ever holds more than MaxKept
// tables. The authority's tables come from a Pool, the sender is cloned
// (and the original let go) and islands are forgotten now and then: after
// every operation each pooled table counts exactly the references the
// sender holds to it, and none the pool holds free is referenced.
func FuzzAcks(f *testing.F) {
	f.Add([]byte{0, 0xff, 1, 0, 3, 4, 0, 0xff, 1, 0, 1, 0, 3, 4})
	f.Add([]byte{0, 0x3f, 0, 0x3f, 1, 1, 1, 0, 1, 0, 3, 6, 4, 0, 0x3f, 1, 0, 1, 0, 1, 0})
	seed := make([]byte, 0, 600)
	for i := 0; i < 100; i++ {
		seed = append(seed, 0, byte(i*37), 1, byte(i), 3, 4, 5)
	}
	f.Add(seed)
	// Fragmented frames confirmed, an island forgotten, the sender cloned,
	// and broadcasts on against what the clone holds.
	f.Add([]byte{0, 0x3f, 1, 0, 1, 0, 1, 0, 3, 4, 0, 0x3f, 1, 0, 1, 0, 3, 4, 7, 1, 8, 0, 0x3f, 1, 0, 1, 0, 1, 0, 3, 4,
		8, 0, 0x07, 2, 0, 1, 0, 3, 4, 0, 0x07, 1, 0, 3, 4})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const islands = 3
		type rec struct {
			island      uint32
			seq, base   uint32
			delta       bool
			part, parts int
			table       *Table // the authority's table of the frame, one per frame
		}
		type datagram struct {
			num  uint32
			seq  uint32
			recs []rec
		}
		type feedback struct {
			keys          []uint32
			newest        uint32
			prior         uint64
			hasReport     bool
			barrierBefore uint32
		}
		s := NewSender(0)
		var pool Pool
		var made []*Table // every table the pool made
		check := func(op byte) {
			if l := s.Loss(); !(l >= 0 && l <= 1) {
				t.Fatalf("op %d: loss estimate %v", op, l)
			}
			count := map[*Table]int{}
			for _, tr := range s.tracks {
				count[tr.acked]++
				count[tr.part]++
			}
			for i := range s.ring {
				for _, c := range s.ring[i].carried {
					count[c.table]++
				}
			}
			for _, tb := range made {
				if tb.pool != nil && int(tb.refs) != count[tb] {
					t.Fatalf("op %d: table %d counts %d references, the sender holds %d", op, tb.ID, tb.refs, count[tb])
				}
			}
			for _, l := range pool.free {
				for _, tb := range l {
					if count[tb] != 0 || tb.refs != 0 {
						t.Fatalf("op %d: table %d is free yet referenced", op, tb.ID)
					}
				}
			}
		}
		var tracks [islands]*Track
		for i := range tracks {
			tracks[i] = s.Track(uint32(i))
		}
		var kept [islands]Kept
		var arr Arrivals
		var inFlight []datagram
		var fb []feedback
		var keyReq []uint32
		parts := map[[2]uint32]int{} // (island, seq) → parts arrived
		var seq, packet, newest uint32
		seen := false
		for i := 0; i < len(ops); i++ {
			arg := 0
			if i+1 < len(ops) {
				arg = int(ops[i+1])
			}
			op := ops[i] % 9
			switch op {
			case 0: // a broadcast: bit k of arg sends island k; bit 3+k cuts it in two
				i++
				seq++
				var dgs []datagram
				for k := uint32(0); k < islands; k++ {
					if arg&(1<<k) == 0 {
						continue
					}
					tb := pool.Table(1)
					tb.ID = seq
					if !slices.Contains(made, tb) {
						made = append(made, tb)
					}
					r := rec{island: k, seq: seq, parts: 1, table: tb}
					if base, ok := tracks[k].Baseline(seq); ok {
						r.delta, r.base = true, base.ID
					}
					if arg&(8<<k) != 0 {
						r.parts = 2
					}
					for p := 0; p < r.parts; p++ {
						r.part = p
						if p > 0 || len(dgs) == 0 || r.parts > 1 {
							dgs = append(dgs, datagram{num: packet, seq: seq})
							packet++
						}
						d := &dgs[len(dgs)-1]
						d.recs = append(d.recs, r)
					}
				}
				for _, d := range dgs {
					s.Packet(d.num)
					for _, r := range d.recs {
						s.Carried(tracks[r.island], r.table, r.parts)
					}
				}
				for _, d := range dgs {
					for _, r := range d.recs {
						if r.part == 0 {
							pool.Done(r.table)
						}
					}
				}
				inFlight = append(inFlight, dgs...)
			case 1: // deliver one datagram in flight, the arg-th
				i++
				if len(inFlight) == 0 {
					continue
				}
				j := arg % len(inFlight)
				d := inFlight[j]
				inFlight = append(inFlight[:j], inFlight[j+1:]...)
				late := seen && newest-d.seq > Slack && newest-d.seq < 1<<31
				if !seen || (d.seq != newest && d.seq-newest < 1<<31) {
					seen, newest = true, d.seq
				}
				for _, r := range d.recs {
					k := &kept[r.island]
					if r.delta && k.Find(r.base) == nil {
						if !late {
							t.Fatalf("island %d frame %d coded against %d, which the observer does not hold (newest %d)", r.island, r.seq, r.base, newest)
						}
						keyReq = append(keyReq, r.island)
						continue
					}
					key := [2]uint32{r.island, r.seq}
					parts[key]++
					if parts[key] == r.parts {
						delete(parts, key)
						k.Keep(tbl(r.seq), newest)
					}
					if k.Len() > MaxKept {
						t.Fatalf("island %d holds %d tables", r.island, k.Len())
					}
				}
				arr.Arrived(d.num)
			case 2: // lose one datagram
				i++
				if len(inFlight) > 0 {
					j := arg % len(inFlight)
					inFlight = append(inFlight[:j], inFlight[j+1:]...)
				}
			case 3: // the observer's feedback: keyframe requests first, then what arrived
				n, p, ok := arr.Report()
				fb = append(fb, feedback{keys: keyReq, newest: n, prior: p, hasReport: ok})
				keyReq = nil
			case 4: // the oldest feedback reaches the authority
				if len(fb) == 0 {
					continue
				}
				m := fb[0]
				fb = fb[1:]
				for _, k := range m.keys {
					tracks[k].Refused(seq + 1)
				}
				if m.hasReport {
					s.Received(m.newest, m.prior)
				}
			case 5: // lose the oldest feedback if it asks for no keyframe: the
				// stream is reliable, but a confirmation that never arrives
				// must be safe (a later one repeats its bits, or not)
				if len(fb) > 0 && len(fb[0].keys) == 0 {
					fb = fb[1:]
				}
			case 6: // the observer prunes every island
				for k := range kept {
					kept[k].Prune(newest)
				}
			case 7: // the authority forgets an island and tracks it anew: what
				// the observer holds of it counts for nothing any more
				i++
				k := uint32(arg % islands)
				s.Forget(k)
				tracks[k] = s.Track(k)
			case 8: // the authority goes on from a clone of its sender
				c := s.Clone()
				s.Release()
				s = c
				for k := range tracks {
					tracks[k] = s.Track(uint32(k))
				}
			}
			check(op)
		}
	})
}
