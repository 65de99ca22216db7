// Package cputime reads the CPU time of the calling OS thread, so that benchmarks can report
// the time their own work took even on a machine shared with other processes (wall time there
// also counts the time the thread waited for a core).
package cputime

import (
	"runtime"
	"testing"
)

// Measure runs the benchmark loop body b.N times on a locked OS thread and reports the thread
// CPU time per operation as the metric "cpu-ns/op" next to the usual wall-clock ns/op. Garbage
// collection done on other threads is not included.
func Measure(b *testing.B, body func(i int)) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := Thread()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		body(i)
	}
	b.StopTimer()
	if t := Thread(); t > 0 {
		b.ReportMetric(float64((t-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
