package livestate

import (
	"fmt"
	"maps"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/receiver"
)

// State is one side's identities, leases and manifests.
type State struct {
	IDs       map[island.MemberID]bool
	Leases    map[uint32]island.Lease
	Manifests map[uint32]string // island → its manifest, printed
}

// New returns an empty State.
func New() State {
	return State{IDs: map[island.MemberID]bool{}, Leases: map[uint32]island.Lease{}, Manifests: map[uint32]string{}}
}

// Identity, Lease and Manifest add one of each: the callbacks of
// transport.Server.Live.
func (s State) Identity(id island.MemberID) { s.IDs[id] = true }

func (s State) Lease(l island.Lease) { s.Leases[l.Island] = l }

func (s State) Manifest(m island.Manifest) {
	s.Manifests[m.Island] = fmt.Sprint(m.Island, m.Topology, m.Config, m.Members)
}

// Equal reports whether both hold the same.
func (s State) Equal(o State) bool {
	return maps.Equal(s.IDs, o.IDs) && maps.Equal(s.Leases, o.Leases) && maps.Equal(s.Manifests, o.Manifests)
}

// Of returns what a receiver holds. Call it where the receiver is owned
// (a watcher's tick).
func Of(rx *receiver.Receiver) State {
	st := New()
	rx.Identities(st.Identity)
	for _, isl := range rx.Islands() {
		if l, ok := rx.Lease(isl); ok {
			st.Lease(l)
		}
		if m, ok := rx.Manifest(isl); ok {
			st.Manifest(m)
		}
	}
	return st
}
