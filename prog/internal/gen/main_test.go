package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedFilesAreCurrent regenerates the files in memory and compares them with the
// committed ones: run `go generate ./prog` after changing the op table or a CUDA launcher.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatalf("%v (run go generate ./prog)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date: run go generate ./prog", name)
		}
	}
}

// TestEveryOpDeclaresItsKernel checks the op table's declarations: each method declared once,
// before any op names it alone.
func TestEveryOpDeclaresItsKernel(t *testing.T) {
	ms, err := kernels()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 40 {
		t.Errorf("%d kernel methods, want every op's", len(ms))
	}
}
