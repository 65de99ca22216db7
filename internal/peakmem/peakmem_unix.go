//go:build linux || freebsd || netbsd || openbsd || dragonfly

package peakmem

import "syscall"

// process reads ru_maxrss, which these systems report in KiB.
func process() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) * 1024
}
