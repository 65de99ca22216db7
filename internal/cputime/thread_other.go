//go:build !linux

package cputime

import "time"

// Thread returns 0 where per-thread CPU time is not available; Measure then reports none.
func Thread() time.Duration { return 0 }
