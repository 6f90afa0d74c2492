package cluster

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Embedded is a one-member etcd server running inside this process, for
// tests, the demo and a one-machine try-out (islandserver -etcd-embed). A
// real deployment runs etcd on its own (Debian's etcd-server) and passes
// its endpoints instead.
type Embedded struct {
	e         *embed.Etcd
	endpoints []string
}

// Embed starts an etcd server keeping its data in dir, serving clients at
// listen (host:port; empty means 127.0.0.1 at a port of the system's
// choosing — Endpoints says which). It waits until the server can serve,
// at most a minute.
func Embed(dir, listen string) (*Embedded, error) {
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.Name = "islandsync"
	// Its own logs would only repeat what Embed and the client return.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	client := []url.URL{{Scheme: "http", Host: listen}}
	peer := []url.URL{{Scheme: "http", Host: "127.0.0.1:0"}}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = client, client
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = peer, peer
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("cluster: embedded etcd: %w", err)
	case <-time.After(time.Minute):
		e.Close()
		return nil, errors.New("cluster: embedded etcd not ready within a minute")
	}
	em := &Embedded{e: e}
	for _, l := range e.Clients {
		em.endpoints = append(em.endpoints, "http://"+l.Addr().String())
	}
	return em, nil
}

// Endpoints returns the client URLs to pass to Dial.
func (m *Embedded) Endpoints() []string { return m.endpoints }

// Close stops the server.
func (m *Embedded) Close() { m.e.Close() }

// Dial connects to etcd at endpoints (URLs such as http://127.0.0.1:2379).
func Dial(endpoints []string) (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second,
		Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd %v: %w", endpoints, err)
	}
	return c, nil
}
