package transport

import (
	"errors"
	"fmt"
	"time"

	"github.com/quic-go/quic-go"
)

// Application error codes a connection is closed with. Each close is
// counted by code (islandsync_closes_total).
const (
	CodeShutdown  quic.ApplicationErrorCode = 0x0 // the server stops, or the peer left
	CodeProtocol  quic.ApplicationErrorCode = 0x1 // the peer sent something it must not: bad control bytes, a datagram, a wrong-direction message
	CodeBacklog   quic.ApplicationErrorCode = 0x2 // the peer does not read its control stream: backlog over the cap, or nothing written for StallTimeout
	CodeFull      quic.ApplicationErrorCode = 0x3 // join refused: observer limit reached
	CodeNoStream  quic.ApplicationErrorCode = 0x4 // no control stream, or no Subscribe on it, within SubscribeTimeout
	CodeDatagrams quic.ApplicationErrorCode = 0x5 // the path cannot carry a minimum-size datagram
	CodeSlowRead  quic.ApplicationErrorCode = 0x6 // a control message did not arrive whole within MessageTimeout
	CodeToken     quic.ApplicationErrorCode = 0x7 // join refused: no valid connect token (ServerConfig.TokenKey)
	CodeReplaced  quic.ApplicationErrorCode = 0x8 // a newer connection presented the same observer's token
)

var codeNames = [...]string{
	CodeShutdown: "shutdown", CodeProtocol: "protocol", CodeBacklog: "backlog", CodeFull: "full",
	CodeNoStream: "no-subscribe", CodeDatagrams: "datagrams", CodeSlowRead: "slow-read", CodeToken: "token",
	CodeReplaced: "replaced",
}

// CodeName returns a close code's name, as metrics label it ("full",
// "token", …), or "unknown".
func CodeName(c quic.ApplicationErrorCode) string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "unknown"
}

// CloseError is how the server closed a watcher's connection: its code and
// the reason it gave.
type CloseError struct {
	Code   quic.ApplicationErrorCode
	Reason string
}

func (e *CloseError) Error() string {
	return fmt.Sprintf("transport: the server closed the connection: %s (code %d): %s", CodeName(e.Code), e.Code, e.Reason)
}

// Refused reports whether the server refused the observer — no room, no
// valid token, another connection holding its token — rather than dropped a
// connection it had served: dialling again will meet the same answer.
func (e *CloseError) Refused() bool {
	return e.Code == CodeFull || e.Code == CodeToken || e.Code == CodeReplaced
}

// closeError turns a connection's end into a *CloseError when the server
// closed it with an application code, and returns other causes as they are.
func closeError(cause error) error {
	var ae *quic.ApplicationError
	if errors.As(cause, &ae) && ae.Remote {
		return &CloseError{Code: ae.ErrorCode, Reason: ae.ErrorMessage}
	}
	return cause
}

// positive sets a zero or negative config field to its default.
func positive[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
