package diskfree

import (
	"errors"
	"testing"
)

// TestBytes: a folder's free space is positive where the system tells it, and a missing folder
// is an error.
func TestBytes(t *testing.T) {
	n, err := Bytes(t.TempDir())
	if errors.Is(err, ErrUnknown) {
		t.Skip(err)
	}
	if err != nil || n <= 0 {
		t.Fatalf("Bytes = %d, %v", n, err)
	}
	if _, err := Bytes(t.TempDir() + "/nosuch"); err == nil {
		t.Error("a missing folder: no error")
	}
}
