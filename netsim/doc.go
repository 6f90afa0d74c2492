// Package netsim is a seeded, deterministic model of a bad network for the
// demo and tests: Bernoulli loss, burst loss (Gilbert–Elliott, its state
// moving once per datagram and once per quiet Config.BurstSlot, so that a
// burst ends in time even for a sender that stops sending into it, or, with
// Config.BurstClock, once per tick whatever is sent),
// duplication, reordering through per-packet delay with jitter, and byte
// corruption; and an Adversary that injects late packets of a previous
// epoch, packets from a spoofed sender, fragments of a stale topology and
// conflicting duplicates.
//
// A Link counts what it did (LinkStats), among it its silences: stretches
// of at least SilenceMin (150 ms) between two datagrams it kept, whether a
// burst lost what was sent or the sender sent nothing — what the far end
// sees as nothing arriving (the demo's -compare sums them per transport).
// Per datagram a burst's length is counted in datagrams, so a sender that
// sends fewer of them meets bursts that last longer in time; on
// Config.BurstClock it is counted in ticks, the same for every sender.
//
// Time is the caller's: Send and Deliver take now in microseconds. The same
// seed and the same calls give the same deliveries, byte for byte. This
// package is simulation code; it is the one place besides cmd/ that draws
// random numbers (from its own seeded source, never the global one).
package netsim
