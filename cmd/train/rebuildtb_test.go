package main

import (
	"path/filepath"
	"testing"
)

// TestRebuildTBFlag: -rebuild-tb refuses any other flag (usage, status 2) and fails (status 1)
// on a folder that is no run directory.
func TestRebuildTBFlag(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nothing")
	if code := run([]string{"-rebuild-tb", dir, "-epochs", "3"}); code != exitUsage {
		t.Errorf("-rebuild-tb with -epochs: status %d, want %d", code, exitUsage)
	}
	if code := run([]string{"-rebuild-tb", dir}); code != 1 {
		t.Errorf("-rebuild-tb on a missing folder: status %d, want 1", code)
	}
}
