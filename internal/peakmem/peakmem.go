// Package peakmem reads the most memory the process has held at once: the peak resident set
// size the kernel keeps for it (getrusage's ru_maxrss). It is a measurement, like wall time: it
// depends on the machine, the Go runtime and everything else the process did.
package peakmem

// Process returns the process's peak resident set in bytes so far, or 0 where the system does
// not report it.
func Process() int64 { return process() }
