package transport

import (
	"sync"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/scenario"
)

// TestMaxDatagram: ServerConfig.MaxDatagram caps what an observer is told
// (its Welcome) and sent, under the path's own cap; a cap outside
// codec.MinMaxDatagram … codec.MaxMaxDatagram is refused at Listen.
func TestMaxDatagram(t *testing.T) {
	auth, err := scenario.NewAuthority([]scenario.Scenario{scenario.All[0]}, 20)
	if err != nil {
		t.Fatal(err)
	}
	cert, _, err := SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []int{1, codec.MinMaxDatagram - 1, codec.MaxMaxDatagram + 1} {
		if _, err := Listen(auth, ServerConfig{Listen: "127.0.0.1:0", TLS: ServerTLS(cert), MaxDatagram: bad}); err == nil {
			t.Errorf("MaxDatagram %d accepted", bad)
		}
	}
	srv, ct := testServer(t, auth, ServerConfig{MaxDatagram: codec.MinMaxDatagram})
	w, err := NewWatcher(WatchConfig{Addr: srv.Addr().String(), TLS: ct, Subscribe: codec.Subscribe{All: true}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var welcome codec.Welcome
	var datagrams uint64
	runUntilEnd(t, w, func(tk *Tick) {
		mu.Lock()
		defer mu.Unlock()
		welcome, _ = tk.Receiver.Welcome()
		datagrams = tk.Receiver.Stats().Datagrams
	})
	waitFor(t, "20 datagrams", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return datagrams >= 20
	})
	mu.Lock()
	defer mu.Unlock()
	if welcome.MaxDatagram != codec.MinMaxDatagram {
		t.Fatalf("welcome says %d-byte datagrams, want %d", welcome.MaxDatagram, codec.MinMaxDatagram)
	}
}
