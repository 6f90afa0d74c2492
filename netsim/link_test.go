package netsim

import (
	"bytes"
	"fmt"
	"testing"
)

func runLink(cfg Config, seed uint64) ([]string, LinkStats) {
	l := NewLink(cfg, seed)
	var got []string
	var out [][]byte
	for t := int64(0); t < 2000; t++ {
		l.Send(t*1000, []byte(fmt.Sprintf("pkt-%04d", t)))
		out = l.Deliver(t*1000, out[:0])
		for _, d := range out {
			got = append(got, string(d))
		}
	}
	out = l.Deliver(1<<40, out[:0])
	for _, d := range out {
		got = append(got, string(d))
	}
	return got, l.Stats()
}

func TestLinkIsDeterministic(t *testing.T) {
	cfg := Config{Loss: 0.1, BurstIn: 0.02, Duplicate: 0.05, Delay: 20_000, Jitter: 30_000, Corrupt: 0.01}
	a, sa := runLink(cfg, 7)
	b, sb := runLink(cfg, 7)
	c, _ := runLink(cfg, 8)
	if fmt.Sprint(a) != fmt.Sprint(b) || sa != sb {
		t.Fatal("same seed, different deliveries")
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Fatal("different seeds, same deliveries")
	}
}

func TestLinkImpairments(t *testing.T) {
	got, st := runLink(Config{}, 1)
	if len(got) != 2000 || st.Lost != 0 {
		t.Fatal("perfect link lost packets")
	}
	for i, g := range got {
		if g != fmt.Sprintf("pkt-%04d", i) {
			t.Fatal("perfect link reordered")
		}
	}
	_, st = runLink(Config{Loss: 0.2}, 2)
	if st.Lost < 300 || st.Lost > 500 {
		t.Fatalf("20%% loss lost %d of 2000", st.Lost)
	}
	_, st = runLink(Config{BurstIn: 0.05, BurstOut: 0.25}, 3)
	if st.BurstLost == 0 || st.BurstLost != st.Lost {
		t.Fatalf("burst loss %+v", st)
	}
	got, st = runLink(Config{Duplicate: 0.1}, 4)
	if uint64(len(got)) != 2000+st.Duplicated || st.Duplicated < 100 {
		t.Fatalf("duplicates %+v", st)
	}
	got, _ = runLink(Config{Delay: 1000, Jitter: 50_000}, 5)
	reordered := 0
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			reordered++
		}
	}
	if reordered == 0 {
		t.Fatal("jitter did not reorder")
	}
	got, st = runLink(Config{Corrupt: 0.1}, 6)
	bad := 0
	for i, g := range got {
		if !bytes.Equal([]byte(g), []byte(fmt.Sprintf("pkt-%04d", i))) {
			bad++
		}
	}
	if bad == 0 || uint64(bad) > st.Corrupted {
		t.Fatalf("corrupted %d, counted %d", bad, st.Corrupted)
	}
}
