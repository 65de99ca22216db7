//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package runfiles

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteAtomicHonoursTheUmask: the file WriteAtomic makes has the mode os.WriteFile would
// give a new file (perm less the umask), under two umasks and for a new and a replaced file.
func TestWriteAtomicHonoursTheUmask(t *testing.T) {
	for _, mask := range []int{0o022, 0o077} {
		old := syscall.Umask(mask)
		dir := t.TempDir()
		ref := filepath.Join(dir, "ref")
		err := os.WriteFile(ref, nil, FilePerm)
		p := filepath.Join(dir, "f")
		for i := 0; i < 2 && err == nil; i++ { // new, then replaced
			err = WriteAtomic(p, []byte("x"), FilePerm)
		}
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		a, errA := os.Stat(ref)
		b, errB := os.Stat(p)
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if a.Mode() != b.Mode() || b.Mode().Perm() != os.FileMode(0o666&^mask) {
			t.Errorf("umask %04o: WriteAtomic made %v, os.WriteFile %v", mask, b.Mode(), a.Mode())
		}
	}
}
