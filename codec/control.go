package codec

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/islandsync/islandsync/island"
)

// ControlVersion is the control protocol version a Welcome carries. It
// changes whenever a control record's layout or meaning changes.
const ControlVersion = 3

// ControlHeaderSize is the envelope before every control message body: a
// u32 length (bytes after the length field) and a u8 message type.
const ControlHeaderSize = 5

// idSize is one member identity on the wire: u64 stable id, u32 generation.
const idSize = 12

// Control message limits. Each bounds what a peer on the control stream can
// make the other side allocate.
const (
	// DefaultMaxControlMessage is the default cap on one control message's
	// length field: enough for an Announce of every identity a default
	// registry holds.
	DefaultMaxControlMessage = 1 << 20
	// DefaultMaxControlIDs caps the identities in one Announce or Destroy.
	DefaultMaxControlIDs = 1 << 16
	// DefaultMaxControlIslands caps the islands one Subscribe or Keyframes names.
	DefaultMaxControlIslands = 4096
)

// ControlLimits caps what ParseControl accepts. The zero value means every
// default; the member cap of a Manifest is Config.MaxMembers.
type ControlLimits struct {
	// MaxMessage caps the length field in bytes. Zero means DefaultMaxControlMessage.
	MaxMessage int
	// MaxIDs caps identities per Announce or Destroy. Zero means DefaultMaxControlIDs.
	MaxIDs int
	// MaxMembers caps a Manifest's members and a Physics message's bodies.
	// Zero means DefaultMaxMembers.
	MaxMembers int
	// MaxIslands caps islands per Subscribe or Keyframes. Zero means DefaultMaxControlIslands.
	MaxIslands int
	// MaxJoints caps a Physics message's joints. Zero means DefaultMaxControlJoints.
	MaxJoints int
	// MaxSegments caps a Physics message's static segments. Zero means
	// DefaultMaxControlSegments.
	MaxSegments int
}

// WithDefaults returns l with zero fields replaced by their defaults.
func (l ControlLimits) WithDefaults() ControlLimits {
	if l.MaxMessage <= 0 {
		l.MaxMessage = DefaultMaxControlMessage
	}
	if l.MaxIDs <= 0 {
		l.MaxIDs = DefaultMaxControlIDs
	}
	if l.MaxMembers <= 0 {
		l.MaxMembers = DefaultMaxMembers
	}
	if l.MaxIslands <= 0 {
		l.MaxIslands = DefaultMaxControlIslands
	}
	if l.MaxJoints <= 0 {
		l.MaxJoints = DefaultMaxControlJoints
	}
	if l.MaxSegments <= 0 {
		l.MaxSegments = DefaultMaxControlSegments
	}
	return l
}

// MessageType is the type byte of a control message.
type MessageType uint8

// Control message types. Server → observer types are below 0x10, observer →
// server types from 0x10.
const (
	TypeWelcome   MessageType = 0x01
	TypeAnnounce  MessageType = 0x02
	TypeDestroy   MessageType = 0x03
	TypeLease     MessageType = 0x04
	TypeManifest  MessageType = 0x05
	TypeForget    MessageType = 0x06
	TypeCut       MessageType = 0x07
	TypeSubscribe MessageType = 0x10
	TypeKeyframes MessageType = 0x13
	TypeHello     MessageType = 0x14
	TypeReceived  MessageType = 0x15
)

func (t MessageType) String() string {
	switch t {
	case TypeWelcome:
		return "welcome"
	case TypeAnnounce:
		return "announce"
	case TypeDestroy:
		return "destroy"
	case TypeLease:
		return "lease"
	case TypeManifest:
		return "manifest"
	case TypeForget:
		return "forget"
	case TypeCut:
		return "cut"
	case TypePhysics:
		return "physics"
	case TypeReceived:
		return "received"
	case TypeKeyframes:
		return "keyframes"
	case TypeSubscribe:
		return "subscribe"
	case TypeHello:
		return "hello"
	}
	return fmt.Sprintf("type-0x%02x", uint8(t))
}

// FromServer reports whether messages of type t travel from the authority
// to observers.
func (t MessageType) FromServer() bool { return t >= TypeWelcome && t <= TypePhysics }

// Message is one control message. Every implementation is a value type of
// this package; Append writes the whole message, envelope included.
type Message interface {
	Type() MessageType
	// Size returns the encoded size in bytes, envelope included.
	Size() int
	// Append appends the encoded message to b.
	Append(b []byte) []byte
}

// TypeOf returns m.Type() — zero for a nil message or a type not of this
// package — without calling through the interface, so that a function
// handed a message need not make it escape to the heap: a message boxed on
// the stack stays there.
func TypeOf(m Message) MessageType {
	switch m.(type) {
	case Welcome:
		return TypeWelcome
	case Announce:
		return TypeAnnounce
	case Destroy:
		return TypeDestroy
	case Lease:
		return TypeLease
	case Manifest:
		return TypeManifest
	case Forget:
		return TypeForget
	case Cut:
		return TypeCut
	case Physics:
		return TypePhysics
	case Subscribe:
		return TypeSubscribe
	case Received:
		return TypeReceived
	case Keyframes:
		return TypeKeyframes
	case Hello:
		return TypeHello
	}
	return 0
}

// Welcome is the first message the authority sends on a connection.
type Welcome struct {
	Version uint8 // control protocol version; ControlVersion
	// Timeline names the authority's simulation clock. It changes when the
	// authority restarts; authority times of different timelines are unrelated.
	Timeline uint64
	// SendPeriod is the broadcast period in microseconds; at least 1.
	SendPeriod uint32
	// MaxDatagram is the datagram cap the authority encodes this observer's
	// frames for, in bytes; MinMaxDatagram … MaxMaxDatagram.
	MaxDatagram uint16
}

// Announce says that identities come into existence at authority time Time.
type Announce struct {
	Time island.Time // authority µs the identities take effect
	IDs  []island.MemberID
}

// Destroy says that identities (these generations) are retired at authority
// time Time; receivers tombstone them so late records never revive them.
type Destroy struct {
	Time island.Time
	IDs  []island.MemberID
}

// Lease is an island's current authority: owner and epoch.
type Lease island.Lease

// Manifest is an island's current member list under one topology generation
// and config revision. Members are in manifest order.
type Manifest island.Manifest

// Forget says an island id no longer exists (it merged or emptied).
type Forget struct{ Island uint32 }

// Cut says an island's continuity segment Segment starts at authority time
// Time (a teleport, a respawn): receivers never extrapolate the older
// segment past Time, and show nothing rather than the old pose until a
// frame of the new segment is held.
type Cut struct {
	Island  uint32
	Segment uint32
	Time    island.Time
}

// Received confirms datagrams (wire 3): datagram Newest, and datagram
// Newest−1−i for every set bit i of Prior, arrived and were processed —
// every frame they carried is held as a baseline, unless its island is in
// a Keyframes sent before. Its size is the same whatever the world's.
type Received struct {
	Newest uint32 // datagram number (serial arithmetic)
	Prior  uint64
}

// Keyframes asks for keyframes of the islands listed (ascending): the
// observer lacks a baseline a delta named, or a frame of the island failed;
// it takes no frame of them sent before this request arrives as held.
type Keyframes struct{ Islands []uint32 }

// Hello is the first message of an observer that presents a connect token
// (package token): a server that requires tokens reads it before anything
// else, and gives the observer a slot only when the token verifies. Token
// holds the token's bytes, 1 … MaxHelloToken of them; the codec does not
// look inside.
type Hello struct{ Token []byte }

// MaxHelloToken caps a Hello's token: it is read before the observer holds
// anything, so what it can make the server buffer is small.
const MaxHelloToken = 8 << 10

// Subscribe tells the authority which islands an observer wants. All means
// every island; otherwise Islands lists them in strictly ascending order (an
// empty list subscribes to nothing).
type Subscribe struct {
	All     bool
	Islands []uint32
}

func (Welcome) Type() MessageType   { return TypeWelcome }
func (Announce) Type() MessageType  { return TypeAnnounce }
func (Destroy) Type() MessageType   { return TypeDestroy }
func (Lease) Type() MessageType     { return TypeLease }
func (Manifest) Type() MessageType  { return TypeManifest }
func (Forget) Type() MessageType    { return TypeForget }
func (Cut) Type() MessageType       { return TypeCut }
func (Subscribe) Type() MessageType { return TypeSubscribe }
func (Received) Type() MessageType  { return TypeReceived }
func (Keyframes) Type() MessageType { return TypeKeyframes }
func (Hello) Type() MessageType     { return TypeHello }

// Body sizes of the fixed parts.
const (
	welcomeBody   = 1 + 8 + 4 + 2
	idListHead    = 8 + 4 // time, count
	leaseBody     = 12
	manifestHead  = 16
	forgetBody    = 4
	cutBody       = 16
	subscribeHead = 1 + 4
	receivedBody  = 4 + 8
)

func (Welcome) Size() int     { return ControlHeaderSize + welcomeBody }
func (m Announce) Size() int  { return ControlHeaderSize + idListHead + idSize*len(m.IDs) }
func (m Destroy) Size() int   { return ControlHeaderSize + idListHead + idSize*len(m.IDs) }
func (Lease) Size() int       { return ControlHeaderSize + leaseBody }
func (m Manifest) Size() int  { return ControlHeaderSize + manifestHead + idSize*len(m.Members) }
func (Forget) Size() int      { return ControlHeaderSize + forgetBody }
func (Cut) Size() int         { return ControlHeaderSize + cutBody }
func (m Subscribe) Size() int { return ControlHeaderSize + subscribeHead + 4*len(m.Islands) }
func (Received) Size() int    { return ControlHeaderSize + receivedBody }
func (m Keyframes) Size() int { return ControlHeaderSize + 4 + 4*len(m.Islands) }
func (m Hello) Size() int     { return ControlHeaderSize + 2 + len(m.Token) }

// appendEnvelope writes the length and type of a message of size bytes
// (envelope included). It takes no Message interface, so appending a
// message value never boxes it.
func appendEnvelope(b []byte, t MessageType, size int) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(size-4))
	return append(b, byte(t))
}

func appendIDs(b []byte, ids []island.MemberID) []byte {
	for _, id := range ids {
		b = binary.LittleEndian.AppendUint64(b, id.Stable)
		b = binary.LittleEndian.AppendUint32(b, id.Generation)
	}
	return b
}

func (m Welcome) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	b = append(b, m.Version)
	b = binary.LittleEndian.AppendUint64(b, m.Timeline)
	b = binary.LittleEndian.AppendUint32(b, m.SendPeriod)
	return binary.LittleEndian.AppendUint16(b, m.MaxDatagram)
}

func appendIDList(b []byte, typ MessageType, t island.Time, ids []island.MemberID) []byte {
	b = appendEnvelope(b, typ, ControlHeaderSize+idListHead+idSize*len(ids))
	b = binary.LittleEndian.AppendUint64(b, uint64(t))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ids)))
	return appendIDs(b, ids)
}

func (m Announce) Append(b []byte) []byte { return appendIDList(b, TypeAnnounce, m.Time, m.IDs) }
func (m Destroy) Append(b []byte) []byte  { return appendIDList(b, TypeDestroy, m.Time, m.IDs) }

func (m Lease) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	b = binary.LittleEndian.AppendUint32(b, m.Island)
	b = binary.LittleEndian.AppendUint32(b, m.Epoch)
	return binary.LittleEndian.AppendUint32(b, uint32(m.Owner))
}

func (m Manifest) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	b = binary.LittleEndian.AppendUint32(b, m.Island)
	b = binary.LittleEndian.AppendUint32(b, m.Topology)
	b = binary.LittleEndian.AppendUint32(b, m.Config)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Members)))
	return appendIDs(b, m.Members)
}

func (m Forget) Append(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(appendEnvelope(b, m.Type(), m.Size()), m.Island)
}

func (m Cut) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	b = binary.LittleEndian.AppendUint32(b, m.Island)
	b = binary.LittleEndian.AppendUint32(b, m.Segment)
	return binary.LittleEndian.AppendUint64(b, uint64(m.Time))
}

// Append writes the Hello; a token longer than MaxHelloToken is the
// caller's mistake and is written anyway (the parser refuses it).
func (m Hello) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	b = binary.LittleEndian.AppendUint16(b, uint16(len(m.Token)))
	return append(b, m.Token...)
}

func (m Subscribe) Append(b []byte) []byte {
	b = appendEnvelope(b, m.Type(), m.Size())
	mode := byte(1)
	if m.All {
		mode = 0
	}
	b = append(b, mode)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Islands)))
	for _, id := range m.Islands {
		b = binary.LittleEndian.AppendUint32(b, id)
	}
	return b
}

func appendU32s(b []byte, vs ...uint32) []byte {
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func (m Received) Append(b []byte) []byte {
	return binary.LittleEndian.AppendUint64(appendU32s(appendEnvelope(b, m.Type(), m.Size()), m.Newest), m.Prior)
}

func (m Keyframes) Append(b []byte) []byte {
	return appendU32s(appendU32s(appendEnvelope(b, m.Type(), m.Size()), uint32(len(m.Islands))), m.Islands...)
}

// ControlLength reads the envelope at the start of b and returns the whole
// message size (length field included) without parsing the body, so a stream
// reader knows how many bytes to wait for. It returns ErrTruncated while
// fewer than ControlHeaderSize bytes are present, and ErrLimit or
// ErrMalformed for a length no message of lim can have.
func ControlLength(b []byte, lim *ControlLimits) (int, error) {
	if len(b) < ControlHeaderSize {
		return 0, fail(ErrTruncated, len(b), "control envelope")
	}
	n := binary.LittleEndian.Uint32(b)
	switch {
	case n == 0:
		return 0, fail(ErrMalformed, 0, "control length")
	case uint64(n) > uint64(lim.MaxMessage):
		return 0, fail(ErrLimit, 0, "control length")
	}
	return 4 + int(n), nil
}

// ParseControl reads one whole control message from the start of b under
// lim (defaults applied). It returns the message and the bytes consumed, or
// an error wrapping ErrTruncated (b holds less than the envelope claims),
// ErrLimit, ErrMalformed, ErrVersion or ErrUnknownType. Nothing is allocated
// from a count before it is checked against the bytes present. The encoding
// is canonical: a message that parses re-encodes to the identical bytes.
func ParseControl(b []byte, lim *ControlLimits) (Message, int, error) {
	p, total, err := openControl(b, lim)
	if err != nil {
		return nil, 0, err
	}
	m, err := p.message(MessageType(b[4]), lim)
	if err == nil {
		err = p.end()
	}
	if err != nil {
		return nil, 0, err
	}
	return m, total, nil
}

// openControl checks a message's envelope and returns a parser over its
// body and the message's whole length.
func openControl(b []byte, lim *ControlLimits) (ctlParser, int, error) {
	total, err := ControlLength(b, lim)
	if err != nil {
		return ctlParser{}, 0, err
	}
	if len(b) < total {
		return ctlParser{}, 0, fail(ErrTruncated, len(b), "control body")
	}
	return ctlParser{b: b[ControlHeaderSize:total], off: ControlHeaderSize}, total, nil
}

// message parses a body of type t into fresh storage.
func (p *ctlParser) message(t MessageType, lim *ControlLimits) (Message, error) {
	switch t {
	case TypeWelcome:
		return p.welcome()
	case TypeAnnounce:
		var a Announce
		var err error
		a.Time, a.IDs, err = p.idList(lim.MaxIDs)
		return a, err
	case TypeDestroy:
		var d Destroy
		var err error
		d.Time, d.IDs, err = p.idList(lim.MaxIDs)
		return d, err
	case TypeLease:
		return p.lease()
	case TypeManifest:
		return p.manifest(lim.MaxMembers)
	case TypeForget:
		return p.forget()
	case TypeCut:
		return p.cut()
	case TypeSubscribe:
		return p.subscribe(lim.MaxIslands)
	case TypeHello:
		return p.hello()
	case TypeReceived:
		return p.received()
	case TypeKeyframes:
		return p.keyframes(lim.MaxIslands, nil)
	case TypePhysics:
		return p.physics(lim.MaxMembers, lim.MaxJoints, lim.MaxSegments)
	}
	return nil, fail(ErrUnknownType, 4, "control type")
}

// end refuses bytes left after a message's last field.
func (p *ctlParser) end() error {
	if len(p.b) != 0 {
		return fail(ErrMalformed, p.off, "control trailing bytes")
	}
	return nil
}

// ControlDecoder reads control messages as ParseControl does, but decodes
// the ones that flow all the time — Received and Keyframes from every
// observer, several times a second — into
// storage it keeps and reuses, so that once that storage has grown, reading
// them allocates nothing. Their slices are therefore valid only until the
// next Decode. Every other message is decoded into fresh storage the caller
// may keep. The storage is bounded by the limits: it never holds more than
// the largest message they let through.
//
// Decode reads one message and returns its type; Message returns the
// message. A decoder is not safe for concurrent use.
type ControlDecoder struct {
	lim       ControlLimits
	t         MessageType
	received  Received
	keyframes Keyframes
	other     Message // any other type
}

// NewControlDecoder returns a decoder that reads under lim (zero fields
// take their defaults).
func NewControlDecoder(lim ControlLimits) *ControlDecoder {
	return &ControlDecoder{lim: lim.WithDefaults()}
}

// Decode reads one whole control message from the start of b. It returns
// its type and the bytes it took, or the errors ParseControl returns; on
// an error the message the decoder held before is gone.
func (d *ControlDecoder) Decode(b []byte) (MessageType, int, error) {
	d.t, d.other = 0, nil
	p, total, err := openControl(b, &d.lim)
	if err != nil {
		return 0, 0, err
	}
	t := MessageType(b[4])
	switch t {
	case TypeReceived:
		d.received, err = p.received()
	case TypeKeyframes:
		var m Keyframes
		if m, err = p.keyframes(d.lim.MaxIslands, d.keyframes.Islands); err == nil {
			d.keyframes = m
		}
	default:
		d.other, err = p.message(t, &d.lim)
	}
	if err == nil {
		err = p.end()
	}
	if err != nil {
		d.other = nil
		return 0, 0, err
	}
	d.t = t
	return t, total, nil
}

// Message returns the message the last Decode read, or nil when that
// Decode failed. The slice of a Keyframes is the decoder's, valid
// until the next Decode. Message is small enough to be inlined, so the
// interface box of those two stays on the caller's stack
// unless the caller lets the message escape (Receiver.ControlBytes and
// Broadcaster.FeedbackBytes do not).
func (d *ControlDecoder) Message() Message {
	switch d.t {
	case TypeReceived:
		return d.received
	case TypeKeyframes:
		return d.keyframes
	}
	return d.other
}

// reuse returns dst resized to n, with fresh storage when dst is nil (so
// that a message parsed for keeping never shares storage).
func reuse[T any](dst []T, n int) []T {
	if dst == nil {
		return make([]T, n)
	}
	return slices.Grow(dst[:0], n)[:n]
}

// ctlParser reads fields from a message body; off is the offset of b[0] in
// the whole message, for error reports.
type ctlParser struct {
	b   []byte
	off int
}

func (p *ctlParser) need(n int, field string) error {
	if len(p.b) < n {
		return fail(ErrTruncated, p.off+len(p.b), field)
	}
	return nil
}

func (p *ctlParser) u8() uint8 {
	v := p.b[0]
	p.b, p.off = p.b[1:], p.off+1
	return v
}

func (p *ctlParser) u16() uint16 {
	v := binary.LittleEndian.Uint16(p.b)
	p.b, p.off = p.b[2:], p.off+2
	return v
}

func (p *ctlParser) u32() uint32 {
	v := binary.LittleEndian.Uint32(p.b)
	p.b, p.off = p.b[4:], p.off+4
	return v
}

func (p *ctlParser) u64() uint64 {
	v := binary.LittleEndian.Uint64(p.b)
	p.b, p.off = p.b[8:], p.off+8
	return v
}

// count reads a u32 count of items of size bytes each and checks it against
// max and against the bytes that remain, before anything is allocated.
func (p *ctlParser) count(size, max int, field string) (int, error) {
	if err := p.need(4, field); err != nil {
		return 0, err
	}
	at := p.off
	n := p.u32()
	switch {
	case uint64(n) > uint64(max):
		return 0, fail(ErrLimit, at, field)
	case uint64(n)*uint64(size) > uint64(len(p.b)):
		return 0, fail(ErrTruncated, p.off+len(p.b), field)
	}
	return int(n), nil
}

func (p *ctlParser) ids(n int) []island.MemberID {
	ids := make([]island.MemberID, n)
	for i := range ids {
		ids[i].Stable = p.u64()
		ids[i].Generation = p.u32()
	}
	return ids
}

func (p *ctlParser) welcome() (Welcome, error) {
	var w Welcome
	if err := p.need(welcomeBody, "welcome"); err != nil {
		return w, err
	}
	at := p.off
	w.Version, w.Timeline, w.SendPeriod, w.MaxDatagram = p.u8(), p.u64(), p.u32(), p.u16()
	switch {
	case w.Version != ControlVersion:
		return Welcome{}, fail(ErrVersion, at, "welcome version")
	case w.SendPeriod == 0:
		return Welcome{}, fail(ErrMalformed, at+9, "welcome send period")
	case w.MaxDatagram < MinMaxDatagram:
		return Welcome{}, fail(ErrMalformed, at+13, "welcome max datagram")
	}
	return w, nil
}

func (p *ctlParser) idList(max int) (island.Time, []island.MemberID, error) {
	if err := p.need(8, "time"); err != nil {
		return 0, nil, err
	}
	t := island.Time(p.u64())
	at := p.off
	n, err := p.count(idSize, max, "identity count")
	if err != nil {
		return 0, nil, err
	}
	if n == 0 {
		return 0, nil, fail(ErrMalformed, at, "identity count")
	}
	return t, p.ids(n), nil
}

func (p *ctlParser) lease() (Lease, error) {
	if err := p.need(leaseBody, "lease"); err != nil {
		return Lease{}, err
	}
	return Lease{Island: p.u32(), Epoch: p.u32(), Owner: island.SenderID(p.u32())}, nil
}

func (p *ctlParser) manifest(max int) (Manifest, error) {
	if err := p.need(12, "manifest"); err != nil {
		return Manifest{}, err
	}
	m := Manifest{Island: p.u32(), Topology: p.u32(), Config: p.u32()}
	at := p.off
	n, err := p.count(idSize, max, "member count")
	if err != nil {
		return Manifest{}, err
	}
	if n == 0 {
		return Manifest{}, fail(ErrMalformed, at, "member count")
	}
	m.Members = p.ids(n)
	return m, nil
}

func (p *ctlParser) forget() (Forget, error) {
	if err := p.need(forgetBody, "forget"); err != nil {
		return Forget{}, err
	}
	return Forget{Island: p.u32()}, nil
}

func (p *ctlParser) cut() (Cut, error) {
	if err := p.need(cutBody, "cut"); err != nil {
		return Cut{}, err
	}
	return Cut{Island: p.u32(), Segment: p.u32(), Time: island.Time(p.u64())}, nil
}

func (p *ctlParser) hello() (Hello, error) {
	if err := p.need(2, "hello token length"); err != nil {
		return Hello{}, err
	}
	at := p.off
	n := int(p.u16())
	if n == 0 || n > MaxHelloToken {
		return Hello{}, fail(ErrMalformed, at, "hello token length")
	}
	if err := p.need(n, "hello token"); err != nil {
		return Hello{}, err
	}
	h := Hello{Token: slices.Clone(p.b[:n])}
	p.b, p.off = p.b[n:], p.off+n
	return h, nil
}

func (p *ctlParser) subscribe(max int) (Subscribe, error) {
	if err := p.need(1, "subscribe mode"); err != nil {
		return Subscribe{}, err
	}
	at := p.off
	mode := p.u8()
	if mode > 1 {
		return Subscribe{}, fail(ErrMalformed, at, "subscribe mode")
	}
	at = p.off
	n, err := p.count(4, max, "island count")
	if err != nil {
		return Subscribe{}, err
	}
	s := Subscribe{All: mode == 0}
	if s.All {
		if n != 0 {
			return Subscribe{}, fail(ErrMalformed, at, "island count")
		}
		return s, nil
	}
	s.Islands = make([]uint32, n)
	for i := range s.Islands {
		at = p.off
		s.Islands[i] = p.u32()
		if i > 0 && s.Islands[i] <= s.Islands[i-1] {
			return Subscribe{}, fail(ErrMalformed, at, "island order")
		}
	}
	return s, nil
}

// ascending checks that island ids come in strictly ascending order.
func ascending(prev *uint32, have *bool, isl uint32, at int, field string) error {
	if *have && isl <= *prev {
		return fail(ErrMalformed, at, field)
	}
	*prev, *have = isl, true
	return nil
}

func (p *ctlParser) received() (Received, error) {
	if err := p.need(receivedBody, "received"); err != nil {
		return Received{}, err
	}
	return Received{Newest: p.u32(), Prior: p.u64()}, nil
}

func (p *ctlParser) keyframes(max int, dst []uint32) (Keyframes, error) {
	n, err := p.count(4, max, "keyframe count")
	if err != nil {
		return Keyframes{}, err
	}
	m := Keyframes{Islands: reuse(dst, n)}
	var prev uint32
	var have bool
	for i := range m.Islands {
		at := p.off
		m.Islands[i] = p.u32()
		if err := ascending(&prev, &have, m.Islands[i], at, "keyframe island order"); err != nil {
			return Keyframes{}, err
		}
	}
	return m, nil
}
