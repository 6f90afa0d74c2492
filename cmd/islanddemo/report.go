package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/islandsync/islandsync/internal/quantile"
	"github.com/islandsync/islandsync/netsim"
)

// report is the whole run, as printed by -json. Field names are stable; see
// the README for their meaning.
type report struct {
	Seed        uint64           `json:"seed"`
	DurationS   float64          `json:"duration_s"`
	SendHz      int              `json:"send_hz"`
	Transport   string           `json:"transport"`
	Impairments impairmentReport `json:"impairments"`
	Scenarios   []scenarioReport `json:"scenarios"`
}

type impairmentReport struct {
	Loss    float64 `json:"loss"`
	BurstIn float64 `json:"burst_in"`
	// BurstSlotMs: a burst's state also moves once per this long without a
	// datagram; 0: per datagram only.
	BurstSlotMs float64 `json:"burst_slot_ms"`
	// BurstClockMs: a burst's state moves once per this long, whatever is
	// sent (BurstIn is then per tick, BurstSlotMs unused); 0: per datagram.
	BurstClockMs float64 `json:"burst_clock_ms"`
	Duplicate    float64 `json:"duplicate"`
	DelayMs      float64 `json:"delay_ms"`
	JitterMs     float64 `json:"jitter_ms"`
	Corrupt      float64 `json:"corrupt"`
	Adversary    bool    `json:"adversary"`
}

type receiverReport struct {
	HalfFramesApplied int     `json:"half_frames_applied"`
	MaxJointError     float64 `json:"max_joint_error"`
	P99JointError     float64 `json:"p99_joint_error"`
	// Position errors: how far each shown body is from where the server had
	// it at the view's playback time, metres (absent for the naive
	// receiver, which has no playback time).
	MaxPositionError float64 `json:"max_position_error,omitempty"`
	P99PositionError float64 `json:"p99_position_error,omitempty"`
}

// pipelineReport summarizes a receive path's joint and position errors.
func pipelineReport(half int, joint, pos []float64) receiverReport {
	return receiverReport{HalfFramesApplied: half, MaxJointError: round(maxOf(joint), 4), P99JointError: round(quantile.Nearest(joint, 99), 4),
		MaxPositionError: round(maxOf(pos), 4), P99PositionError: round(quantile.Nearest(pos, 99), 4)}
}

type floorReport struct {
	MaxJointError float64 `json:"max_joint_error"`
	P99JointError float64 `json:"p99_joint_error"`
}

type networkReport struct {
	Lost       uint64 `json:"lost"`
	Duplicated uint64 `json:"duplicated"`
	Corrupted  uint64 `json:"corrupted"`
	Injected   uint64 `json:"injected"`
	// Silences are the stretches of at least netsim.SilenceMin (150 ms)
	// in which the link to the observer delivered nothing — a loss burst,
	// a server that sent nothing, or both — and SilentMs their total, ms.
	Silences uint64  `json:"silences"`
	SilentMs float64 `json:"silent_ms"`
	// UpSilences and UpSilentMs are the same for the link from the
	// observer, over QUIC (it carries the acknowledgements QUIC's sender
	// waits for); nil on the simulated link, which delivers feedback
	// whatever it loses.
	UpSilences *uint64  `json:"up_silences,omitempty"`
	UpSilentMs *float64 `json:"up_silent_ms,omitempty"`
}

// silences fills n's silence fields from the link counters down (to the
// observer) and, when not nil, up (from it).
func (n *networkReport) silences(down netsim.LinkStats, up *netsim.LinkStats) {
	n.Silences, n.SilentMs = down.Silences, round(float64(down.SilentTime)/1000, 1)
	if up != nil {
		c, ms := up.Silences, round(float64(up.SilentTime)/1000, 1)
		n.UpSilences, n.UpSilentMs = &c, &ms
	}
}

type scenarioReport struct {
	Name           string `json:"name"`
	About          string `json:"about"`
	Verdict        string `json:"verdict"`         // pass: 0 half-frames; fail; n/a: nothing committed
	FramesSent     uint64 `json:"frames_sent"`     // sampled by the authority
	FramesDeferred uint64 `json:"frames_deferred"` // left out by the observer's budget: never encoded
	// FramesDroppedQueue counts frames the server dropped from the
	// observer's queue (over QUIC): superseded, over the cap or too late.
	FramesDroppedQueue uint64            `json:"frames_dropped_queue"`
	DatagramsSent      uint64            `json:"datagrams_sent"`
	BytesSent          uint64            `json:"bytes_sent"`
	BandwidthKBps      float64           `json:"bandwidth_kBps"`
	MaxFragmentsFrame  int               `json:"max_fragments_per_frame"`
	FramesCommitted    uint64            `json:"frames_committed"`
	FragmentsRebuilt   uint64            `json:"fragments_rebuilt"` // wire 3: data fragments rebuilt from parity records
	Rejects            map[string]uint64 `json:"rejects"`
	Pipeline           receiverReport    `json:"pipeline"`
	Straight           *receiverReport   `json:"straight,omitempty"` // the pipeline without local simulation; absent over QUIC
	Naive              *receiverReport   `json:"naive,omitempty"`    // absent over QUIC: the naive receiver needs the raw link
	ServerFloor        floorReport       `json:"server_floor"`
	FreezeSeconds      float64           `json:"freeze_s"`
	ExtrapolateSeconds float64           `json:"extrapolation_s"`
	SnapshotAgeP50ms   float64           `json:"snapshot_age_p50_ms"`
	SnapshotAgeP95ms   float64           `json:"snapshot_age_p95_ms"`
	CorrectionMaxM     float64           `json:"correction_max_m"`
	HandoffLatencyMs   float64           `json:"handoff_latency_ms"`
	// HeldForControl is the datagrams held because their frames waited
	// for a control message still on its way (a Lease, Manifest or
	// Physics), and HeldForControlMs how long the ones that then committed
	// had waited, summed, ms.
	HeldForControl   uint64  `json:"held_for_control"`
	HeldForControlMs float64 `json:"held_for_control_ms"`
	// StreamCopies counts, over QUIC, the stream copies that brought
	// control bytes before the stream did; absent on the simulated link,
	// whose control stream loses nothing.
	StreamCopies *uint64       `json:"stream_copies_used,omitempty"`
	Network      networkReport `json:"network"`

	ages []float64 // the snapshot age of every render not Waiting, ms (for -compare)
}

// burstMoves says when a loss burst's state moves.
func (im impairmentReport) burstMoves() string {
	switch {
	case im.BurstClockMs > 0:
		return fmt.Sprintf("per tick: state moves every %g ms", im.BurstClockMs)
	case im.BurstSlotMs > 0:
		return fmt.Sprintf("state moves per datagram or %.0f ms quiet", im.BurstSlotMs)
	}
	return "state moves per datagram only"
}

// printTable writes the human-readable report.
func printTable(w io.Writer, r *report) {
	im := r.Impairments
	fmt.Fprintf(w, "islandsync demo — seed %d, %.1f s per scenario, %d Hz broadcast, %s\n", r.Seed, r.DurationS, r.SendHz, r.Transport)
	fmt.Fprintf(w, "network: loss %.0f%%, burst-in %.1f%% (%s), duplicate %.0f%%, delay %.0f ms + jitter %.0f ms, corrupt %.1f%%, adversary %v\n\n",
		im.Loss*100, im.BurstIn*100, im.burstMoves(), im.Duplicate*100, im.DelayMs, im.JitterMs, im.Corrupt*100, im.Adversary)
	for _, s := range r.Scenarios {
		fmt.Fprintf(w, "== %s: %s — %s\n", s.Name, s.About, s.Verdict)
		frags := ""
		if s.MaxFragmentsFrame > 0 {
			frags = fmt.Sprintf(", up to %d fragments/frame", s.MaxFragmentsFrame)
		}
		rebuilt := ""
		if s.FragmentsRebuilt > 0 {
			rebuilt = fmt.Sprintf(" (%d fragments rebuilt from parity)", s.FragmentsRebuilt)
		}
		left := ""
		if s.FramesDeferred > 0 || s.FramesDroppedQueue > 0 {
			left = fmt.Sprintf(" (%d left out by the budget, %d dropped in the server's queue)", s.FramesDeferred, s.FramesDroppedQueue)
		}
		fmt.Fprintf(w, "   sent %d frames%s in %d datagrams (%d KiB, %.1f kB/s%s); committed %d frames%s\n",
			s.FramesSent, left, s.DatagramsSent, s.BytesSent/1024, s.BandwidthKBps, frags, s.FramesCommitted, rebuilt)
		fmt.Fprintf(w, "   network: %d lost, %d duplicated, %d corrupted, %d injected; silences of 150 ms or more: %d to the observer (%.0f ms)",
			s.Network.Lost, s.Network.Duplicated, s.Network.Corrupted, s.Network.Injected, s.Network.Silences, s.Network.SilentMs)
		if s.Network.UpSilences != nil {
			fmt.Fprintf(w, ", %d from it (%.0f ms)", *s.Network.UpSilences, *s.Network.UpSilentMs)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "   %-22s %12s %16s %16s %14s %14s\n", "receiver", "half-frames", "max joint err m", "p99 joint err m", "max pos err m", "p99 pos err m")
		fmt.Fprintf(w, "   %-22s %12d %16.4f %16.4f %14.4f %14.4f\n", "pipeline (atomic)", s.Pipeline.HalfFramesApplied, s.Pipeline.MaxJointError, s.Pipeline.P99JointError,
			s.Pipeline.MaxPositionError, s.Pipeline.P99PositionError)
		if s.Straight != nil {
			fmt.Fprintf(w, "   %-22s %12s %16.4f %16.4f %14.4f %14.4f\n", "  without local sim", "-", s.Straight.MaxJointError, s.Straight.P99JointError,
				s.Straight.MaxPositionError, s.Straight.P99PositionError)
		}
		if s.Naive != nil {
			fmt.Fprintf(w, "   %-22s %12d %16.4f %16.4f\n", "naive (per fragment)", s.Naive.HalfFramesApplied, s.Naive.MaxJointError, s.Naive.P99JointError)
		}
		fmt.Fprintf(w, "   %-22s %12s %16.4f %16.4f\n", "server floor", "-", s.ServerFloor.MaxJointError, s.ServerFloor.P99JointError)
		fmt.Fprintf(w, "   freeze %.2f s, extrapolation %.2f s, snapshot age p50 %.0f ms p95 %.0f ms, correction max %.3f m",
			s.FreezeSeconds, s.ExtrapolateSeconds, s.SnapshotAgeP50ms, s.SnapshotAgeP95ms, s.CorrectionMaxM)
		if s.HandoffLatencyMs > 0 {
			fmt.Fprintf(w, ", hand-off first frame %.0f ms", s.HandoffLatencyMs)
		}
		fmt.Fprintln(w)
		if s.HeldForControl > 0 || s.StreamCopies != nil {
			fmt.Fprintf(w, "   held for control: %d datagrams, %.0f ms in all", s.HeldForControl, s.HeldForControlMs)
			if s.StreamCopies != nil {
				fmt.Fprintf(w, "; stream copies read before the stream: %d", *s.StreamCopies)
			}
			fmt.Fprintln(w)
		}
		if len(s.Rejects) > 0 {
			keys := make([]string, 0, len(s.Rejects))
			for k := range s.Rejects {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			parts := make([]string, len(keys))
			for i, k := range keys {
				parts[i] = fmt.Sprintf("%s %d", k, s.Rejects[k])
			}
			fmt.Fprintf(w, "   rejected: %s\n", strings.Join(parts, ", "))
		}
		fmt.Fprintln(w)
	}
}
