package assembler

// Outcome is what happened to one pushed fragment, or to one pending frame
// that the assembler dropped. Every outcome has a counter in Stats.
type Outcome uint8

const (
	// Buffered: the fragment was stored; its frame is still incomplete.
	Buffered Outcome = iota
	// Completed: the fragment completed its frame, which is returned whole.
	Completed
	// Duplicate: an identical copy of a fragment already held. Accepted
	// idempotently: nothing changes, no bytes are accounted twice.
	Duplicate
	// Rebuilt: a data fragment of a frame that carries parity was rebuilt
	// from the frame's other records (ParityData, ParityRecord).
	Rebuilt

	// RejectMalformed: the fragment contradicts itself (index ≥ count, member
	// range past the total, member slices not matching the count). The
	// codec's decoder never produces one; hand-built fragments can.
	RejectMalformed
	// RejectTooLarge: the frame claims more members or fragments than the
	// configured caps, or needs more bytes than the whole byte cap.
	RejectTooLarge
	// RejectStale: the frame already completed in its stream (a replay or
	// a duplicate), or lies 64 or more frames behind the newest completed
	// one (serial-number order).
	RejectStale
	// RejectPoisoned: a fragment of a frame that was already rejected.
	RejectPoisoned
	// RejectConflictingDuplicate: same fragment index as one held, but
	// different content. Rejects the whole frame.
	RejectConflictingDuplicate
	// RejectHeaderConflict: time, segment, flags, total members, fragment
	// count or digest differ from the frame's other fragments. Rejects the
	// whole frame.
	RejectHeaderConflict
	// RejectOverlap: the fragment's member range overlaps members already
	// covered by another fragment. Rejects the whole frame.
	RejectOverlap
	// RejectOverCount: more members than the frame's total, or more
	// fragments than members could fill. Rejects the whole frame.
	RejectOverCount
	// RejectCoverageGap: every fragment arrived but some members are not
	// covered. Rejects the whole frame.
	RejectCoverageGap
	// RejectDuplicateMember: the assembled frame holds one member identity
	// twice. Rejects the whole frame.
	RejectDuplicateMember
	// RejectDigestMismatch: the assembled members do not hash to the digest
	// in the header. Rejects the whole frame.
	RejectDigestMismatch
	// RejectParity: a rebuild from parity failed: parity records that do
	// not fit their frame's fragments (their lengths), or a rebuilt
	// fragment that is not the fragment of that frame it stands for.
	// Nothing of it is handed back.
	RejectParity

	// Expired: an incomplete frame outlived its TTL and was dropped.
	Expired
	// EvictedIslandCap: an incomplete frame was dropped to admit a newer
	// candidate of the same island (see MaxCandidatesPerIsland).
	EvictedIslandCap
	// EvictedPendingCap: an incomplete frame was dropped because the global
	// pending-frame cap was reached.
	EvictedPendingCap
	// EvictedByteCap: an incomplete frame was dropped because the global
	// pending-byte cap was reached.
	EvictedByteCap
	// DroppedReset: an incomplete frame was dropped by Reset (its sender
	// started a new timeline).
	DroppedReset
	// ParityDropped: a frame that carries parity, some of whose data
	// fragments arrived, expired or was evicted before it completed or could
	// be rebuilt.
	ParityDropped

	// NumOutcomes is the number of outcomes.
	NumOutcomes
)

var outcomeNames = [NumOutcomes]string{
	Buffered:                   "buffered",
	Completed:                  "completed",
	Duplicate:                  "duplicate",
	Rebuilt:                    "rebuilt",
	RejectMalformed:            "malformed",
	RejectTooLarge:             "too-large",
	RejectStale:                "stale",
	RejectPoisoned:             "poisoned",
	RejectConflictingDuplicate: "conflicting-duplicate",
	RejectHeaderConflict:       "header-conflict",
	RejectOverlap:              "overlap",
	RejectOverCount:            "over-count",
	RejectCoverageGap:          "coverage-gap",
	RejectDuplicateMember:      "duplicate-member",
	RejectDigestMismatch:       "digest-mismatch",
	RejectParity:               "parity-bad",
	Expired:                    "expired",
	EvictedIslandCap:           "evicted-island-cap",
	EvictedPendingCap:          "evicted-pending-cap",
	EvictedByteCap:             "evicted-byte-cap",
	DroppedReset:               "reset",
	ParityDropped:              "parity-dropped",
}

// String returns the outcome's stable name (used in reports and JSON).
func (o Outcome) String() string {
	if o < NumOutcomes {
		return outcomeNames[o]
	}
	return "unknown"
}

// IsReject reports whether o rejects the fragment's frame.
func (o Outcome) IsReject() bool { return o >= RejectMalformed && o <= RejectParity }

// IsDrop reports whether o is a pending frame dropped without a fault of its
// own fragments (expiry, a cap).
func (o Outcome) IsDrop() bool { return o >= Expired && o < NumOutcomes }
