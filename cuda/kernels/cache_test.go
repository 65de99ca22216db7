package kernels

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
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

// TestLoadOrBuildOnce: devices opened at once (train -parallel) compile each kernel file once
// per process, with the disk cache and without it, and a failed build is tried again.
func TestLoadOrBuildOnce(t *testing.T) {
	for _, c := range []Cache{{Dir: t.TempDir()}, {}} {
		key := Key("once.cu", "src "+c.Dir, nil, "compute_90", cudalib.Version{Major: 12, Minor: 4}, nil)
		var builds atomic.Int32
		var wg sync.WaitGroup
		imgs := make([][]byte, 8)
		for i := range imgs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				img, _, err := c.LoadOrBuild(key, func() ([]byte, error) {
					builds.Add(1)
					return []byte("ptx"), nil
				})
				if err != nil {
					t.Error(err)
				}
				imgs[i] = img
			}()
		}
		wg.Wait()
		if n := builds.Load(); n != 1 {
			t.Errorf("cache %q: %d builds of one key, want 1", c.Dir, n)
		}
		for i, img := range imgs {
			if string(img) != "ptx" {
				t.Errorf("cache %q: caller %d got %q", c.Dir, i, img)
			}
		}
	}
	key := Key("fails.cu", "src", nil, "compute_90", cudalib.Version{Major: 12, Minor: 4}, nil)
	if _, _, err := (Cache{}).LoadOrBuild(key, func() ([]byte, error) { return nil, errors.New("nvrtc says no") }); err == nil {
		t.Fatal("a failed build returned no error")
	}
	if img, cached, err := (Cache{}).LoadOrBuild(key, func() ([]byte, error) { return []byte("ok"), nil }); err != nil || cached || string(img) != "ok" {
		t.Fatalf("after a failed build: %q, cached %t, %v; want a new build", img, cached, err)
	}
}
