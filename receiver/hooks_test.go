package receiver

import (
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/validator"
)

// TestHooks: OnCommit sees every committed frame once, whole, and
// OnControl every applied control message, in stream order — what a relay
// that forwards a stream needs.
func TestHooks(t *testing.T) {
	l := newLoop(t, "chain,ragdolls", 3)
	var commits, controls int
	var types []codec.MessageType
	newest := map[uint32]island.Key{}
	rx, err := New(Config{
		OnCommit: func(f *validator.Validated) {
			commits++
			if k, ok := newest[f.Key().Island]; ok && f.Key().Seq == k.Seq && f.Key().Epoch == k.Epoch {
				t.Fatalf("frame %v handed over twice", f.Key())
			}
			newest[f.Key().Island] = f.Key()
			if f.Len() == 0 {
				t.Fatal("an empty frame handed over")
			}
		},
		OnControl: func(raw []byte) {
			controls++
			m, n, err := codec.ParseControl(raw, nil)
			if err != nil || n != len(raw) {
				t.Fatalf("OnControl handed %d bytes that are not one message: %v", len(raw), err)
			}
			types = append(types, m.Type())
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	l.rx = rx
	for range 120 {
		l.step(nil)
	}
	st := rx.Stats()
	spawns := int(st.Control.Applied[codec.TypeSpawn])
	if commits == 0 || spawns == 0 || uint64(commits) != st.FramesCommitted+uint64(spawns) {
		t.Fatalf("OnCommit saw %d frames, the receiver committed %d and %d spawns", commits, st.FramesCommitted, spawns)
	}
	if types[0] != codec.TypeWelcome || controls < len(newest) {
		t.Fatalf("OnControl saw %d messages starting with %v", controls, types[0])
	}
	// A refused message is not handed over.
	before := controls
	_, _ = rx.ControlBytes(l.now, codec.Subscribe{All: true}.Append(nil)) // the wrong direction
	if controls != before {
		t.Fatal("a refused message was handed to OnControl")
	}
}
