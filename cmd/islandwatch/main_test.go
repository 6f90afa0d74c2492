package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestFlags(t *testing.T) {
	bad := [][]string{
		{"-addr", "nohost"}, {"-duration", "-1s"}, {"-pin", "abc"}, {"-pin", strings.Repeat("a", 64), "-ca", "x.pem"},
		{"-ca", "/nonexistent.pem"}, {"-dial-timeout", "0s"}, {"-bogus"}, {"extra"},
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
