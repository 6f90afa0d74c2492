// Command islandtoken makes the keys and connect tokens an islandserver
// started with -token-key requires: what a game's backend does for each
// player that logs in, for trying it by hand.
//
// Usage:
//
//	islandtoken keygen -dir DIR                          # DIR/token.key (private, 0600) and DIR/token.pub
//	islandtoken mint -key DIR/token.key -observer 7      # a token good for 10 minutes, printed
//	islandtoken mint -key … -observer 7 -ttl 1h -islands 3,9,40
//	islandtoken show TOKEN                               # what a token says (not whether it verifies)
//
// Then: islandserver -token-key DIR/token.pub, and islandwatch -token TOKEN.
// It exits 2 on bad arguments and 1 when a file cannot be read or written.
package main

import (
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/islandsync/islandsync/token"
)

func main() { os.Exit(run(os.Args[1:], time.Now(), os.Stdout, os.Stderr)) }

const usage = "usage: islandtoken keygen -dir DIR | mint -key FILE -observer N [-ttl D] [-islands a,b,…] | show TOKEN"

func run(args []string, now time.Time, stdout, stderr io.Writer) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "islandtoken: "+format+"\n", a...)
		return code
	}
	if len(args) == 0 {
		return fail(2, "%s", usage)
	}
	fs := flag.NewFlagSet("islandtoken "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch args[0] {
	case "keygen":
		dir := fs.String("dir", "", "directory to write token.key (private, mode 0600) and token.pub into")
		if err := fs.Parse(args[1:]); err != nil {
			return parseExit(err)
		}
		if *dir == "" || fs.NArg() > 0 {
			return fail(2, "keygen needs -dir and nothing else")
		}
		pub, priv, err := token.GenerateKey(rand.Reader)
		if err != nil {
			return fail(1, "%v", err)
		}
		if err := os.MkdirAll(*dir, 0o700); err != nil {
			return fail(1, "%v", err)
		}
		keyPath, pubPath := filepath.Join(*dir, "token.key"), filepath.Join(*dir, "token.pub")
		if _, err := os.Stat(keyPath); err == nil {
			return fail(1, "%s exists: not overwritten", keyPath)
		}
		if err := os.WriteFile(keyPath, []byte(token.EncodePrivateKey(priv)+"\n"), 0o600); err != nil {
			return fail(1, "%v", err)
		}
		if err := os.WriteFile(pubPath, []byte(token.EncodePublicKey(pub)+"\n"), 0o644); err != nil {
			return fail(1, "%v", err)
		}
		fmt.Fprintf(stdout, "private key %s (keep it on the backend)\npublic key  %s (islandserver -token-key %s)\n", keyPath, pubPath, pubPath)
		return 0
	case "mint":
		keyFile := fs.String("key", "", "the backend's private key (islandtoken keygen's token.key)")
		observer := fs.Uint64("observer", 0, "observer id, nonzero")
		ttl := fs.Duration("ttl", 10*time.Minute, "how long the token is good for (1s … 24h)")
		islands := fs.String("islands", "", "comma-separated island ids the observer may see (default: every island)")
		if err := fs.Parse(args[1:]); err != nil {
			return parseExit(err)
		}
		switch {
		case *keyFile == "" || fs.NArg() > 0:
			return fail(2, "mint needs -key and nothing else")
		case *observer == 0:
			return fail(2, "-observer must be nonzero")
		case *ttl < time.Second || *ttl > 24*time.Hour:
			return fail(2, "-ttl %v outside [1s, 24h]", *ttl)
		}
		tok := token.Token{Observer: *observer, Expires: now.Add(*ttl).Unix()}
		if *islands != "" {
			for _, f := range strings.Split(*islands, ",") {
				id, err := strconv.ParseUint(strings.TrimSpace(f), 10, 32)
				if err != nil {
					return fail(2, "-islands: %q is no island id", f)
				}
				tok.Islands = append(tok.Islands, uint32(id))
			}
			slices.Sort(tok.Islands)
			tok.Islands = slices.Compact(tok.Islands)
		}
		text, err := os.ReadFile(*keyFile)
		if err != nil {
			return fail(1, "%v", err)
		}
		priv, err := token.ParsePrivateKey(text)
		if err != nil {
			return fail(1, "%s: %v", *keyFile, err)
		}
		b, err := tok.Sign(priv)
		if err != nil {
			return fail(2, "%v", err)
		}
		fmt.Fprintln(stdout, token.Encode(b))
		return 0
	case "show":
		if err := fs.Parse(args[1:]); err != nil {
			return parseExit(err)
		}
		if fs.NArg() != 1 {
			return fail(2, "show takes one token")
		}
		b, err := token.Decode(fs.Arg(0))
		if err == nil {
			var tok token.Token
			if tok, err = token.Parse(b); err == nil {
				islands := "every island"
				if len(tok.Islands) > 0 {
					islands = fmt.Sprint(tok.Islands)
				}
				state := "good"
				if now.Unix() > tok.Expires {
					state = "expired"
				}
				fmt.Fprintf(stdout, "observer %d, islands %s, expires %s (%s; signature not checked)\n",
					tok.Observer, islands, time.Unix(tok.Expires, 0).UTC().Format(time.RFC3339), state)
				return 0
			}
		}
		return fail(1, "%v", err)
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return 0
	}
	return fail(2, "unknown command %q; %s", args[0], usage)
}

func parseExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}
