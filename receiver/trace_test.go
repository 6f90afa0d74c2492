package receiver

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// TestControlTrace runs testdata/control: sequences of control messages
// into a receiver and what each leaves it holding. Rewrite the expected
// output with
//
//	go test ./receiver -run ControlTrace -rewrite
//
// and review the diff. Commands (times in ms; identities as stable ids,
// "5g2" for stable id 5 of generation 2):
//
//	receiver                                  a new receiver
//	welcome timeline=1 [period=50]
//	announce [t=0] ids=1,2,3
//	destroy [t=0] ids=1,2
//	lease island=7 epoch=1 owner=1
//	manifest island=7 topology=1 config=1 members=1,2,3
//	forget island=7
//	cut island=7 seg=1 t=100
//	subscribe                                 an observer's message (wrong direction)
//	state                                     what the receiver holds
//
// Each message prints "ok" or the error Control returned.
func TestControlTrace(t *testing.T) {
	datadriven.Walk(t, "testdata/control", func(t *testing.T, path string) {
		var rx *Receiver
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			if td.Cmd == "receiver" {
				var err error
				if rx, err = New(Config{}); err != nil {
					t.Fatal(err)
				}
				return ""
			}
			if rx == nil {
				t.Fatalf("%s: no receiver yet", td.Pos)
			}
			u32 := func(key string) uint32 {
				var v uint64
				if td.HasArg(key) {
					var s string
					td.ScanArgs(t, key, &s)
					var err error
					if v, err = strconv.ParseUint(s, 10, 32); err != nil {
						t.Fatalf("%s: %s=%s: %v", td.Pos, key, s, err)
					}
				}
				return uint32(v)
			}
			ms := func(key string) island.Time { return island.Time(u32(key)) * 1000 }
			ids := func(key string) []island.MemberID {
				arg, ok := td.Arg(key)
				if !ok {
					t.Fatalf("%s: %s needs %s=", td.Pos, td.Cmd, key)
				}
				var out []island.MemberID
				for _, v := range arg.Vals {
					stable, gen, _ := strings.Cut(v, "g")
					s, err := strconv.ParseUint(stable, 10, 64)
					g, err2 := strconv.ParseUint(cmpOr(gen, "0"), 10, 32)
					if err != nil || err2 != nil {
						t.Fatalf("%s: identity %q", td.Pos, v)
					}
					out = append(out, island.MemberID{Stable: s, Generation: uint32(g)})
				}
				return out
			}
			var m codec.Message
			switch td.Cmd {
			case "welcome":
				p := u32("period")
				if p == 0 {
					p = 50
				}
				var tl uint64
				td.ScanArgs(t, "timeline", &tl)
				m = codec.Welcome{Version: codec.ControlVersion, Timeline: tl, SendPeriod: p * 1000, MaxDatagram: codec.DefaultMaxDatagram}
			case "announce":
				m = codec.Announce{Time: ms("t"), IDs: ids("ids")}
			case "destroy":
				m = codec.Destroy{Time: ms("t"), IDs: ids("ids")}
			case "lease":
				m = codec.Lease{Island: u32("island"), Epoch: u32("epoch"), Owner: island.SenderID(u32("owner"))}
			case "manifest":
				m = codec.Manifest{Island: u32("island"), Topology: u32("topology"), Config: u32("config"), Members: ids("members")}
			case "forget":
				m = codec.Forget{Island: u32("island")}
			case "cut":
				m = codec.Cut{Island: u32("island"), Segment: u32("seg"), Time: ms("t")}
			case "subscribe":
				m = codec.Subscribe{All: true}
			case "state":
				return describe(rx)
			default:
				t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
			}
			if err := rx.Control(0, m); err != nil {
				return err.Error()
			}
			return "ok"
		})
	})
}

func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// describe prints what a receiver holds: its timeline, the live
// identities, each known island's lease and manifest, and the control
// counters.
func describe(rx *Receiver) string {
	var b strings.Builder
	if w, ok := rx.Welcome(); ok {
		fmt.Fprintf(&b, "timeline %d (%d timelines, %d reconnects), clock %v\n", w.Timeline, rx.Stats().Timelines, rx.Stats().Reconnects, rx.Clock().State)
	} else {
		b.WriteString("no welcome\n")
	}
	var live []string
	rx.Identities(func(id island.MemberID) { live = append(live, fmt.Sprintf("%dg%d", id.Stable, id.Generation)) })
	slices.Sort(live)
	fmt.Fprintf(&b, "identities: %s\n", strings.Join(live, " "))
	for _, id := range rx.Islands() {
		fmt.Fprintf(&b, "island %d: ", id)
		if l, ok := rx.Lease(id); ok {
			fmt.Fprintf(&b, "lease epoch %d owner %d", l.Epoch, l.Owner)
		} else {
			b.WriteString("no lease")
		}
		if m, ok := rx.Manifest(id); ok {
			fmt.Fprintf(&b, ", topology %d config %d, %d members", m.Topology, m.Config, len(m.Members))
		}
		b.WriteString("\n")
	}
	st := rx.Stats().Control
	var applied []string
	for typ, n := range st.Applied {
		if n > 0 {
			applied = append(applied, fmt.Sprintf("%v %d", codec.MessageType(typ), n))
		}
	}
	fmt.Fprintf(&b, "applied: %s; refused: no-welcome %d, direction %d, refused %d", strings.Join(applied, ", "), st.NoWelcome, st.Direction, st.Refused)
	return b.String()
}
