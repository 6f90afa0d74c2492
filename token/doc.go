// Package token makes and checks connect tokens: what a game's backend
// signs to let one observer into an islandsync server, in the manner of
// netcode.io's connect tokens. A token names an observer, says until when
// it is good and, optionally, which islands the observer may see; the
// backend signs it with an Ed25519 private key and the server checks it
// with the public key before the observer gets a slot or a byte of the
// world (transport.ServerConfig.TokenKeys).
//
// # Usage
//
//	pub, priv, _ := token.GenerateKey(rand.Reader)               // once, on the backend
//	b, _ := token.Token{Observer: 7, Expires: exp}.Sign(priv)     // per login
//	t, err := token.Verify(b, []ed25519.PublicKey{pub}, now)      // on the server
//
// Tokens travel as text in Encode's base64url form (islandtoken mint
// prints one; islandwatch -token takes it) and as bytes in the observer's
// Hello control message.
//
// # Layout
//
// Little-endian, Size bytes:
//
//	offset  size  field
//	0       1     version, 1
//	1       8     expires: Unix time in seconds after which the token is refused
//	9       8     observer id (nonzero)
//	17      2     n: islands the observer may see; 0 means every island
//	19      4·n   island ids, strictly ascending (n ≤ MaxIslands)
//	19+4n   64    Ed25519 signature of "islandsync connect token\x00" followed by bytes 0 … 19+4n
//
// # Limits
//
// A token is no secret on the wire (the TLS connection carries it) but it
// is a bearer credential: whoever holds it may connect as its observer
// until it expires. Keep lifetimes short (minutes, not days). A server
// lets one connection hold an observer id at a time: a newer connection
// with the same id replaces the older. Checking is pure: the caller passes
// the time; nothing here reads a clock or keeps state.
package token
