// Package stamp judges, on the authority's side, the view stamps observers
// attach to interactions: did the observer really see what it acts on?
//
// An observer plays every island at one playback time r, some time behind
// the authority; an island that got no frame for a while is held Stale, not
// valid at r. A shot fired at r = 1.40 s against an island the observer
// shows frozen at 1.10 s would hit where the authority had it at 1.40 s —
// not what the player saw. So the observer's view carries a stamp
// (codec.ViewStamp: r, playback generation, the view's age, and for each
// island involved its epoch, segment and validity), and the authority
// checks it against its own bounded history of what it sent:
//
//   - the stamp is of the authority's current timeline (ErrTimeline);
//   - r lies within the history: no later than the newest frame sent, and
//     every involved island has a frame at or before r still kept
//     (ErrOutOfHistory) — an observer cannot ask about a moment it could
//     not have seen;
//   - the view is no older than MaxAge (ErrTooOld);
//   - its playback generation is no older than one this observer already
//     used (ErrGeneration): a client does not go back to an earlier anchor;
//   - every involved island the authority deems critical to interaction is
//     in the stamp and valid at r, with the ownership epoch and continuity
//     segment of one of the two frames the authority sent around r — its
//     newest no later than r, or the next (ErrNotValid, ErrMismatch). Which islands are critical is the authority's to say
//     (SetCritical; default: all): a client cannot demote a target to
//     decoration by leaving it out or calling it invalid. Decoration — not
//     critical — may be stale without blocking anything.
//
// # Usage
//
// The authority records every frame it sends (package broadcast does so,
// and exposes Broadcaster.CheckStamp), and checks each interaction's stamp
// before acting on it:
//
//	h := stamp.New(stamp.Config{})
//	h.SetTimeline(timeline)
//	h.Observe(frame)                                 // every frame sent
//	if err := h.Check(observer, &vs, involved); err != nil { /* refuse the interaction */ }
//
// # Limits
//
// Each island keeps its Window newest frames (default 64: 3.2 s at 20 Hz),
// at most MaxIslands islands are remembered (the least recently sent goes
// first) and MaxObservers observers' generations (all forgotten when full).
// It starts no goroutine, reads no clock and does no I/O; it is not safe for
// concurrent use.
package stamp
