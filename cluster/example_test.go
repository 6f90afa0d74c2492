package cluster_test

import (
	"fmt"

	"github.com/islandsync/islandsync/cluster"
)

// Owner shares shards among authorities; when one more joins, only the
// shards it wins move, and every process computes the same answer.
func ExampleOwner() {
	before := []string{"auth-a", "auth-b"}
	after := []string{"auth-a", "auth-b", "auth-c"}
	moved := 0
	for shard := range uint32(1000) {
		if o := cluster.Owner(shard, after); o != cluster.Owner(shard, before) {
			if o != "auth-c" {
				fmt.Println("a shard moved between the old authorities")
			}
			moved++
		}
	}
	fmt.Println(moved > 250 && moved < 420)
	// Output: true
}
