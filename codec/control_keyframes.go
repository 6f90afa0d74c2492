package codec

// Keyframes asks for keyframes of the islands listed (ascending): the
// observer lacks a baseline a delta named, or a frame of the island failed;
// it takes no frame of them sent before this request arrives as held.
type Keyframes struct{ Islands []uint32 }

func (Keyframes) Type() MessageType { return TypeKeyframes }

func (m Keyframes) Size() int { return ControlHeaderSize + 4 + 4*len(m.Islands) }

func (m Keyframes) Append(b []byte) []byte {
	return appendU32s(appendU32s(appendEnvelope(b, m.Type(), m.Size()), uint32(len(m.Islands))), m.Islands...)
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
