package island

import (
	"fmt"
	"strconv"
)

// SenderID names a peer that sends island frames. It is assigned by the
// transport or session layer; zero is a valid id.
type SenderID uint32

// String returns the id in decimal with an "s" prefix, e.g. "s7".
func (s SenderID) String() string { return "s" + strconv.FormatUint(uint64(s), 10) }

// Stream identifies one ordered stream of frames: one island under one owner
// epoch, one topology generation and one config revision. Frames within a
// stream are ordered by [Key.Seq]. The zero Stream is island 0 at epoch 0,
// topology 0, config 0; it is a valid value.
type Stream struct {
	Island   uint32 // island id, chosen by the authority
	Epoch    uint32 // authority epoch; bumps on every hand-off
	Topology uint32 // topology generation; bumps on any member or joint change
	Config   uint32 // config revision; bumps on constraint parameter changes
}

// String formats the stream as "i<island>/e<epoch>/t<topology>/c<config>".
func (s Stream) String() string {
	return fmt.Sprintf("i%d/e%d/t%d/c%d", s.Island, s.Epoch, s.Topology, s.Config)
}

// Key is the composite version key of one island frame. It is comparable and
// may be used as a map key. The zero Key is island 0, epoch 0, topology 0,
// config 0, sequence 0: a valid key, not a sentinel.
type Key struct {
	Island   uint32 // island id
	Epoch    uint32 // authority epoch
	Topology uint32 // topology generation
	Config   uint32 // config revision
	Seq      uint32 // frame sequence within the stream; wraps (see SeqNewer)
}

// Stream returns the key without its sequence number.
func (k Key) Stream() Stream {
	return Stream{Island: k.Island, Epoch: k.Epoch, Topology: k.Topology, Config: k.Config}
}

// String formats the key as "i<island>/e<epoch>/t<topology>/c<config>#<seq>".
func (k Key) String() string {
	return fmt.Sprintf("i%d/e%d/t%d/c%d#%d", k.Island, k.Epoch, k.Topology, k.Config, k.Seq)
}

// AppendTo appends the textual form of k to b without allocating.
func (k Key) AppendTo(b []byte) []byte {
	b = append(b, 'i')
	b = strconv.AppendUint(b, uint64(k.Island), 10)
	b = append(b, "/e"...)
	b = strconv.AppendUint(b, uint64(k.Epoch), 10)
	b = append(b, "/t"...)
	b = strconv.AppendUint(b, uint64(k.Topology), 10)
	b = append(b, "/c"...)
	b = strconv.AppendUint(b, uint64(k.Config), 10)
	b = append(b, '#')
	return strconv.AppendUint(b, uint64(k.Seq), 10)
}
