package assembler

import "testing"

// TestResetForgetsStreams: a sender that starts its numbering again after a
// long run (a restarted authority) is refused as stale until Reset, which
// also drops the frames in progress and leaves no byte accounted.
func TestResetForgetsStreams(t *testing.T) {
	a := mustNew(t, Config{})
	now := int64(0)
	for seq := uint32(1); seq <= 200; seq++ {
		fr := fragmentsOf(t, testFrame(1, keySeq(seq), 40, float64(seq)))
		var o Outcome
		for i := range fr {
			o, _ = a.Push(now, &fr[i])
		}
		if o != Completed {
			t.Fatalf("seq %d: %v", seq, o)
		}
		now += 50_000
	}
	// A frame in progress when the timeline ends.
	half := fragmentsOf(t, testFrame(1, keySeq(201), 40, 201))
	if o, _ := a.Push(now, &half[0]); o != Buffered {
		t.Fatalf("in progress: %v", o)
	}
	restarted := fragmentsOf(t, testFrame(1, keySeq(0), 40, -1))
	if o, _ := a.Push(now, &restarted[0]); o != RejectStale {
		t.Fatalf("before Reset, sequence 0 after 200: %v, want stale", o)
	}

	a.Reset()
	st := a.Stats()
	if st.PendingFrames != 0 || st.PendingBytes != 0 || st.Streams != 0 || st.Count(DroppedReset) != 1 {
		t.Fatalf("after Reset: %+v", st)
	}
	var o Outcome
	var out *Frame
	for i := range restarted {
		o, out = a.Push(now, &restarted[i])
	}
	if o != Completed || out.Key.Seq != 0 {
		t.Fatalf("after Reset, sequence 0: %v", o)
	}
	// The new timeline's own order holds again.
	if o, _ := a.Push(now, &restarted[0]); o != RejectStale {
		t.Fatalf("a replay on the new timeline: %v", o)
	}
}
