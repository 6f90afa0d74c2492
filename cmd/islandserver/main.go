// Command islandserver runs the islandsync demo scenarios continuously on
// one authority timeline and serves them to observers over QUIC: frames as
// datagrams, control messages on a stream, TLS 1.3 always.
//
// Usage:
//
//	go run ./cmd/islandserver                         # 127.0.0.1:4242, its own kept certificate
//	go run ./cmd/islandserver -cert c.pem -key k.pem  # a real certificate
//	go run ./cmd/islandserver -metrics 127.0.0.1:9090 # Prometheus metrics at /metrics
//	go run ./cmd/islandserver -token-key backend.pub  # only observers with a connect token
//
// Without -cert and -key the server uses a self-signed certificate it made
// once and keeps in its state directory (-state, default
// $XDG_STATE_HOME/islandsync or ~/.local/state/islandsync), so a restart
// keeps its SHA-256 fingerprint, which it prints and islandwatch -pin
// checks. -state "" makes a new one in memory for this run only.
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/islandsync/islandsync/broadcast"
	"github.com/islandsync/islandsync/cluster"
	"github.com/islandsync/islandsync/codec"
	"github.com/islandsync/islandsync/island"
	"github.com/islandsync/islandsync/quant"
	"github.com/islandsync/islandsync/scenario"
	"github.com/islandsync/islandsync/token"
	"github.com/islandsync/islandsync/transport"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("islandserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		listen   = fs.String("listen", "127.0.0.1:4242", "UDP address to serve QUIC on")
		certFile = fs.String("cert", "", "PEM certificate file (with -key); default: a self-signed certificate made in memory")
		keyFile  = fs.String("key", "", "PEM private key file (with -cert)")
		stateDir = fs.String("state", defaultStateDir(), "directory that keeps the server's own key and certificate across restarts (mode 0700); empty: a new one in memory each run")
		tokenKey = fs.String("token-key", "", "file of Ed25519 public keys (base64url, one per line): observers must present a connect token signed by one (islandtoken)")
		subWait  = fs.Duration("subscribe-timeout", 5*time.Second, "close a connection that has not subscribed this long after its handshake")
		stall    = fs.Duration("stall-timeout", 10*time.Second, "close an observer whose control stream makes no progress, or that says nothing back, this long")
		maxObs   = fs.Int("max-observers", 256, "most observers connected at once (1–65535)")
		metrics  = fs.String("metrics", "", "serve Prometheus metrics on this address at /metrics (e.g. 127.0.0.1:9090)")
		names    = fs.String("scenario", "all", "comma-separated scenarios: "+scenario.Names()+", or all")
		loose    = fs.String("loose", "", "comma-separated scenarios whose islands are decoration, sent at loose precision (1/128 m, 2^-9 turn) instead of rigid (1/512 m, 2^-12 turn)")
		hz       = fs.Int("hz", 20, fmt.Sprintf("broadcast rate per island, 1–%d", scenario.StepHz))
		cycle    = fs.Duration("cycle", 20*time.Second, "rebuild the scenarios this often (fresh bodies, same timeline); 0 never")
		idle     = fs.Duration("idle-timeout", 10*time.Second, "close connections silent this long")
		parity   = fs.Int("parity", broadcast.DefaultParity, fmt.Sprintf("Reed–Solomon parity records per frame cut into 2–%d datagrams, none to an observer whose path lost nothing lately, 0 (none) to %d", codec.MaxParityFragments, codec.MaxParity))
		fixedPar = fs.Bool("fixed-parity", false, "send -parity records to every observer, also to one whose path lost nothing lately")
		budget   = fs.Int("budget", 0, "kbit/s each observer may be sent at most; 0: no cap of its own (its path's budget still holds)")
		total    = fs.Int("server-budget", 0, "kbit/s all observers together may be sent at most, shared evenly; 0: no cap")
		fixed    = fs.Bool("fixed-rate", false, "send every frame to every observer whatever its path carries (no budget from QUIC's congestion window, no pacing)")
		logLevel = fs.String("log-level", "info", "debug, info, warn or error")

		etcdURLs  = fs.String("etcd", "", "comma-separated etcd endpoints (e.g. http://127.0.0.1:2379): run as one member of a cluster world kept in etcd")
		etcdEmbed = fs.String("etcd-embed", "", "run an etcd server inside this process keeping its data in this directory (one machine; see -etcd-listen), and join the world in it")
		etcdAt    = fs.String("etcd-listen", "127.0.0.1:2379", "with -etcd-embed: where the embedded etcd serves clients")
		roleName  = fs.String("role", "both", "with -etcd or -etcd-embed: authority (steps the shards it holds), front (serves observers, relays the authorities) or both")
		name      = fs.String("name", defaultName(), "this process's member name in the world: letters, digits, '.', '_', '-'")
		world     = fs.String("world", cluster.DefaultPrefix, "the world's etcd key prefix, ending in '/'")
		leaseTTL  = fs.Duration("lease-ttl", cluster.DefaultTTL, "the member's etcd lease: its shards go to another authority this long after it stops renewing")
		authAt    = fs.String("authority-listen", "127.0.0.1:0", "with -role both: the UDP address the authority serves its front on")
		dialOut   = fs.Bool("dial", false, "with -role authority: accept no connections (a player's client, a worker behind NAT); dial every front's uplink port instead")
		uplinkAt  = fs.String("uplink-listen", "", "with -role front or both: open an uplink port at this UDP address for authorities started with -dial")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "islandserver: "+format+"\n", a...)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fail("-log-level %q: want debug, info, warn or error", *logLevel)
	}
	switch {
	case fs.NArg() > 0:
		return fail("unexpected argument %q", fs.Arg(0))
	case *hz < 1 || *hz > scenario.StepHz:
		return fail("-hz %d outside [1, %d]", *hz, scenario.StepHz)
	case *maxObs < 1 || *maxObs > 65535:
		return fail("-max-observers %d outside [1, 65535]", *maxObs)
	case *parity < 0 || *parity > codec.MaxParity:
		return fail("-parity %d outside [0, %d]", *parity, codec.MaxParity)
	case *budget < 0 || *budget > 1<<30:
		return fail("-budget %d: kbit/s, ≥ 0", *budget)
	case *total < 0 || *total > 1<<30:
		return fail("-server-budget %d: kbit/s, ≥ 0", *total)
	case *cycle < 0:
		return fail("-cycle %v is negative", *cycle)
	case *idle < time.Second:
		return fail("-idle-timeout %v: at least 1s", *idle)
	case *subWait < 100*time.Millisecond:
		return fail("-subscribe-timeout %v: at least 100ms", *subWait)
	case *stall < 100*time.Millisecond:
		return fail("-stall-timeout %v: at least 100ms", *stall)
	case (*certFile == "") != (*keyFile == ""):
		return fail("-cert and -key go together")
	}
	if _, err := net.ResolveUDPAddr("udp", *listen); err != nil {
		return fail("-listen %q: %v", *listen, err)
	}
	if _, err := net.ResolveUDPAddr("udp", *uplinkAt); *uplinkAt != "" && err != nil {
		return fail("-uplink-listen %q: %v", *uplinkAt, err)
	}
	clustered := *etcdURLs != "" || *etcdEmbed != ""
	switch {
	case *etcdURLs != "" && *etcdEmbed != "":
		return fail("-etcd and -etcd-embed: one or the other")
	case !clustered && *roleName != "both":
		return fail("-role %s needs -etcd or -etcd-embed", *roleName)
	case *dialOut && *roleName != "authority":
		return fail("-dial needs -role authority")
	case *uplinkAt != "" && (!clustered || *roleName == "authority"):
		return fail("-uplink-listen needs -etcd or -etcd-embed and -role front or both")
	case *roleName != "both" && *roleName != "authority" && *roleName != "front":
		return fail("-role %q: want authority, front or both", *roleName)
	case clustered && *leaseTTL < 2*time.Second:
		return fail("-lease-ttl %v: at least 2s (etcd's minimum)", *leaseTTL)
	}
	if *metrics != "" {
		if _, err := net.ResolveTCPAddr("tcp", *metrics); err != nil {
			return fail("-metrics %q: %v", *metrics, err)
		}
	}
	scs, err := scenario.Pick(*names)
	if err != nil {
		return fail("-scenario: %v", err)
	}
	decoration := map[string]bool{}
	if *loose != "" {
		for _, n := range strings.Split(*loose, ",") {
			n = strings.TrimSpace(n)
			if !slices.ContainsFunc(scs, func(s scenario.Scenario) bool { return s.Name == n }) {
				return fail("-loose: %q is not among the scenarios run (-scenario %s)", n, *names)
			}
			decoration[n] = true
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	var tokenKeys []ed25519.PublicKey
	if *tokenKey != "" {
		text, err := os.ReadFile(*tokenKey)
		if err != nil {
			return fail("-token-key: %v", err)
		}
		if tokenKeys, err = token.ParsePublicKeys(text); err != nil {
			return fail("-token-key %s: %v", *tokenKey, err)
		}
	}

	var cert tls.Certificate
	fingerprint, identity := "", ""
	switch {
	case *certFile != "":
		if cert, err = tls.LoadX509KeyPair(*certFile, *keyFile); err != nil {
			return fail("certificate: %v", err)
		}
		fingerprint, identity = transport.Fingerprint(cert.Certificate[0]), "from "+*certFile
	case *stateDir != "":
		var created bool
		if cert, fingerprint, created, err = transport.Identity(*stateDir); err != nil {
			fmt.Fprintf(stderr, "islandserver: %v\n", err)
			return 1
		}
		identity = "kept in " + *stateDir
		if created {
			identity = "new, kept in " + *stateDir
		}
	default:
		if cert, fingerprint, err = transport.SelfSigned(); err != nil {
			return fail("self-signed certificate: %v", err)
		}
		identity = "in memory for this run (-state \"\"): a restart changes it"
	}

	if clustered {
		endpoints := strings.Split(*etcdURLs, ",")
		if *etcdEmbed != "" {
			em, err := cluster.Embed(*etcdEmbed, *etcdAt)
			if err != nil {
				fmt.Fprintln(stderr, "islandserver:", err)
				return 1
			}
			defer em.Close()
			endpoints = em.Endpoints()
			fmt.Fprintf(stdout, "etcd embedded at %s, data in %s\n", strings.Join(endpoints, ","), *etcdEmbed)
		}
		cli, err := cluster.Dial(endpoints)
		if err != nil {
			fmt.Fprintln(stderr, "islandserver:", err)
			return 1
		}
		defer cli.Close()
		reg := prometheus.NewRegistry()
		nc := cluster.NodeConfig{Client: cli, Prefix: *world, Name: *name, TTL: *leaseTTL, Scenarios: scs, Hz: *hz,
			Fingerprint: fingerprint, Logger: log, Registry: reg,
			Server: transport.ServerConfig{Listen: *listen, TLS: transport.ServerTLS(cert), MaxObservers: *maxObs,
				IdleTimeout: *idle, Metrics: transport.NewMetrics(reg), Parity: parityOf(*parity), FixedParity: *fixedPar,
				SubscribeTimeout: *subWait, StallTimeout: *stall, TokenKeys: tokenKeys,
				ObserverKbps: *budget, ServerKbps: *total, FixedRate: *fixed}}
		nc.Dial, nc.UplinkListen = *dialOut, *uplinkAt
		if *dialOut && !flagSet(fs, "listen") {
			nc.Server.Listen = "" // any port: nothing dials it
		}
		closeMetrics, ok := serveMetrics(*metrics, reg, stdout, stderr)
		if !ok {
			return 1
		}
		defer closeMetrics()
		return runCluster(ctx, *roleName, *authAt, nc, stdout, stderr)
	}

	auth, err := scenario.NewAuthority(scs, *hz)
	if err != nil {
		return fail("%v", err)
	}
	src := &cycling{Authority: auth, every: int64(cycle.Seconds() * float64(scenario.StepHz))}
	par := parityOf(*parity)
	reg := prometheus.NewRegistry()
	m := transport.NewMetrics(reg)
	srv, err := transport.Listen(src, transport.ServerConfig{Listen: *listen, TLS: transport.ServerTLS(cert),
		MaxObservers: *maxObs, IdleTimeout: *idle, Logger: log, Metrics: m, StepRate: scenario.StepHz, Parity: par, FixedParity: *fixedPar,
		SubscribeTimeout: *subWait, StallTimeout: *stall, TokenKeys: tokenKeys,
		Class: classes(auth, decoration), ObserverKbps: *budget, ServerKbps: *total, FixedRate: *fixed})
	if err != nil {
		fmt.Fprintln(stderr, "islandserver:", err)
		return 1
	}
	fmt.Fprintf(stdout, "islandserver listening on %s (QUIC, ALPN %s)\n", srv.Addr(), transport.ALPN)
	fmt.Fprintf(stdout, "certificate sha256 %s\n", fingerprint)
	fmt.Fprintf(stdout, "watch with: go run ./cmd/islandwatch -addr %s -pin %s\n", srv.Addr(), fingerprint)
	fmt.Fprintf(stdout, "identity %s\n", identity)
	if len(tokenKeys) > 0 {
		fmt.Fprintf(stdout, "observers need a connect token signed by one of %d keys in %s\n", len(tokenKeys), *tokenKey)
	}

	closeMetrics, ok := serveMetrics(*metrics, reg, stdout, stderr)
	if !ok {
		return 1
	}
	defer closeMetrics()
	log.Info("serving", "scenarios", len(scs), "hz", *hz, "timeline", srv.Timeline())
	if err := srv.Run(ctx); err != nil {
		fmt.Fprintln(stderr, "islandserver:", err)
		return 1
	}
	return 0
}

// serveMetrics serves reg's metrics at addr when addr is set, and says
// where; ok is false (the error printed) when it cannot listen.
func serveMetrics(addr string, reg *prometheus.Registry, stdout, stderr io.Writer) (closeFn func(), ok bool) {
	if addr == "" {
		return func() {}, true
	}
	at, closeMetrics, err := transport.ServeMetrics(addr, reg)
	if err != nil {
		fmt.Fprintln(stderr, "islandserver: metrics:", err)
		return nil, false
	}
	fmt.Fprintf(stdout, "metrics on http://%s/metrics\n", at)
	return func() { _ = closeMetrics() }, true
}

// parityOf turns -parity into broadcast.Config.Parity, where 0 is the
// default and negative none.
func parityOf(p int) int {
	if p == 0 {
		return -1
	}
	return p
}

// defaultName is a member name from the host name and process id.
func defaultName() string {
	host, _ := os.Hostname()
	clean := []byte{}
	for i := 0; i < len(host) && len(clean) < 40; i++ {
		if c := host[i]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' {
			clean = append(clean, c)
		}
	}
	if len(clean) == 0 {
		clean = []byte("node")
	}
	return fmt.Sprintf("%s-%d", clean, os.Getpid())
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// runCluster runs this process's role in a cluster world until ctx ends.
func runCluster(ctx context.Context, role, authAt string, nc cluster.NodeConfig, stdout, stderr io.Writer) int {
	say := func(what string) func(*transport.Server) {
		return func(s *transport.Server) {
			if what == "authority" && nc.Dial {
				fmt.Fprintf(stdout, "authority %s dialling the fronts' uplink ports from %s (world %s, timeline %016x)\n", nc.Name, s.Addr(), nc.Prefix, s.Timeline())
				return
			}
			fmt.Fprintf(stdout, "%s %s serving on %s (world %s, timeline %016x)\n", what, nc.Name, s.Addr(), nc.Prefix, s.Timeline())
			if what == "front" {
				fmt.Fprintf(stdout, "watch with: go run ./cmd/islandwatch -addr %s -pin %s\n", s.Addr(), nc.Fingerprint)
			}
		}
	}
	errs := make(chan error, 2)
	n := 0
	if role == "authority" || role == "both" {
		ac := nc
		ac.Ready = say("authority")
		if role == "both" {
			ac.Server.Listen = authAt
			ac.Server.Metrics = nil // the front's serve the observers
		}
		n++
		go func() { errs <- cluster.RunAuthority(ctx, ac) }()
	}
	if role == "front" || role == "both" {
		fc := nc
		fc.Ready = say("front")
		n++
		go func() { errs <- cluster.RunFront(ctx, fc) }()
	}
	code := 0
	for range n {
		if err := <-errs; err != nil {
			fmt.Fprintln(stderr, "islandserver:", err)
			code = 1
		}
	}
	return code
}

// defaultStateDir is where the server keeps its identity unless told:
// $XDG_STATE_HOME/islandsync, else ~/.local/state/islandsync; empty (an
// identity in memory) when neither can be found.
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "islandsync")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "islandsync")
	}
	return ""
}

// classes picks each island's class: loose for the islands of a scenario
// in decoration, broadcast.DefaultClass (rigid precision) for the rest.
func classes(auth *scenario.Authority, decoration map[string]bool) func(uint32, int) quant.Class {
	return func(id uint32, members int) quant.Class {
		if len(decoration) > 0 && decoration[auth.ScenarioOf(id)] {
			return quant.Loose
		}
		return broadcast.DefaultClass(id, members)
	}
}

// cycling rebuilds the scenarios every `every` steps so they run forever.
type cycling struct {
	*scenario.Authority
	every, steps int64
}

func (c *cycling) Step() ([]codec.Message, []*island.Frame) {
	c.steps++
	if c.every > 0 && c.steps%c.every == 0 {
		c.Restart()
	}
	return c.Authority.Step()
}
