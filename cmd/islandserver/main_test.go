package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/islandsync/islandsync/quant"
	"github.com/islandsync/islandsync/scenario"
)

func TestFlags(t *testing.T) {
	bad := [][]string{
		{"-hz", "0"}, {"-hz", "61"}, {"-parity", "-1"}, {"-parity", "17"}, {"-max-observers", "0"}, {"-cycle", "-1s"}, {"-budget", "-1"}, {"-server-budget", "-5"}, {"-idle-timeout", "1ms"},
		{"-cert", "c.pem"}, {"-listen", "nohost"}, {"-metrics", "x"}, {"-scenario", "nope"},
		{"-log-level", "loud"}, {"-bogus"}, {"extra"}, {"-token-key", "/nonexistent"}, {"-subscribe-timeout", "1ms"}, {"-stall-timeout", "0s"},
		{"-loose", "nope"}, {"-scenario", "chain", "-loose", "ragdolls"},
		{"-role", "front"}, {"-etcd", "http://127.0.0.1:1", "-role", "king"}, {"-etcd", "x", "-etcd-embed", "y"},
		{"-etcd", "http://127.0.0.1:1", "-lease-ttl", "1s"},
		{"-dial"}, {"-etcd", "http://127.0.0.1:1", "-role", "front", "-dial"}, {"-uplink-listen", "127.0.0.1:0"},
		{"-etcd", "http://127.0.0.1:1", "-role", "authority", "-uplink-listen", "127.0.0.1:0"},
		{"-etcd", "http://127.0.0.1:1", "-role", "front", "-uplink-listen", "nohost"},
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

// TestLooseByScenario: -loose makes the islands of the scenarios it names
// loose and leaves every other island at rigid precision.
func TestLooseByScenario(t *testing.T) {
	scs, err := scenario.Pick("chain,ragdolls")
	if err != nil {
		t.Fatal(err)
	}
	auth, err := scenario.NewAuthority(scs, 20)
	if err != nil {
		t.Fatal(err)
	}
	pick := classes(auth, map[string]bool{"ragdolls": true})
	ws := auth.Worlds()
	for _, is := range ws[0].Islands() {
		if c := pick(is.ID, len(is.Members)); c != quant.Chain {
			t.Errorf("chain island %d: class %d", is.ID, c)
		}
	}
	for _, is := range ws[1].Islands() {
		if c := pick(is.ID, len(is.Members)); c != quant.Loose {
			t.Errorf("ragdoll island %d: class %d", is.ID, c)
		}
	}
	if c := classes(auth, nil)(ws[1].Islands()[0].ID, 6); c != quant.Rigid {
		t.Errorf("without -loose: class %d", c)
	}
}

// serve runs the server with args until stop is called; it returns the
// first lines it printed and stop, which cancels (as SIGINT does) and
// returns the exit code.
func serve(t *testing.T, args ...string) ([]string, func() int) {
	t.Helper()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		code := run(ctx, append([]string{"-listen", "127.0.0.1:0"}, args...), pw, io.Discard)
		pw.Close()
		done <- code
	}()
	want := 4 // listening, certificate, watch with, identity
	if slices.Contains(args, "-metrics") {
		want++
	}
	sc := bufio.NewScanner(pr)
	var lines []string
	for len(lines) < want && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return lines, func() int {
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(time.Minute):
			t.Fatal("the server did not stop")
			return -1
		}
	}
}

// TestServes: the first lines are the listen address and the certificate
// fingerprint; the metrics endpoint serves the server's, the Go runtime's
// and the process's series; cancelling (as SIGINT does) stops it with
// exit 0.
func TestServes(t *testing.T) {
	lines, stop := serve(t, "-metrics", "127.0.0.1:0", "-state", filepath.Join(t.TempDir(), "state"))
	if len(lines) < 5 || !strings.HasPrefix(lines[0], "islandserver listening on 127.0.0.1:") ||
		!strings.HasPrefix(lines[1], "certificate sha256 ") || len(strings.Fields(lines[1])[2]) != 64 {
		t.Fatalf("first lines %q", lines)
	}
	// The fifth line names the metrics endpoint, which serves Prometheus text.
	url := strings.TrimPrefix(lines[4], "metrics on ")
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"islandsync_observers", "islandsync_datagrams_sent_total", "islandsync_frames_dropped_slow_observer_total",
		"islandsync_observer_queue_age_seconds", "islandsync_observer_queue_age_max_seconds", "go_goroutines", "process_resident_memory_bytes"} {
		if !strings.Contains(string(body), name) {
			t.Errorf("metrics lack %s", name)
		}
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestRestartKeepsIdentity: without -cert a server keeps the identity it
// made in its state directory, so a restart prints the same fingerprint;
// -state "" makes a new one every run.
func TestRestartKeepsIdentity(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "islandsync")
	fingerprint := func(args ...string) (string, string) {
		lines, stop := serve(t, args...)
		if code := stop(); code != 0 || len(lines) < 4 {
			t.Fatalf("exit %d, lines %q", code, lines)
		}
		return strings.Fields(lines[1])[2], lines[3]
	}
	first, id := fingerprint("-state", dir)
	if !strings.HasPrefix(id, "identity new, kept in "+dir) {
		t.Fatalf("first run: %q", id)
	}
	again, id := fingerprint("-state", dir)
	if again != first || !strings.HasPrefix(id, "identity kept in "+dir) {
		t.Fatalf("restart: fingerprint %s → %s, %q", first, again, id)
	}
	a, _ := fingerprint("-state", "")
	b, _ := fingerprint("-state", "")
	if a == b || a == first {
		t.Fatal("an in-memory identity was reused")
	}
}
