//go:build !unix

package cluster

import "time"

// cpuTime returns 0: the process's CPU time is not read on this platform.
func cpuTime() time.Duration { return 0 }
