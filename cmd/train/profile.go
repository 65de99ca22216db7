package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// startCPUProfile starts Go's CPU profiler for -cpuprofile path (for `go tool pprof`). It
// refuses a path that already exists or whose folder does not, before any training starts.
// The profile is held in memory and written atomically by the returned stop, which the
// command calls on every way out, an interrupted run (SIGINT, SIGTERM) included.
func startCPUProfile(path string) (stop func() error, err error) {
	if _, err := os.Stat(path); err == nil {
		return nil, fmt.Errorf("-cpuprofile %s: the file exists; remove it or name another", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("-cpuprofile %s: %w", path, err)
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("-cpuprofile %s: no folder %s", path, filepath.Dir(path))
	}
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return nil, fmt.Errorf("-cpuprofile %s: %w", path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := runfiles.WriteAtomic(path, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		return nil
	}, nil
}
