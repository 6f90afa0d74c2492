package cluster

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Role is what a process does in a world.
type Role uint8

const (
	// Authority steps the islands of the shards it holds and sends their
	// frames.
	Authority Role = iota + 1
	// Front serves observers and re-broadcasts what authorities send.
	Front
)

func (r Role) String() string {
	switch r {
	case Authority:
		return "authority"
	case Front:
		return "front"
	}
	return "role(" + strconv.Itoa(int(r)) + ")"
}

// ParseRole reads "authority" or "front".
func ParseRole(s string) (Role, error) {
	switch s {
	case "authority":
		return Authority, nil
	case "front":
		return Front, nil
	}
	return 0, fmt.Errorf("cluster: role %q: want authority or front", s)
}

// Limits on what etcd holds. Values read back are hostile like any input:
// a key or value past them is ignored and counted (Table.Stats).
const (
	// MaxName is the longest member name, bytes. A name is letters,
	// digits, '.', '_' and '-'.
	MaxName = 64
	// MaxAddr is the longest address a member registers, bytes.
	MaxAddr = 256
	// MaxMembers caps the members a Table tracks.
	MaxMembers = 4096
	// MaxShards caps the shards a Table tracks; shard numbers lie in
	// [0, MaxShards).
	MaxShards = 1 << 16
)

// DefaultPrefix is the world's key prefix when Config.Prefix is empty.
const DefaultPrefix = "/islandsync/world/"

// Key layout under a world's prefix P:
//
//	P timeline                  the world timeline id, 16 lower-case hex digits, written once
//	P start                     the instant authority time 0 stands for, Unix µs in decimal, written with it
//	P members/authority/<name>  an authority's registration, bound to its session; value: "ADDR FINGERPRINT",
//	                            ADDR where fronts dial it, or "-" when it dials the fronts' uplink ports instead
//	P members/front/<name>      a front's registration, bound to its session; value: "ADDR FINGERPRINT" or
//	                            "ADDR FINGERPRINT UPLINK", ADDR where observers dial, UPLINK where authorities may
//
// FINGERPRINT is the SHA-256 of the member's certificate, 64 lower-case hex
// digits: whoever dials the member pins it, and a front's uplink port
// admits exactly the certificates of registered authorities.
//
//	P shards/<n>                shard n's authority: value the holder's name, bound to its session;
//	                            the key's creation revision is the epoch of every island in the shard
//	P handoff/<n>               shard n released for its next holder: value "HOLDER EPOCH" (the releasing
//	                            holder and its epoch, decimal), bound to the releasing holder's session;
//	                            written by the release, replaced by the shard's next release
const (
	keyTimeline = "timeline"
	keyStart    = "start"
	keyMembers  = "members/"
	keyShards   = "shards/"
	keyHandOff  = "handoff/"
)

func memberKey(prefix string, r Role, name string) string {
	return prefix + keyMembers + r.String() + "/" + name
}

func handOffKey(prefix string, shard uint32) string {
	return prefix + keyHandOff + strconv.FormatUint(uint64(shard), 10)
}

// handOffValue is what P handoff/<n> holds.
func handOffValue(holder string, epoch uint32) string {
	return holder + " " + strconv.FormatUint(uint64(epoch), 10)
}

// parseHandOff reads a P handoff/<n> value.
func parseHandOff(v string) (Holding, bool) {
	name, ep, ok := strings.Cut(v, " ")
	if !ok || checkName(name) != nil || ep == "" || len(ep) > 10 || ep[0] == '0' {
		return Holding{}, false
	}
	n, err := strconv.ParseUint(ep, 10, 32)
	if err != nil {
		return Holding{}, false
	}
	return Holding{Holder: name, Epoch: uint32(n)}, true
}

func shardKey(prefix string, shard uint32) string {
	return prefix + keyShards + strconv.FormatUint(uint64(shard), 10)
}

// checkName refuses a member name that is empty, too long or holds a byte
// other than a letter, digit, '.', '_' or '-'.
func checkName(name string) error {
	if name == "" || len(name) > MaxName {
		return fmt.Errorf("cluster: member name %q: 1 to %d bytes", name, MaxName)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("cluster: member name %q: only letters, digits, '.', '_' and '-'", name)
		}
	}
	return nil
}

// checkPrefix refuses a prefix that does not end in '/'.
func checkPrefix(p string) error {
	if p == "" || !strings.HasSuffix(p, "/") {
		return fmt.Errorf("cluster: prefix %q must end in '/'", p)
	}
	return nil
}

// parseShard reads the shard number of a key under P shards/.
func parseShard(rest string) (uint32, bool) {
	if rest == "" || len(rest) > 5 || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, 32)
	if err != nil || n >= MaxShards {
		return 0, false
	}
	return uint32(n), true
}

// parseMember reads the role and name of a key under P members/.
func parseMember(rest string) (Role, string, bool) {
	role, name, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, "", false
	}
	r, err := ParseRole(role)
	if err != nil || checkName(name) != nil {
		return 0, "", false
	}
	return r, name, true
}

// ErrEpochRange is returned when etcd's revision no longer fits an island
// epoch (32 bits): after four billion writes to one etcd cluster, a world
// needs a fresh prefix or cluster.
var ErrEpochRange = errors.New("cluster: etcd revision past 2^32-1 cannot be an island epoch")

func epochOf(rev int64) (uint32, error) {
	if rev <= 0 || rev > math.MaxUint32 {
		return 0, ErrEpochRange
	}
	return uint32(rev), nil
}

// registration is the value a member registers (see the key layout).
type registration struct {
	addr        string // where it is dialled; dialsOut for an authority that dials instead
	fingerprint string // its certificate's SHA-256, lower-case hex
	uplink      string // a front's uplink port; "" when it has none
}

// dialsOut is the address of an authority that accepts no connections.
const dialsOut = "-"

func (r registration) String() string {
	if r.uplink == "" {
		return r.addr + " " + r.fingerprint
	}
	return r.addr + " " + r.fingerprint + " " + r.uplink
}

// parseRegistered reads a registered value: two or three fields, the
// fingerprint 64 lower-case hex digits.
func parseRegistered(v string) (registration, bool) {
	f := strings.Split(v, " ")
	if len(f) < 2 || len(f) > 3 || f[0] == "" || !isFingerprint(f[1]) {
		return registration{}, false
	}
	r := registration{addr: f[0], fingerprint: f[1]}
	if len(f) == 3 {
		if f[2] == "" || f[2] == dialsOut {
			return registration{}, false
		}
		r.uplink = f[2]
	}
	return r, true
}

func isFingerprint(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
