// Package transport carries islandsync over QUIC (github.com/quic-go/quic-go):
// frame datagrams as RFC 9221 datagrams, and the control messages on one
// bidirectional stream per observer, opened by the observer, reliable and in
// order. Server serves a Source (anything that steps and yields control
// messages and frames) through a broadcast.Broadcaster — and what a
// Prompter has that should not wait for the next step, between steps;
// Watcher is an
// observer driving a receiver.Receiver (or, with WatchConfig.ConfirmOnly, a
// stand-in that confirms every datagram unrestored, for measuring a server
// under many observers). cmd/islandserver and cmd/islandwatch are thin
// wrappers around the two.
//
// # Security
//
// TLS 1.3 always, ALPN "islandsync/1". A server without a certificate of its
// own uses one it keeps (Identity: a key and self-signed certificate made
// once in a state directory, mode 0700, and loaded on every later run, so a
// restart keeps its fingerprint) or SelfSigned, made in memory for one run.
// ClientTLS with the fingerprint as pin accepts exactly that certificate.
// Without a pin, the server's certificate must verify against the given or
// the system's roots. Nothing connects unverified. A Watcher whose pin no
// longer matches ends Run with ErrPinMismatch instead of dialling again.
//
// The pin authenticates the server. With ServerConfig.TokenKeys the server
// authenticates observers too: each must present a connect token (package
// token) signed by the game's backend in a Hello before it gets a slot or a
// byte of the world; a token that lists islands restricts the observer to
// them (broadcast.Broadcaster.Restrict), and one connection at a time holds
// a token's observer id (a newer one closes the older with CodeReplaced).
// Without keys the server is open to anyone who can reach it.
//
// # Uplinks
//
// A server that cannot accept connections (ServerConfig.DialOnly: a
// player's client, a worker behind NAT) dials instead: Server.Uplink
// dials a front's UplinkListener from the server's own UDP socket and
// serves the front over that connection as one observer, admitted and
// bounded as any other; the front, which accepted it, runs a Watcher on
// it (Watcher.RunConn). The handshake negotiates ALPN
// "islandsync-uplink/1" and is mutual: the server pins the front's
// fingerprint and presents its own certificate (UplinkClientTLS), and the
// listener admits only a certificate its Allow function knows — refused
// in the handshake, counted, before a byte of the protocol
// (ErrUplinkRefused on the dialling side). At most MaxUplinks are open at
// once (more: CodeFull), and handshakes in progress are capped at four
// times that.
//
// # Admission
//
// A connection becomes an observer only once it is admitted: its control
// stream, its Hello (with TokenKeys) and a whole Subscribe must arrive
// within SubscribeTimeout of the handshake, or it is closed (CodeNoStream,
// CodeToken); until then it holds no observer slot, and at most
// MaxAdmitting connections are being admitted at once (more: CodeFull).
// Handshakes in progress are capped at four times that. A refused join
// closes with CodeFull, CodeToken or CodeReplaced, and a Watcher ends Run
// with that *CloseError (Refused reports true) rather than dialling again;
// other losses are dialled again with an exponential, jittered backoff.
//
// # Limits
//
// Everything an observer can make the server hold is bounded, in bytes and
// in time:
//
//   - MaxObservers connections; one control stream each (more streams are
//     refused by QUIC's stream limit).
//   - Control from an observer: 64 KiB per message; once a message's first
//     byte has arrived the whole of it must within MessageTimeout
//     (CodeSlowRead). At most 4 messages are read ahead of the goroutine
//     that applies them, in buffers that go round (reading an observer's
//     feedback allocates nothing once they have grown); a parse error, an
//     authority message or any datagram from an observer closes the
//     connection with CodeProtocol, and what it sent after is ignored.
//     Other observers do not notice.
//   - Control to an observer: ControlBacklog bytes not yet written; past
//     it, CodeBacklog. The writer hands QUIC 16 KiB at a time, and a chunk
//     that cannot go within StallTimeout (the observer does not read, and
//     its flow-control window is full) closes it with CodeBacklog too.
//   - An observer that is sent datagrams must say something back at least
//     once per StallTimeout (a Watcher sends feedback every AckPeriod, and an
//     empty Keyframes every second when it has nothing to report); one that stays
//     silent that long — a client that reads nothing — is closed with
//     CodeBacklog.
//   - Control first: while a control write to an observer has waited 20 ms
//     or more, its datagrams are dropped (counted) rather than sent, since
//     on a congested path QUIC fills packets with datagrams before stream
//     data and frames are lossy anyway.
//   - What each observer's path carries sets its budget: at every
//     broadcast the server tells the broadcaster the path's rate — QUIC's
//     congestion window over its smoothed round-trip time, times 1.25 so
//     that the window still grows, less the control bytes queued — and the
//     broadcaster leaves out the frames that do not fit rather than
//     encoding them to arrive late (broadcast.Broadcaster.SetPathRate).
//     A datagram is handed to quic-go only once quic-go has put on the wire
//     nearly all it was handed (ConnectionStats' BytesSent), so datagrams
//     wait here, not in quic-go's queue; one that waited over two broadcast
//     periods is dropped (islandsync_frames_dropped_late_total), and how
//     long each waited is islandsync_datagram_queue_wait_seconds. Every
//     byte is counted as handed before quic-go gets it, so that the
//     estimate never mistakes bytes already sent for bytes held; when
//     nothing has gone on the wire for four broadcast periods the sender
//     stops waiting (islandsync_pace_gave_up_total: a stalled path, or a
//     datagram quic-go dropped as too large).
//     ServerConfig.FixedRate turns all three off.
//   - Datagrams to an observer: DatagramQueue entries. A broadcast's
//     datagrams replace queued ones whose islands all have a newer frame in
//     it, and past the cap the oldest go; both are counted
//     (islandsync_frames_dropped_slow_observer_total).
//   - Stream copies: over a path that loses datagrams (where the
//     broadcaster sends parity), the control bytes one broadcast queued,
//     when they fit two datagrams, go again as datagrams
//     (codec.StreamCopy) at that broadcast and the two after it. A lost
//     stream packet waits for QUIC to send it again, a round trip or more,
//     and frames that need what it carried wait with it; a copy brings the
//     bytes a broadcast period later instead. The Watcher reads its control
//     stream from the stream and the copies together (each byte once, in
//     stream order; Tick.Copies counts them), holds at most 16 copies
//     ahead of a gap within 64 KiB of the stream, and closes the
//     connection with CodeProtocol when the stream's bytes differ from a
//     copy's. At most 16 copies wait for a broadcast to carry them (the
//     oldest go first). Copies wait in the datagram queue like frames and are
//     dropped by the same rules; the observer's budget pays for them
//     (broadcast.Broadcaster.Owe), and islandsync_stream_copies_total
//     counts them.
//
// So one observer holds at most ControlBacklog bytes of control and
// DatagramQueue datagrams (each at most its datagram cap) on the server,
// and an observer that reads nothing holds them for at most StallTimeout
// (10 s by default) past its first datagram.
//
// The datagram cap of each observer is what its QUIC path carries when it
// joins (quic-go's DatagramTooLargeError reports it; nothing is sent), and
// its frames are encoded for that cap. Idle connections close after
// IdleTimeout; keep-alives go out at a quarter of it.
//
// # Sessions
//
// A Watcher subscribes with WatchConfig.Subscribe (every island, a list,
// or areas of interest) and changes it while it runs with SetSubscribe —
// a camera moving its areas — sent with its next feedback.
//
// No deadline of the watcher's own ends a session: its feedback goes from a
// goroutine of its own, and a feedback period whose write cannot go yet is
// skipped (Tick.FeedbackSkipped), not fatal. A Watcher with Reconnect dials
// again after a lost connection and gets a fresh catch-up; a restarted
// server has a new timeline, and every stage of the receiver starts over on
// it (receiver.Receiver resets them all on a Welcome) while the playout
// clock waits for it and resumes on it. With WatchConfig.Fallback it dials
// the next of several servers of one world (a cluster's fronts, package
// cluster) in turn: they share the world's timeline, so the move is a
// reconnect and the playout clock carries on; Tick.Addr says which server
// it is on. After a served session is lost it dials the next server at
// once, without the reconnect wait, at most once per ReconnectMax: the
// playout clock goes to Waiting if no frame comes for about 0.6 s.
package transport
