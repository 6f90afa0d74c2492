package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/receiver"
	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/store"
	"github.com/islandsync/islandsync/token"
	"github.com/islandsync/islandsync/transport"
)

func TestFlags(t *testing.T) {
	bad := [][]string{
		{"-addr", "nohost"}, {"-duration", "-1s"}, {"-pin", "abc"}, {"-pin", strings.Repeat("a", 64), "-ca", "x.pem"},
		{"-ca", "/nonexistent.pem"}, {"-dial-timeout", "0s"}, {"-bogus"}, {"extra"}, {"-token", "!!"}, {"-token", "@/nonexistent"}, {"-token", "AAAA"},
	}
	for _, args := range bad {
		var out, errs bytes.Buffer
		if code := run(context.Background(), args, &out, &errs); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errs.String())
		}
	}
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &out, &errs); code != 0 {
		t.Fatalf("-h: exit %d", code)
	}
}

// TestCannotConnect: nothing listens there, so the watcher says so and
// exits 1.
func TestCannotConnect(t *testing.T) {
	var out, errs bytes.Buffer
	code := run(context.Background(), []string{"-addr", "127.0.0.1:9", "-pin", strings.Repeat("ab", 32), "-dial-timeout", "300ms"}, &out, &errs)
	if code != 1 || !strings.Contains(errs.String(), "cannot connect") {
		t.Fatalf("exit %d, stderr %q", code, errs.String())
	}
}

// TestFreshness: an island counts as not updated in a second when its view
// showed no newer frame during it — missing, held on the same frame, or
// not shown at all because the clock is waiting.
func TestFreshness(t *testing.T) {
	k := func(seq uint32) island.Key { return island.Key{Island: 1, Seq: seq} }
	view := func(id uint32, seq uint32) receiver.IslandView {
		return receiver.IslandView{Island: id, Mode: store.Interpolate, Right: k(seq)}
	}
	var f freshness
	f.see([]receiver.IslandView{view(1, 1), {Island: 2, Mode: store.Empty}})
	if n := f.second([]uint32{1, 2}); n != 1 {
		t.Fatalf("first second: %d not updated, want 1 (island 2 is missing)", n)
	}
	f.see([]receiver.IslandView{view(1, 2), view(2, 2)})
	if n := f.second([]uint32{1, 2}); n != 0 {
		t.Fatalf("both moved on: %d not updated", n)
	}
	f.see([]receiver.IslandView{view(1, 2), view(2, 3)})
	if n := f.second([]uint32{1, 2}); n != 1 {
		t.Fatalf("island 1 held on frame 2: %d not updated, want 1", n)
	}
	// The clock waits: no views at all.
	if n := f.second([]uint32{1, 2}); n != 2 {
		t.Fatalf("a second with no views: %d not updated, want 2", n)
	}
}

// TestRefusedExits: a server that requires connect tokens refuses a
// watcher without one; islandwatch says so in one line and exits 1 rather
// than retrying (or exiting 0 with an empty summary).
func TestRefusedExits(t *testing.T) {
	pub, _, _ := token.GenerateKey(nil)
	cert, pin, err := transport.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	auth, _ := scenario.NewAuthority(scenario.All[:1], 20)
	srv, err := transport.Listen(auth, transport.ServerConfig{Listen: "127.0.0.1:0", TLS: transport.ServerTLS(cert),
		TokenKeys: []ed25519.PublicKey{pub}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { cancel(); <-done }()
	var out, errs bytes.Buffer
	code := run(context.Background(), []string{"-addr", srv.Addr().String(), "-pin", pin, "-json"}, &out, &errs)
	if code != 1 || !strings.Contains(errs.String(), "refused this observer: token (code 7)") || strings.Count(errs.String(), "\n") != 1 {
		t.Fatalf("exit %d, stderr %q", code, errs.String())
	}
}
