module github.com/islandsync/islandsync

go 1.26.8

require (
	github.com/bits-and-blooms/bitset v1.29.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/jakecoffman/cp/v2 v2.4.0 // indirect
)
