//go:build !(linux || freebsd || netbsd || openbsd || dragonfly)

package peakmem

// process is 0 where ru_maxrss is not read (darwin reports it in bytes, Windows not at all):
// runs there record no peak.
func process() int64 { return 0 }
