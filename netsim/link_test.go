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

// burstRuns sends n datagrams every gap µs over a link with only burst
// loss and returns the mean length of the runs of consecutive datagrams
// it lost, and the share lost.
func burstRuns(slot, gap int64, n int, seed uint64) (meanRun, lost float64) {
	l := NewLink(Config{BurstIn: 0.05, BurstOut: 0.25, BurstSlot: slot}, seed)
	var out [][]byte
	runs, run, gone := 0, 0, 0
	for i := range n {
		now := int64(i) * gap
		l.Send(now, []byte{byte(i)})
		if out = l.Deliver(now, out[:0]); len(out) == 0 {
			run++
			gone++
			continue
		}
		if run > 0 {
			runs++
		}
		run = 0
	}
	if runs == 0 {
		return 0, 0
	}
	return float64(gone-run) / float64(runs), float64(gone) / float64(n)
}

// TestBurstEndsInTime: a sender that sends once a second meets bursts of
// about one datagram, as the state moves with the silence between them,
// and about the same share lost as a busy sender; without the time bound a
// burst of about four datagrams lasts four seconds for it. A sender
// sending at least once a slot sees the very same link either way.
func TestBurstEndsInTime(t *testing.T) {
	const n = 4000
	sparse, sparseLost := burstRuns(0, 1_000_000, n, 9)
	perDatagram, _ := burstRuns(-1, 1_000_000, n, 9)
	busy, busyLost := burstRuns(0, 50_000, n, 9)
	t.Logf("mean burst: one a second %.2f datagrams (%.1f %% lost), per datagram only %.2f, every 50 ms %.2f (%.1f %% lost)",
		sparse, 100*sparseLost, perDatagram, busy, 100*busyLost)
	if sparse > 1.5 {
		t.Errorf("a sender sending once a second met bursts of %.2f datagrams on average, want about 1", sparse)
	}
	if perDatagram < 3 {
		t.Errorf("per datagram only: bursts of %.2f datagrams, want about 4", perDatagram)
	}
	if sparseLost < 0.10 || sparseLost > 0.24 || busyLost < 0.10 || busyLost > 0.24 {
		t.Errorf("lost %.1f %% sparse, %.1f %% busy; both want about 16.7 %% (0.05 / (0.05 + 0.25))", 100*sparseLost, 100*busyLost)
	}
	cfg := Config{Loss: 0.05, BurstIn: 0.01, Duplicate: 0.05, Delay: 40_000, Jitter: 60_000, Corrupt: 0.01}
	a, b := cfg, cfg
	b.BurstSlot = -1
	la, lb := NewLink(a, 3), NewLink(b, 3)
	var oa, ob [][]byte
	for i := range int64(2000) {
		now := i * 50_000 // one datagram a broadcast period, well within a slot
		la.Send(now, []byte{byte(i)})
		lb.Send(now, []byte{byte(i)})
		oa, ob = la.Deliver(now, oa), lb.Deliver(now, ob)
	}
	if fmt.Sprint(oa) != fmt.Sprint(ob) || la.Stats() != lb.Stats() {
		t.Fatal("a sender sending every 50 ms saw the time bound")
	}
}

// TestSilences checks the silence counters against send schedules whose
// silences are known: a perfect link (Loss and BurstLoss not drawn) only
// sees the sender's own gaps, and a link that loses everything in a
// window sees that window.
func TestSilences(t *testing.T) {
	ms := func(v ...int64) []int64 {
		for i := range v {
			v[i] *= 1000
		}
		return v
	}
	for _, tc := range []struct {
		name     string
		sends    []int64 // send times, µs
		n        uint64
		total    int64 // µs
		longest  int64 // µs
		lossFrom int64 // datagrams sent in [lossFrom, lossTo) are lost
		lossTo   int64
	}{
		{name: "steady 50 ms", sends: ms(0, 50, 100, 150, 200)},
		{name: "149 ms gap", sends: ms(0, 149, 200)},
		{name: "150 ms gap", sends: ms(0, 150, 200), n: 1, total: 150_000, longest: 150_000},
		{name: "two gaps", sends: ms(0, 200, 250, 650), n: 2, total: 600_000, longest: 400_000},
		{name: "first datagram opens nothing", sends: ms(500, 550)},
		{name: "lost run", sends: ms(0, 50, 100, 150, 200, 250), lossFrom: 40_000, lossTo: 210_000,
			n: 1, total: 250_000, longest: 250_000},
		{name: "lost run shorter than the minimum", sends: ms(0, 50, 100, 150), lossFrom: 40_000, lossTo: 60_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLink(Config{}, 1)
			for _, at := range tc.sends {
				if at >= tc.lossFrom && at < tc.lossTo {
					l.cfg.Loss = 1
				} else {
					l.cfg.Loss = 0
				}
				l.Send(at, []byte{1})
			}
			st := l.Stats()
			if st.Silences != tc.n || st.SilentTime != tc.total || st.LongestSilence != tc.longest {
				t.Fatalf("silences %d, %d µs, longest %d µs; want %d, %d, %d",
					st.Silences, st.SilentTime, st.LongestSilence, tc.n, tc.total, tc.longest)
			}
		})
	}
}

// burstTime sends a datagram every gap µs for span µs over a link with
// bursts only (no other loss) and returns the mean time a burst took from
// its first lost datagram to the next one kept, µs, and the share lost.
func burstTime(clock, gap, span int64, seed uint64) (mean, lost float64) {
	l := NewLink(Config{BurstIn: 0.02, BurstOut: 0.25, BurstClock: clock}, seed)
	var out [][]byte
	var runs, sent, gone int
	var total, first int64
	in := false
	for now := int64(0); now < span; now += gap {
		l.Send(now, []byte{1})
		sent++
		if out = l.Deliver(now, out[:0]); len(out) == 0 {
			gone++
			if !in {
				in, first = true, now
			}
			continue
		}
		if in {
			runs++
			total += now - first
			in = false
		}
	}
	if runs == 0 {
		return 0, 0
	}
	return float64(total) / float64(runs), float64(gone) / float64(sent)
}

// TestBurstClock: on the clock a burst lasts about as long for a sender of
// one datagram a millisecond as for one of one every 20 ms (the sparse
// sender's datagrams land up to 20 ms after the burst ends), and about
// tick / BurstOut; per datagram, it lasts twenty times longer for the
// sparse sender.
func TestBurstClock(t *testing.T) {
	const span = 600_000_000 // 10 minutes
	dense, denseLost := burstTime(10_000, 1_000, span, 4)
	sparse, sparseLost := burstTime(10_000, 20_000, span, 4)
	perDense, _ := burstTime(0, 1_000, span, 4)
	perSparse, _ := burstTime(0, 20_000, span, 4)
	t.Logf("on the clock: %.1f ms every 1 ms (%.1f %% lost), %.1f ms every 20 ms (%.1f %% lost); per datagram: %.1f ms and %.1f ms",
		dense/1000, 100*denseLost, sparse/1000, 100*sparseLost, perDense/1000, perSparse/1000)
	if dense < 30_000 || dense > 50_000 {
		t.Errorf("on the clock, a sender every 1 ms met bursts of %.1f ms, want about 40 (10 ms / 0.25)", dense/1000)
	}
	if sparse < dense || sparse > dense+25_000 {
		t.Errorf("on the clock, a sender every 20 ms met bursts of %.1f ms against %.1f ms, want at most 25 ms more", sparse/1000, dense/1000)
	}
	if perSparse < 10*perDense {
		t.Errorf("per datagram, bursts of %.1f ms every 20 ms against %.1f ms every 1 ms, want at least 10 times longer", perSparse/1000, perDense/1000)
	}
	if denseLost < 0.05 || denseLost > 0.09 || sparseLost < 0.05 || sparseLost > 0.09 {
		t.Errorf("lost %.1f %% and %.1f %%, want about 7.4 %% (0.02 / (0.02 + 0.25)) for both", 100*denseLost, 100*sparseLost)
	}
}

// TestLinkStatsAdd: the relay's per-direction sums add every counter and
// keep the longest silence of any session.
func TestLinkStatsAdd(t *testing.T) {
	a := LinkStats{Sent: 1, Lost: 2, BurstLost: 3, Duplicated: 4, Corrupted: 5, Delivered: 6, Bytes: 7, Silences: 8, SilentTime: 900, LongestSilence: 400}
	b := LinkStats{Sent: 10, Lost: 20, BurstLost: 30, Duplicated: 40, Corrupted: 50, Delivered: 60, Bytes: 70, Silences: 1, SilentTime: 500, LongestSilence: 500}
	want := LinkStats{Sent: 11, Lost: 22, BurstLost: 33, Duplicated: 44, Corrupted: 55, Delivered: 66, Bytes: 77, Silences: 9, SilentTime: 1400, LongestSilence: 500}
	if got := a.add(b); got != want {
		t.Fatalf("%+v.add(%+v) = %+v, want %+v", a, b, got, want)
	}
	if got := b.add(a); got != want {
		t.Fatalf("the other way round: %+v", got)
	}
}
