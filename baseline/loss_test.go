package baseline

import (
	"math"
	"testing"
)

// lossRun sends datagrams first … first+n−1 to an observer that receives
// those keep says and confirms, after each datagram, everything it
// received within the 64 before the newest, as Arrivals reports it.
func lossRun(s *Sender, a *Arrivals, first uint32, n int, keep func(uint32) bool) {
	for i := range n {
		d := first + uint32(i)
		s.Packet(d)
		if keep(d) {
			a.Arrived(d)
		}
		if newest, prior, ok := a.Report(); ok {
			s.Received(newest, prior)
		}
	}
}

// TestLossEstimate: a clean path drives the estimate under 0.05 % after a
// few hundred datagrams; one losing every tenth datagram brings it to about
// 10 %; datagrams that arrive up to 20 numbers late are not taken as lost;
// and a confirmation naming a datagram never sent judges nothing past the
// newest sent.
func TestLossEstimate(t *testing.T) {
	s, a := NewSender(0), &Arrivals{}
	if got := s.Loss(); got != InitialLoss {
		t.Fatalf("before any datagram: %v, want %v", got, InitialLoss)
	}
	lossRun(s, a, 1000, 600, func(uint32) bool { return true })
	if lost, got := s.loss.lost, s.loss.got; lost != 0 || got != 600-LossHorizon {
		t.Fatalf("clean: %d lost, %d received, want 0 and %d", lost, got, 600-LossHorizon)
	}
	if p := s.Loss(); p > 0.0005 {
		t.Fatalf("clean path estimated at %v", p)
	}
	lossRun(s, a, 1600, 1000, func(d uint32) bool { return d%10 != 0 })
	if p := s.Loss(); math.Abs(p-0.1) > 0.06 {
		t.Fatalf("every tenth lost: estimated at %v", p)
	}
	// Judged through 2599 − LossHorizon: the tenths of 1600 … 2567.
	if lost, _ := s.loss.lost, s.loss.got; lost != 97 {
		t.Fatalf("every tenth of 1,000 lost: %d judged lost, want 97", lost)
	}

	// Reordering: each datagram arrives 20 numbers after it was sent.
	r, ra := NewSender(0), &Arrivals{}
	for i := range 600 {
		d := uint32(i)
		r.Packet(d)
		if i >= 20 {
			ra.Arrived(d - 20)
		}
		if newest, prior, ok := ra.Report(); ok {
			r.Received(newest, prior)
		}
	}
	if lost, _ := r.loss.lost, r.loss.got; lost != 0 {
		t.Fatalf("late by 20: %d judged lost", lost)
	}

	// A forged confirmation far ahead judges nothing not sent yet.
	f := NewSender(0)
	for d := range uint32(10) {
		f.Packet(d)
	}
	f.Received(1_000_000, 0)
	if lost, got := f.loss.lost, f.loss.got; lost+got != 0 {
		t.Fatalf("10 sent, a confirmation of 1,000,000: %d lost and %d received judged, want none (within %d of the newest sent)", lost, got, LossHorizon)
	}
	for d := uint32(10); d < 100; d++ {
		f.Packet(d)
	}
	f.Received(99, 0)
	if lost, got := f.loss.lost, f.loss.got; lost != 100-LossHorizon || got != 0 {
		t.Fatalf("100 sent, none confirmed: %d lost, %d received, want %d and 0", lost, got, 100-LossHorizon)
	}
}

// TestLossForgetsWhatTheRingForgot: an observer whose confirmations lag
// more than Remembered datagrams behind has its oldest datagrams skipped,
// not judged from slots newer datagrams took.
func TestLossForgetsWhatTheRingForgot(t *testing.T) {
	s := NewSender(0)
	for d := range uint32(1000) {
		s.Packet(d)
	}
	s.Received(999, ^uint64(0))
	lost, got := s.loss.lost, s.loss.got
	if lost+got > Remembered {
		t.Fatalf("%d judged from a ring of %d", lost+got, Remembered)
	}
}

// TestClean: Clean counts the datagrams judged received since the last
// judged lost.
func TestClean(t *testing.T) {
	s, a := NewSender(0), &Arrivals{}
	if s.Clean() != 0 {
		t.Fatalf("new: Clean %d", s.Clean())
	}
	lossRun(s, a, 0, 300, func(d uint32) bool { return d != 100 })
	// Judged through 299 − LossHorizon = 267; 100 was lost.
	if got := s.Clean(); got != 267-100 {
		t.Fatalf("Clean %d, want %d", got, 267-100)
	}
}
