package validator

// Reason says why Validate refused a frame. Every reason has a counter.
type Reason uint8

const (
	// OK: the frame was validated.
	OK Reason = iota
	// NoLease: no authority lease is known for the island.
	NoLease
	// StaleEpoch: the frame's epoch is older than the lease's (an old owner).
	StaleEpoch
	// FutureEpoch: the frame's epoch is newer than the lease this observer
	// knows; it waits for the hand-off announcement, it is never guessed.
	FutureEpoch
	// WrongSender: the sender is not the lease's owner.
	WrongSender
	// NoManifest: no topology manifest is known for the island.
	NoManifest
	// StaleTopology: the frame's topology generation is older than the manifest's.
	StaleTopology
	// FutureTopology: the frame's topology generation is newer than the manifest's.
	FutureTopology
	// StaleConfig: the frame's config revision is older than the manifest's.
	StaleConfig
	// FutureConfig: the frame's config revision is newer than the manifest's.
	FutureConfig
	// MemberCountMismatch: the frame does not carry exactly the manifest's
	// number of members.
	MemberCountMismatch
	// UnexpectedMember: a member identity is not in the manifest.
	UnexpectedMember
	// DuplicateMember: a manifest member appears twice.
	DuplicateMember
	// UnknownIdentity: a member's identity was not announced yet (or its
	// newer generation was not). Such frames are rejected, not held: the
	// next frame after the announcement validates.
	UnknownIdentity
	// Tombstoned: a member's generation was destroyed.
	Tombstoned
	// NonFinite: a member state holds NaN or ±Inf.
	NonFinite

	// NumReasons is the number of reasons.
	NumReasons
)

var reasonNames = [NumReasons]string{
	OK: "ok", NoLease: "no-lease", StaleEpoch: "stale-epoch", FutureEpoch: "future-epoch",
	WrongSender: "wrong-sender", NoManifest: "no-manifest", StaleTopology: "stale-topology",
	FutureTopology: "future-topology", StaleConfig: "stale-config", FutureConfig: "future-config",
	MemberCountMismatch: "member-count-mismatch", UnexpectedMember: "unexpected-member",
	DuplicateMember: "duplicate-member", UnknownIdentity: "unknown-identity", Tombstoned: "tombstoned",
	NonFinite: "non-finite",
}

// String returns the reason's stable name.
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return "unknown"
}
