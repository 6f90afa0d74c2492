package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/receiver"
	"github.com/islandsync/islandsync/scenario"
)

// BenchmarkFrontFanOut measures a front's own work per broadcast — the
// relay's Step, its broadcaster's encoding for every observer, and reading
// each observer's feedback — with 1, 8 and 64 observers, on the chain,
// the bridge and the ragdolls (27 islands, 424 bodies) fed by
// one authority in process. The authority, the uplink and the observers'
// receive paths are outside the timer. It reports ns per broadcast and
// per observer-broadcast.
func BenchmarkFrontFanOut(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("observers=%d", n), func(b *testing.B) {
			scs, err := scenario.Pick("chain,bridge,ragdolls")
			if err != nil {
				b.Fatal(err)
			}
			auth, _ := scenario.NewShardAuthority(scs, 20, 0)
			fn := fence{}
			for k := range scs {
				_ = auth.Gain(k, 100, nil)
				fn[uint32(k)] = Holding{Holder: "a", Epoch: 100}
			}
			relay, _ := NewRelay(RelayConfig{Period: auth.Period(), Fence: fn,
				ShardOf: func(id uint32) uint32 { return uint32(scenario.ShardOf(id, len(scs))) }})
			up := newLink(b, 1, auth.Period(), relay.Upstream("a").Hooks(receiver.Config{}))
			front, err := broadcast.New(broadcast.Config{Timeline: 2, SendPeriod: auth.Period()})
			if err != nil {
				b.Fatal(err)
			}
			obs := make([]*receiver.Receiver, n)
			for i := range obs {
				id := broadcast.ObserverID(i + 1)
				_ = front.Join(id, 0)
				_ = front.Subscribe(id, codec.Subscribe{All: true})
				obs[i], _ = receiver.New(receiver.Config{})
			}
			var now int64
			var ctl, fb []byte
			var dgs []broadcast.Datagram
			var frontTime time.Duration
			broadcasts := 0
			step := func() {
				now += 1_000_000 / scenario.StepHz
				msgs, frames := auth.Step()
				up.carry(now, msgs, frames)
				start := time.Now()
				msgs, frames = relay.Step()
				for _, m := range msgs {
					_ = front.Apply(m)
				}
				front.Frames(frames)
				took := time.Since(start)
				if len(frames) > 0 {
					broadcasts++
				}
				for i, rx := range obs {
					id := broadcast.ObserverID(i + 1)
					start = time.Now()
					ctl, dgs = front.Take(id, ctl[:0], dgs[:0])
					took += time.Since(start)
					_, _ = rx.ControlBytes(now, ctl)
					for _, d := range dgs {
						rx.Datagram(now, d.Bytes)
					}
					rx.Render(now)
					fb = rx.Feedback(fb[:0])
					start = time.Now()
					_, _ = front.FeedbackBytes(id, fb)
					took += time.Since(start)
				}
				frontTime += took
			}
			for range 120 { // two seconds to settle
				step()
			}
			frontTime, broadcasts = 0, 0
			b.ResetTimer()
			for range b.N {
				step()
			}
			if broadcasts == 0 {
				return // too few steps to broadcast (the b.N = 1 probe)
			}
			per := float64(frontTime.Nanoseconds()) / float64(broadcasts)
			b.ReportMetric(per, "front-ns/broadcast")
			b.ReportMetric(per/float64(n), "front-ns/observer-broadcast")
			b.ReportMetric(float64(relay.Stats().Frames)/float64(max(relay.steps, 1))*float64(relay.every), "frames/broadcast")
		})
	}
}

// BenchmarkDrain: one of two authorities sharing 32 shards leaves and
// Serve hands its share on to the other through the package's embedded
// etcd; timed from the leave until the other holds every shard, in the
// table and by its Gain hooks. ns per drain. "leave": Member.Leave, and
// Serve releases each shard once the table shows it left; "release":
// Member.LeaveAndRelease, what a draining authority does — the releases
// go with the leave.
func BenchmarkDrain(b *testing.B) {
	shards := span(32)
	for _, how := range []string{"leave", "release"} {
		b.Run(how, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				p, cli := world(b)
				tb := watchTable(b, cli, p)
				xt := watchTable(b, cli, p)
				x := serve(b, join(b, client(b), p, "a", 10*time.Second), xt, shards)
				y := serve(b, join(b, client(b), p, "b", 10*time.Second), watchTable(b, cli, p), shards)
				until(b, tb, "a and b share", func() bool { return settled(tb, shards, x, y) })
				until(b, xt, "a's table shows the share", func() bool { return settled(xt, shards, x, y) })
				b.StartTimer()
				var err error
				if how == "leave" {
					err = x.m.Leave(context.Background())
				} else {
					_, err = x.m.LeaveAndRelease(context.Background(), xt)
				}
				if err != nil {
					b.Fatal(err)
				}
				until(b, tb, "b holds everything", func() bool { return settled(tb, shards, y) })
			}
		})
	}
}
