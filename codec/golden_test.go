package codec

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/islandsync/islandsync/island"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// checkGolden compares b byte for byte with the golden file binPath. With
// -update it writes b there instead, and text beside it (the .txt of the
// same name), and returns false: there is nothing left to compare.
func checkGolden(t *testing.T, binPath string, b []byte, text string) bool {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(binPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(binPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(strings.TrimSuffix(binPath, ".bin")+".txt", []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return false
	}
	want, err := os.ReadFile(binPath)
	if err != nil {
		t.Fatalf("%v (run go test ./codec -update)", err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("%s: bytes differ from golden at offset %d", filepath.Base(binPath), firstDiff(b, want))
	}
	return true
}

const goldenDir = "../testdata/golden"

type goldenCase struct {
	name   string
	frames []island.Frame
	want   int // expected datagram count
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{"small", []island.Frame{smallFrame()}, 1},
		{"chain150", []island.Frame{chainFrame(150)}, 9},
		{"coalesced", coalescedFrames(), 1},
		{"edges", []island.Frame{edgeFrame()}, 1},
	}
}

func encodeAll(t testing.TB, cfg Config, frames []island.Frame) [][]byte {
	t.Helper()
	enc, err := NewFloatEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range frames {
		if err := enc.Add(&frames[i]); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	var out [][]byte
	for _, d := range enc.Datagrams() {
		out = append(out, bytes.Clone(d))
	}
	return out
}

func goldenName(c string, i int) string { return fmt.Sprintf("%s.%02d", c, i) }

// TestGolden encodes each case and compares every datagram byte for byte with
// testdata/golden, and its human-readable companion line for line. Run
// `go test ./codec -update` to rewrite them, then review the diff.
func TestGolden(t *testing.T) {
	dec, _ := NewFloatDecoder(Config{})
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			dgs := encodeAll(t, Config{}, c.frames)
			if len(dgs) != c.want {
				t.Fatalf("%d datagrams, want %d", len(dgs), c.want)
			}
			for i, dg := range dgs {
				name := goldenName(c.name, i)
				frags, err := dec.Decode(dg)
				if err != nil {
					t.Fatalf("%s: own output does not decode: %v", name, err)
				}
				text := describe(name, dg, frags)
				binPath := filepath.Join(goldenDir, name+".bin")
				txtPath := filepath.Join(goldenDir, name+".txt")
				if !checkGolden(t, binPath, dg, text) {
					continue // rewritten
				}
				wantTxt, err := os.ReadFile(txtPath)
				if err != nil {
					t.Fatal(err)
				}
				if string(wantTxt) != text {
					t.Errorf("%s: description differs from golden:\n got: %s\nwant: %s", name, text, wantTxt)
				}
			}
			if !*update {
				// No stale extra golden file for this case.
				extra := filepath.Join(goldenDir, goldenName(c.name, len(dgs))+".bin")
				if _, err := os.Stat(extra); err == nil {
					t.Errorf("stale golden file %s", extra)
				}
			}
		})
	}
}

// TestGoldenDecodeReencode decodes every golden file, rebuilds the frames and
// re-encodes them: the bytes must come back identical.
func TestGoldenDecodeReencode(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(goldenDir, "*.bin"))
	if len(files) < 12 {
		t.Fatalf("found %d golden datagrams, want at least 12", len(files))
	}
	dec, _ := NewFloatDecoder(Config{})
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		frags, err := dec.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out := AppendDatagramHeader(nil, uint8(len(frags)))
		for i := range frags {
			out = AppendFragment(out, &frags[i].Header, members(frags[i].Raw))
		}
		if !bytes.Equal(out, b) {
			t.Errorf("%s: re-encoding differs at offset %d", path, firstDiff(out, b))
		}
	}
}

// TestGoldenFramesReassemble checks that the chain datagrams carry the whole
// frame exactly once, in order, with the header digest matching.
func TestGoldenFramesReassemble(t *testing.T) {
	want := chainFrame(150)
	dec, _ := NewFloatDecoder(Config{})
	var got []island.Member
	for i := 0; i < 9; i++ {
		b, err := os.ReadFile(filepath.Join(goldenDir, goldenName("chain150", i)+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		frags, err := dec.Decode(b)
		if err != nil || len(frags) != 1 {
			t.Fatalf("datagram %d: %d frags, %v", i, len(frags), err)
		}
		h := frags[0].Header
		if int(h.Index) != i || h.Count != 9 || int(h.FirstMember) != len(got) || h.Digest != digestOf(&want) {
			t.Fatalf("datagram %d: header %+v", i, h)
		}
		if len(b) > DefaultMaxDatagram {
			t.Errorf("datagram %d is %d bytes", i, len(b))
		}
		got = append(got, members(frags[0].Raw)...)
	}
	w := want
	w.Members = got
	if !w.Equal(&want) {
		t.Fatal("reassembled members differ")
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
