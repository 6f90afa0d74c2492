package baseline

import "github.com/islandsync/islandsync/island"

// A Sender also estimates, from the same confirmations, how many of the
// datagrams it sends its observer are lost: the authority spends parity on
// a lossy path and none on a clean one.

// LossHorizon is how far behind the newest datagram a confirmation names a
// datagram must be to be judged: still unconfirmed then, it is taken as
// lost. Reordering on a path with jitter brings datagrams a few numbers
// late, never 32.
const LossHorizon = 32

// InitialLoss is the loss estimate before a datagram is judged: lossy
// enough to spend parity until the path proves clean.
const InitialLoss = 0.1

// lossWeight is how many judged datagrams the estimate averages over: each
// moves it by 1/lossWeight of the difference (by 1/n while fewer, n judged,
// so that the estimate is their mean).
const lossWeight = 64

// lossMeter judges each datagram sent once, as received or lost.
type lossMeter struct {
	started   bool
	sent      uint32 // newest datagram sent
	next      uint32 // the oldest datagram not judged yet
	rate      float64
	lost, got uint64
	clean     uint64 // datagrams judged received since the last judged lost
}

// packet records that datagram n went out.
func (m *lossMeter) packet(n uint32) {
	if !m.started {
		m.started, m.next, m.rate = true, n, InitialLoss
	}
	if island.SeqNewer(n, m.sent) || n == m.next {
		m.sent = n
	}
}

// judge judges every datagram at least LossHorizon behind newest — never
// one newer than any sent, whatever a confirmation claims — from what ring
// remembers of it: confirmed or not. One whose slot a newer datagram took
// is not judged.
func (m *lossMeter) judge(newest uint32, ring *[Remembered]sentPacket) {
	if !m.started {
		return
	}
	if island.SeqNewer(newest, m.sent) {
		newest = m.sent
	}
	end := newest - LossHorizon // judge through end
	if !island.SeqNewer(end, m.next) && end != m.next {
		return
	}
	if d := end - m.next; d >= Remembered {
		m.next = end - Remembered + 1 // the older ones are forgotten
	}
	for ; ; m.next++ {
		p := &ring[m.next%Remembered]
		if p.num == m.next {
			x := 0.0
			if p.live {
				x = 1
				m.lost++
				m.clean = 0
			} else {
				m.got++
				m.clean++
			}
			// The mean of all judged so far, until there are lossWeight;
			// then a moving average over about that many.
			m.rate += (x - m.rate) / float64(min(m.lost+m.got, lossWeight))
		}
		if m.next == end {
			m.next++
			return
		}
	}
}

// Loss returns the estimated share of the observer's datagrams that are
// lost (0–1): a moving average over about the last 64 judged (the mean of
// all judged while fewer were), InitialLoss before any was.
func (s *Sender) Loss() float64 {
	if !s.loss.started {
		return InitialLoss
	}
	return s.loss.rate
}

// Clean returns how many datagrams in a row, up to the newest judged, the
// observer's confirmations show received: 0 when the newest judged was
// lost, or none was judged.
func (s *Sender) Clean() uint64 { return s.loss.clean }
