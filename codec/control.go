package codec

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// ControlVersion is the control protocol version a Welcome carries. It
// changes whenever a control record's layout or meaning changes.
const ControlVersion = 8

// ControlHeaderSize is the envelope before every control message body: a
// u32 length (bytes after the length field) and a u8 message type.
const ControlHeaderSize = 5

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
	case TypeSpawn:
		return "spawn"
	case TypeFinal:
		return "final"
	case TypePhysics:
		return "physics"
	case TypePhysicsRef:
		return "physics-ref"
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
func (t MessageType) FromServer() bool { return t >= TypeWelcome && t <= TypeFinal }

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
	case Spawn:
		return TypeSpawn
	case Final:
		return TypeFinal
	case Physics:
		return TypePhysics
	case PhysicsRef:
		return TypePhysicsRef
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

// Body sizes of the fixed parts.
const (
	welcomeBody   = 1 + 8 + 4 + 2
	idListHead    = 8 + 4 // time, count
	leaseBody     = 12
	manifestHead  = 16
	forgetBody    = 12
	cutBody       = 16
	subscribeHead = 1 + 4
	receivedBody  = 4 + 8
)

// appendEnvelope writes the length and type of a message of size bytes
// (envelope included). It takes no Message interface, so appending a
// message value never boxes it.
func appendEnvelope(b []byte, t MessageType, size int) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(size-4))
	return append(b, byte(t))
}

func appendU32s(b []byte, vs ...uint32) []byte {
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

// ControlLength reads the envelope at the start of b and returns the whole
// message size (length field included) without parsing the body, so a stream
// reader knows how many bytes to wait for. It returns ErrTruncated while
// fewer than ControlHeaderSize bytes are present, and ErrLimit or
// ErrMalformed for a length no message of lim can have (nil lim: the
// defaults).
func ControlLength(b []byte, lim *ControlLimits) (int, error) {
	if lim == nil {
		d := ControlLimits{}.WithDefaults()
		lim = &d
	}
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
// lim (defaults applied; nil means the defaults). It returns the message and the bytes consumed, or
// an error wrapping ErrTruncated (b holds less than the envelope claims),
// ErrLimit, ErrMalformed, ErrVersion or ErrUnknownType. Nothing is allocated
// from a count before it is checked against the bytes present. The encoding
// is canonical: a message that parses re-encodes to the identical bytes.
func ParseControl(b []byte, lim *ControlLimits) (Message, int, error) {
	if lim == nil {
		d := ControlLimits{}.WithDefaults()
		lim = &d
	}
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
	case TypeSpawn:
		return p.spawn(lim.MaxMembers)
	case TypeFinal:
		return p.final(lim.MaxMembers)
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
	case TypePhysicsRef:
		return p.physicsRef()
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
// observer, several times a second, and Forget as islands come and go — into
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
	forget    Forget
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
	case TypeForget:
		d.forget, err = p.forget()
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
// interface box of those stays on the caller's stack
// unless the caller lets the message escape (Receiver.ControlBytes and
// Broadcaster.FeedbackBytes do not).
func (d *ControlDecoder) Message() Message {
	switch d.t {
	case TypeReceived:
		return d.received
	case TypeKeyframes:
		return d.keyframes
	case TypeForget:
		return d.forget
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

// ascending checks that island ids come in strictly ascending order.
func ascending(prev *uint32, have *bool, isl uint32, at int, field string) error {
	if *have && isl <= *prev {
		return fail(ErrMalformed, at, field)
	}
	*prev, *have = isl, true
	return nil
}
