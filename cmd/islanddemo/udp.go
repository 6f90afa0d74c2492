package main

import (
	"fmt"
	"net"
	"time"

	"github.com/islandsync/islandsync/netsim"
)

// udpTransport sends every datagram through real sockets on 127.0.0.1:
// server socket → relay socket, where the impairing link decides its fate,
// then relay socket → client socket. The relay runs in-process, driven by
// the demo's clock, so the impairments stay seeded and the run reproducible.
type udpTransport struct {
	link                  *netsim.Link
	server, relay, client *net.UDPConn
	relayAddr, clientAddr *net.UDPAddr
	buf                   []byte
}

func newUDPTransport(link *netsim.Link) (*udpTransport, error) {
	lo := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	listen := func() (*net.UDPConn, error) {
		c, err := net.ListenUDP("udp4", lo)
		if err == nil {
			_ = c.SetReadBuffer(4 << 20)
		}
		return c, err
	}
	t := &udpTransport{link: link, buf: make([]byte, 65536)}
	var err error
	if t.server, err = listen(); err != nil {
		return nil, err
	}
	if t.relay, err = listen(); err != nil {
		return nil, err
	}
	if t.client, err = listen(); err != nil {
		return nil, err
	}
	t.relayAddr = t.relay.LocalAddr().(*net.UDPAddr)
	t.clientAddr = t.client.LocalAddr().(*net.UDPAddr)
	return t, nil
}

// read takes exactly n datagrams from c (they were written to it already).
func (t *udpTransport) read(c *net.UDPConn, n int, f func([]byte)) error {
	for i := 0; i < n; i++ {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		k, _, err := c.ReadFromUDP(t.buf)
		if err != nil {
			return fmt.Errorf("udp read: %w", err)
		}
		f(append([]byte(nil), t.buf[:k]...))
	}
	return nil
}

func (t *udpTransport) send(now int64, dg []byte) {
	if _, err := t.server.WriteToUDP(dg, t.relayAddr); err != nil {
		return
	}
	// The relay receives it and hands it to the impairing link.
	_ = t.read(t.relay, 1, func(b []byte) { t.link.Send(now, b) })
}

func (t *udpTransport) inject(due int64, dg []byte) { t.link.Inject(due, dg) }

func (t *udpTransport) deliver(now int64, out [][]byte) [][]byte {
	due := t.link.Deliver(now, nil)
	for _, dg := range due {
		if _, err := t.relay.WriteToUDP(dg, t.clientAddr); err != nil {
			continue
		}
		_ = t.read(t.client, 1, func(b []byte) { out = append(out, b) })
	}
	return out
}

func (t *udpTransport) stats() netsim.LinkStats { return t.link.Stats() }

func (t *udpTransport) close() {
	t.server.Close()
	t.relay.Close()
	t.client.Close()
}
