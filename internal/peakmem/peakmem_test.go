package peakmem

import (
	"runtime"
	"testing"
)

// TestProcessSeesAnAllocation: the peak covers at least a 64 MiB buffer the test has touched,
// and never falls.
func TestProcessSeesAnAllocation(t *testing.T) {
	before := Process()
	if before == 0 && (runtime.GOOS == "linux") {
		t.Fatal("no peak resident set on linux")
	}
	if before == 0 {
		t.Skip("SKIP: this system reports no peak resident set")
	}
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	after := Process()
	runtime.KeepAlive(buf)
	if after < 64<<20 || after < before {
		t.Errorf("peak %d bytes after touching 64 MiB (before: %d)", after, before)
	}
}
