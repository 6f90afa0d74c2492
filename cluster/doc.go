// Package cluster is how several islandsync processes share one world
// through etcd: who is in the world, which authority holds which islands
// under which epoch, and the world's timeline id.
//
// A world lives under one key prefix (DefaultPrefix unless set). Each
// process Joins it as a Member — an authority, which steps islands, or a
// front, which serves observers — with an etcd lease of a stated TTL that
// it keeps alive. Islands are grouped into shards (the caller's rule; the
// service uses one shard per scenario world, that is one id range of
// scenario.IDSpan), and a shard's authority is a key created in a
// transaction bound to its holder's lease. The key's creation revision is
// the epoch of every island of the shard while it is held: a fencing
// token that only grows, so a later holder's frames always carry a higher
// epoch than an earlier one's, and a front refuses any lease or frame that
// is not from the shard's current holder at or above its epoch
// (Table.Admit).
//
// Shards are shared among the registered authorities by rendezvous hashing
// (Owner): every process computes the same owner from the same member
// list, and when an authority joins or leaves only its share moves.
// Member.Serve keeps a member holding exactly its share: it claims free
// shards it owns, releases those another authority now owns, and reports
// both through Hooks (and, to whoever times them, how long each claim
// and release took: Hooks.Etcd). The releases and claims one change calls
// for go to etcd together, so shards move in about one round trip each way
// however many there are.
//
//   - Crash: a member that stops without a goodbye keeps its shards until
//     its lease goes, a TTL after its last keep-alive; the others then
//     claim them under new epochs. etcd itself deletes an expired lease's
//     keys only at its next check, up to half a second later, so Serve
//     reads every other holder's remaining TTL (every 50 ms; every 10 ms
//     once a lease is late: under two seconds left, less than one renewed
//     on schedule shows) and revokes a lease once its readings prove it
//     expired (reap.go states the rule): about 10 ms after the expiry,
//     plus the readings' answers. A renewed lease is never revoked; slow
//     answers delay a proof, never make one.
//   - Fencing: a member fences itself — Fenced closes and Serve loses every
//     shard — when etcd refuses its keep-alive or none was confirmed for a
//     TTL counted from when the last confirmed one was sent, so it stops
//     before etcd can have given its shards to anyone else.
//   - Drain: LeaveAndRelease deletes the member's registration and, in
//     the same transaction, releases every shard it holds, recording each
//     hand-off (P handoff/<n>) — or Leave deletes the registration alone
//     and Serve releases each shard once the table shows the member left.
//     Either way the shards move without waiting for a TTL, make before
//     break: Serve calls Hooks.Lose for a released shard only once the
//     next holder has claimed it. Meanwhile fronts
//     keep relaying the frames of the leases they forwarded from it
//     (Table.Handing) and hold the next holder's admitted lease back until
//     its first frame is there (at most four broadcast periods), and
//     RunAuthority keeps stepping the shard until its standby sees the next
//     holder's frames of every island of it (a front hands each island over
//     on its own), so the islands never stop while they change hands.
//     Fronts keep their link to an authority whose registration went for
//     as long as it holds or hands on a shard (Table.Busy), or its islands
//     would go without frames from its Leave until the next holder's
//     first. A rebalance (an authority joins) hands shards on the same
//     way.
//
// # Processes
//
// RunAuthority runs an authority: a shard authority (scenario) whose
// shards follow Serve, served over QUIC to the fronts. It steps on the
// world's clock: never ahead of it (a tick before the next step's time
// does not step), and more than MaxLag steps behind it, it skips ahead
// without stepping. Its step goroutine
// takes the shards gained and lost at once, between two steps
// (transport.Prompter): a gained shard's leases, manifests and spawns —
// its islands' first states, at the time the authority stands at — go out
// without waiting for the next step, and its first frames come from that
// step. Serve's Gain hook does not wait: a gained shard's world is built
// and caught up on a goroutine of its own (scenario.Authority.Prepare)
// while the step goroutine goes on stepping the other shards, and is taken
// up (Adopt) as soon as it is ready, so the shards gained together (a
// drain's, a crashed holder's) are built side by side rather than one
// after another on the step goroutine, and each starts when its own world
// is ready, not with the slowest. Its Lose hook returns only once the
// shard's frames have stopped. RunFront runs a
// front: it dials every registered authority as an observer (pinning the
// fingerprint the authority registered beside its address; an observer
// that renders four times a second and simulates nothing, for the relay
// needs its control and commits, not its views) and serves observers a
// Relay of what they send. The Relay forwards an island's
// lease, messages and frames only while the fence (Table.Admit) admits
// them — a lease heard before the front's watch shows the claim behind it
// waits for it — and hands out the newest frame of each island once per
// broadcast period; a frame that comes a period or more after its
// island's last went out goes at the next Step instead, so an authority's
// jitter neither waits for the front's cadence nor loses a frame to it.
// When an island changes hands, the old holder's last frame, the new
// holder's lease and the new holder's first frame follow one another
// within a period; a new holder's first state — after a drain or a crash
// alike, with its lease when that waited — is handed over as soon as it
// arrives, between two Steps (Relay.Urgent), unless the old holder's
// last frame still waits to go out first, or is still to come: when the
// new holder's newest frame is more than a period after the old holder's
// newest frame here, the relay hands out the old holder's next frames as
// they come, off the cadence, and waits until one is within a period of
// the new holder's (four periods at most, while the old holder still
// hands the island on: a loaded machine delays one authority's frames
// more than another's), so that the island's authority time moves on by
// no more than a period across the hand-over. Ahead of the new lease the
// relay sends the old holder's last frame again, as a codec.Final on the
// control stream, when it went out within the last period or the old
// holder still hands the island on: an observer refuses an older epoch's
// frame once it holds the new lease, and the frame's datagram may arrive
// after it. (An observer holds a frame of the new epoch that comes before
// the lease, even one cut into several datagrams: receiver.Config.MaxParked.)
// An island of another holder whose bodies a forwarded manifest claims
// (one the new holder did not restate, nor has a lease of waiting at the
// front) is forgotten at once, as of its last frame or the
// claiming island's first state under the new lease, whichever is earlier
// — the old holder steps on while it hands the shard over, and its clock
// may run a step ahead — so that at no playback time does an observer
// place a body from two islands. Both read the World (timeline id and
// start instant) from etcd, so every front's Welcome names one timeline
// and authorities on one host share one time base; each starts on a
// step of the timeline that is a multiple of the steps between broadcasts
// (scenario.NewShardAuthority), so every authority samples at the same
// instants and a handed-on island goes on one period after the other
// holder's last frame. islandserver -etcd,
// -etcd-embed and -role run them.
//
// An authority that cannot accept connections — a player's client, a
// worker behind NAT — runs with NodeConfig.Dial: it registers "-" as its
// address and dials every front that opened an uplink port
// (NodeConfig.UplinkListen) instead, presenting its certificate and
// pinning the front's; over that connection it serves the front exactly
// as it serves one that dialled it (transport.Server.Uplink). A front's
// uplink port admits only a certificate a registered authority holds, and
// knows the authority by it, so the fence judges its frames as any
// other's.
//
// # Usage
//
//	cli, _ := cluster.Dial([]string{"http://127.0.0.1:2379"})
//	m, _ := cluster.Join(ctx, cli, cluster.Config{Name: "auth-1", Role: cluster.Authority, TTL: 5 * time.Second})
//	tb, _ := cluster.WatchTable(ctx, cli, m.Prefix())
//	err := m.Serve(ctx, tb, shards, cluster.Hooks{Gain: start, Lose: stop})
//
// Embed runs a one-member etcd inside the process, for tests and a
// one-machine try-out; a real deployment runs etcd on its own.
//
// # Limits
//
// A new holder continues each body of a shard it gains from the newest
// state it received of it (RunAuthority follows one front as an observer
// of the whole world, a standby), first stepped forward to its own time
// when that state is at most scenario.MaxCatchUp steps old (a drain).
// The scenario's script runs on the timeline's clock, so the new holder's
// world starts with what the script did before the gain (a joint broken, a
// rope loosened) and does none of it again; the topology it continues from
// is the script's, not what the Physics descriptions it holds say. Bodies
// it never heard of start where the scenario puts them. Epochs are
// etcd revisions and must fit 32 bits (ErrEpochRange);
// at most MaxShards shards and MaxMembers members per world; what a Table
// reads from etcd is checked like any input, and keys or values that break
// the layout (keys.go) or a limit are ignored and counted. Unlike the
// packages of the receive and send paths this one does I/O, reads the
// clock and starts goroutines: the keep-alive, the table's watch.
package cluster
