// Package quant turns body states into integers and back. Delta frames
// apply to these integers only, never to accumulated floats, so sender and
// receiver restore exactly the same values on every platform.
//
// Each constraint class has its own precision: a quantum (a power of two)
// per field. The largest error quantization adds to a field is half its
// quantum; Precision.MaxError states it. Values are rounded to the nearest
// quantum (ties away from zero) and held as int64, so no finite position
// of practical size is ever clamped: a value whose quantized magnitude
// would pass 2^53 is refused with ErrRange rather than silently cut.
//
// # Usage
//
//	p := quant.Chain.Precision()        // per constraint class
//	q, err := quant.Quantize(state, p)  // ErrRange, never a clamp
//	d := q.Sub(baselineQ)               // deltas are integers
//	restored := baselineQ.Add(d).State(p)
//
// To restore many states of one precision, work its reciprocal quanta out
// once (p.Scales()) and restore each with Scales.State, or with
// Scales.Restore straight into its place in a slice.
//
// # Limits
//
// Angles are carried unwrapped, in turns; rounding is the platform's
// math.Round of an exact power-of-two scaling, so every architecture gets
// the same integers. Nothing here allocates.
package quant
