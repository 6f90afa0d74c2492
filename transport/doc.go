// Package transport carries islandsync over QUIC (github.com/quic-go/quic-go):
// frame datagrams as RFC 9221 datagrams, and the control messages on one
// bidirectional stream per observer, opened by the observer, reliable and in
// order. Server serves a Source (anything that steps and yields control
// messages and frames) through a broadcast.Broadcaster; Watcher is an
// observer driving a receiver.Receiver. cmd/islandserver and cmd/islandwatch
// are thin wrappers around the two.
//
// # Security
//
// TLS 1.3 always, ALPN "islandsync/1". A server without a certificate of its
// own uses SelfSigned, made in memory, and prints its SHA-256 fingerprint;
// ClientTLS with that pin accepts exactly that certificate. Without a pin,
// the server's certificate must verify against the given or the system's
// roots. Nothing connects unverified.
//
// # Limits
//
// Everything an observer can make the server hold is bounded:
//
//   - MaxObservers connections; one control stream each (more streams are
//     refused by QUIC's stream limit); a control stream must arrive within 5 s.
//   - Control from an observer: 64 KiB per message, and at most 4 messages
//     read ahead of the goroutine that applies them, in buffers that go
//     round (reading an observer's feedback allocates nothing once they
//     have grown); a parse error, an authority message or any datagram from
//     an observer closes the connection with CodeProtocol, and what it sent
//     after is ignored. Other observers do not notice.
//   - Control to an observer: ControlBacklog bytes not yet written (an
//     observer that never reads); past it, CodeBacklog.
//   - Datagrams to an observer: DatagramQueue entries. A broadcast's
//     datagrams replace queued ones whose islands all have a newer frame in
//     it, and past the cap the oldest go; both are counted
//     (islandsync_frames_dropped_slow_observer_total).
//
// The datagram cap of each observer is what its QUIC path carries when it
// joins (quic-go's DatagramTooLargeError reports it; nothing is sent), and
// its frames are encoded for that cap. Idle connections close after
// IdleTimeout; keep-alives go out at a quarter of it. A Watcher with
// Reconnect dials again after a lost connection and gets a fresh catch-up;
// a restarted server has a new timeline, and the watcher's playout clock
// waits for it and resumes on it.
package transport
