// Package livestate is what end-to-end tests compare between an authority
// and its observers: everything a world holds apart from motion — live
// identities, each island's lease and manifest. It holds no behaviour of
// the product.
//
// Usage: fill one State from a server (Server.Live(st.Identity, st.Lease,
// st.Manifest)) and one from each observer's receiver (Of), then Equal.
// Limits: manifests compare as printed text; it is for tests only.
package livestate
