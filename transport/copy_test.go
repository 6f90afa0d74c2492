package transport

import (
	"bytes"
	"testing"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
)

// TestCopyControl: a broadcast's control bytes go as stream copies at that
// broadcast and the two after it, at their stream positions, cut to
// the observer's datagram; control over copyDatagrams datagrams goes by the
// stream alone.
func TestCopyControl(t *testing.T) {
	p := &peer{maxDatagram: 600}
	room := p.maxDatagram - codec.StreamCopyHeaderSize
	ctl := bytes.Repeat([]byte{7}, room+10) // two copies' worth
	p.ctlOff = 1000
	p.copyControl(ctl)
	p.ctlOff += uint64(len(ctl))
	var sends [][]broadcast.Datagram
	for range 4 {
		sends = append(sends, p.appendCopies(nil))
	}
	for i, dgs := range sends {
		want := 2
		if i == 3 {
			want = 0
		}
		if len(dgs) != want {
			t.Fatalf("broadcast %d sent %d copies, want %d", i, len(dgs), want)
		}
		var got []byte
		for k, d := range dgs {
			c, err := codec.ParseStreamCopy(d.Bytes)
			if err != nil || c.Offset != 1000+uint64(len(got)) || len(d.Bytes) > p.maxDatagram || len(d.Islands) != 0 {
				t.Fatalf("broadcast %d copy %d: offset %d, %d bytes, %v", i, k, c.Offset, len(d.Bytes), err)
			}
			got = append(got, c.Bytes...)
		}
		if want > 0 && !bytes.Equal(got, ctl) {
			t.Fatalf("broadcast %d: the copies are not the control bytes", i)
		}
	}
	p.copyControl(make([]byte, copyDatagrams*room+1))
	if dgs := p.appendCopies(nil); len(dgs) != 0 {
		t.Fatalf("control over %d datagrams copied", copyDatagrams)
	}
}
