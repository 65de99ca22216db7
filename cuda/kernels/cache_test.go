package kernels

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
)

func TestKernelCache(t *testing.T) {
	c := Cache{Dir: t.TempDir()}
	key := Key("a.cu", "src", map[string]string{"common.cuh": "h"}, "compute_70", cudalib.Version{Major: 11, Minor: 8}, cudalib.CompileOptions("compute_70"))
	for _, other := range []string{
		Key("a.cu", "src2", map[string]string{"common.cuh": "h"}, "compute_70", cudalib.Version{Major: 11, Minor: 8}, nil),
		Key("a.cu", "src", map[string]string{"common.cuh": "h2"}, "compute_70", cudalib.Version{Major: 11, Minor: 8}, cudalib.CompileOptions("compute_70")),
		Key("a.cu", "src", map[string]string{"common.cuh": "h"}, "compute_90", cudalib.Version{Major: 11, Minor: 8}, cudalib.CompileOptions("compute_70")),
		Key("a.cu", "src", map[string]string{"common.cuh": "h"}, "compute_70", cudalib.Version{Major: 12, Minor: 4}, cudalib.CompileOptions("compute_70")),
	} {
		if other == key {
			t.Fatal("a different source, header, target or NVRTC version gives the same key")
		}
	}
	if _, ok := c.Load(key); ok {
		t.Fatal("empty cache returned an entry")
	}
	payload := []byte(".version 7.8\n.target sm_70\n")
	if err := c.Store(key, payload); err != nil {
		t.Fatal(err)
	}
	got, ok := c.Load(key)
	if !ok || !bytes.Equal(got, payload) {
		t.Fatalf("load after store: %q, %v", got, ok)
	}
	// A damaged entry (one flipped byte, or cut short) is ignored.
	p := c.path(key)
	b, _ := os.ReadFile(p)
	b[len(b)-1] ^= 1
	os.WriteFile(p, b, 0o644)
	if _, ok := c.Load(key); ok {
		t.Fatal("a corrupted entry was returned")
	}
	os.WriteFile(p, b[:len(b)-3], 0o644)
	if _, ok := c.Load(key); ok {
		t.Fatal("a truncated entry was returned")
	}
	if err := c.Store(key, payload); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Load(key); !ok || !bytes.Equal(got, payload) {
		t.Fatal("rewrite after damage failed")
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("temporary files left behind: %v", ents)
	}
	t.Setenv(EnvCache, "off")
	if DefaultCache().Dir != "" {
		t.Fatal("REWIREGNN_KERNEL_CACHE=off does not disable the cache")
	}
}
