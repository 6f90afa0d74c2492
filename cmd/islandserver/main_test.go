package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestFlags(t *testing.T) {
	bad := [][]string{
		{"-hz", "0"}, {"-hz", "61"}, {"-parity", "-1"}, {"-parity", "17"}, {"-max-observers", "0"}, {"-cycle", "-1s"}, {"-idle-timeout", "1ms"},
		{"-cert", "c.pem"}, {"-listen", "nohost"}, {"-metrics", "x"}, {"-scenario", "nope"},
		{"-log-level", "loud"}, {"-bogus"}, {"extra"},
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

// TestServes: the first lines are the listen address and the certificate
// fingerprint; cancelling (as SIGINT does) stops it with exit 0.
func TestServes(t *testing.T) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		code := run(ctx, []string{"-listen", "127.0.0.1:0", "-metrics", "127.0.0.1:0"}, pw, io.Discard)
		pw.Close()
		done <- code
	}()
	sc := bufio.NewScanner(pr)
	var lines []string
	for len(lines) < 4 && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "islandserver listening on 127.0.0.1:") ||
		!strings.HasPrefix(lines[1], "certificate sha256 ") || len(strings.Fields(lines[1])[2]) != 64 {
		t.Fatalf("first lines %q", lines)
	}
	// The fourth line names the metrics endpoint, which serves Prometheus text.
	url := strings.TrimPrefix(lines[3], "metrics on ")
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"islandsync_observers", "islandsync_datagrams_sent_total", "islandsync_frames_dropped_slow_observer_total"} {
		if !strings.Contains(string(body), name) {
			t.Errorf("metrics lack %s", name)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop")
	}
}
