package transport

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
)

// promptSource steps to nothing; what it has goes out only through Urgent.
type promptSource struct {
	prompt chan struct{}
	urgent atomic.Int32 // Urgent calls
	held   atomic.Bool  // an announcement waits for Urgent
}

func (p *promptSource) Period() int64                              { return 50_000 }
func (p *promptSource) Step() ([]codec.Message, []*island.Frame)   { return nil, nil }
func (p *promptSource) Prompt() <-chan struct{}                    { return p.prompt }
func (p *promptSource) Urgent() ([]codec.Message, []*island.Frame) { return p.take(), nil }

func (p *promptSource) take() []codec.Message {
	p.urgent.Add(1)
	if !p.held.Swap(false) {
		return nil
	}
	return []codec.Message{codec.Announce{IDs: []island.MemberID{{Stable: 7}}}}
}

// TestPromptSendsUrgent: a Prompter's urgent output goes to observers
// without a step — the source's steps yield nothing, and its
// announcement still reaches the watcher once it prompts.
func TestPromptSendsUrgent(t *testing.T) {
	src := &promptSource{prompt: make(chan struct{}, 1)}
	srv, ct := testServer(t, src, ServerConfig{})
	w, err := NewWatcher(WatchConfig{Addr: srv.Addr().String(), TLS: ct, Subscribe: codec.Subscribe{All: true}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var welcomed, announced atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- w.Run(ctx, func(tk *Tick) {
			st := tk.Receiver.Stats()
			welcomed.Store(st.Control.Applied[codec.TypeWelcome] > 0)
			announced.Store(st.Control.Applied[codec.TypeAnnounce] > 0)
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the welcome", welcomed.Load)
	src.held.Store(true)
	src.prompt <- struct{}{}
	waitFor(t, "the urgent announcement", announced.Load)
	if n := src.urgent.Load(); n != 1 {
		t.Fatalf("Urgent called %d times for one prompt", n)
	}
}
