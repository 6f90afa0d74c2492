package receiver

import (
	"bytes"
	"testing"
)

// TestConfirm: a receiver that only confirms the datagrams it gets is, to
// the authority, the same observer as one that restores and commits them:
// with nothing lost, the authority sends both byte for byte the same
// datagrams (deltas against what each confirmed) for 6 s of three
// scenarios. The confirming one commits nothing and counts every datagram;
// one with a broken check is counted as malformed and not confirmed.
func TestConfirm(t *testing.T) {
	full, thin := newLoop(t, "chain,ragdolls,bridge", 3), newLoop(t, "chain,ragdolls,bridge", 3)
	var n uint64
	for step := range 360 {
		full.step(nil)
		thin.send()
		if len(full.dgs) != len(thin.dgs) {
			t.Fatalf("step %d: %d datagrams to the full observer, %d to the confirming one", step, len(full.dgs), len(thin.dgs))
		}
		for i, d := range thin.dgs {
			if !bytes.Equal(d.Bytes, full.dgs[i].Bytes) {
				t.Fatalf("step %d: datagram %d differs between the two observers", step, i)
			}
			thin.rx.Confirm(d.Bytes)
			n++
		}
		thin.fb = thin.rx.Feedback(thin.fb[:0])
		thin.feedBack()
	}
	st := thin.rx.Stats()
	if n == 0 || st.Datagrams != n || st.FramesCommitted != 0 {
		t.Fatalf("confirmed %d datagrams of %d, committed %d frames", st.Datagrams, n, st.FramesCommitted)
	}
	if full.rx.Stats().FramesCommitted == 0 {
		t.Fatal("the full observer committed nothing")
	}
	// A datagram whose check does not hold is not confirmed.
	for thin.dgs = thin.dgs[:0]; len(thin.dgs) == 0; {
		thin.send()
	}
	bad := bytes.Clone(thin.dgs[0].Bytes)
	bad[len(bad)-1] ^= 0xFF
	before := thin.rx.Stats().Decode.Malformed
	thin.rx.Confirm(bad)
	if thin.rx.Stats().Decode.Malformed != before+1 {
		t.Fatal("a datagram with a broken check was not counted as malformed")
	}
	if fb := thin.rx.Feedback(nil); len(fb) != 0 {
		t.Fatalf("a datagram with a broken check was confirmed: %d bytes of feedback", len(fb))
	}
}
