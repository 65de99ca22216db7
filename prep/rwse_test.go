package prep

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/posenc"
)

// TestRWSEOnTheOriginalGraph checks that the random-walk encoding of every preprocessed graph is
// that of the graph as loaded, bit for bit, whatever the radius and CLS node (rewiring adds
// edges and self-loops that would change the walks), that the CLS node's row is zero, and that
// the rewired edges are those of the same key without an encoding.
func TestRWSEOnTheOriginalGraph(t *testing.T) {
	raw, spec, err := data.LoadSplit(testdata.Dir(t), "zinc", "val")
	if err != nil {
		t.Fatal(err)
	}
	raw = raw[:40]
	const k = 7
	var rw posenc.RandomWalk
	want := make([][]float32, len(raw))
	for i, g := range raw {
		want[i] = make([]float32, g.N*k)
		if err := rw.Encode(g.N, g.Src, g.Dst, k, want[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []int{1, 3} {
		for _, cls := range []bool{false, true} {
			key := Key{Dataset: "zinc", Split: "val", R: r, Encoding: "rwse", Steps: k, CLS: cls, SelfLoops: true}
			gs, err := Build(raw, spec, key, 2)
			if err != nil {
				t.Fatal(err)
			}
			plain := key
			plain.Encoding, plain.Steps = EncNone, 0
			ref, err := Build(raw, spec, plain, 1)
			if err != nil {
				t.Fatal(err)
			}
			changed := false
			for i, g := range gs {
				n := raw[i].N
				if g.NodePEDim != k || len(g.NodePE) != g.N*k || g.HasCLS != cls || g.N != n+btoi(cls) {
					t.Fatalf("%s graph %d: width %d, %d values, %d nodes (original %d), CLS %v", key, i, g.NodePEDim, len(g.NodePE), g.N, n, g.HasCLS)
				}
				if !slices.Equal(g.NodePE[:n*k], want[i]) {
					t.Fatalf("%s graph %d: the encoding is not the original graph's", key, i)
				}
				if cls && slices.ContainsFunc(g.NodePE[n*k:], func(x float32) bool { return x != 0 }) {
					t.Fatalf("%s graph %d: CLS row %v, want zeros", key, i, g.NodePE[n*k:])
				}
				if !slices.Equal(g.Src, ref[i].Src) || !slices.Equal(g.Dst, ref[i].Dst) || g.SP != nil || g.Adj != nil {
					t.Fatalf("%s graph %d: the rewired edges differ from those without an encoding", key, i)
				}
				// The rewired graph's own encoding differs (self-loops alone make every walk
				// return after one step): the test would notice an encoding taken after rewiring.
				on := make([]float32, g.N*k)
				if err := rw.Encode(g.N, g.Src, g.Dst, k, on); err != nil {
					t.Fatal(err)
				}
				changed = changed || !slices.Equal(on[:n*k], want[i])
			}
			if !changed {
				t.Fatalf("%s: rewiring left every encoding unchanged; the check above is vacuous", key)
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRWSEKey checks that k is part of the cache key and file name (another k is another file,
// and a file read under another k is refused as stale), and that the keys of the other
// encodings keep the names they had before rwse existed, so their caches stay valid.
func TestRWSEKey(t *testing.T) {
	k16 := Key{Dataset: "zinc", Split: "val", R: 2, Encoding: "rwse", Steps: 16, CLS: true, SelfLoops: true}
	k8 := k16
	k8.Steps = 8
	for _, c := range []struct {
		key  Key
		want string
	}{
		{k16, "zinc/val/r2/rwse/clstrue/k16/selfloopstrue/seed0/v2"},
		{k8, "zinc/val/r2/rwse/clstrue/k8/selfloopstrue/seed0/v2"},
		{Key{Dataset: "zinc", Split: "val", R: 2, Encoding: "lp", Q: 8, SelfLoops: true}, "zinc/val/r2/lp/clsfalse/q8/selfloopstrue/seed0/v2"},
		{Key{Dataset: "zinc", Split: "val", R: 2, Encoding: "adj", Q: 8, Steps: 16, SelfLoops: true}, "zinc/val/r2/adj/clsfalse/q0/selfloopstrue/seed0/v2"},
		{Key{Dataset: "zinc", Split: "val", R: 2, Encoding: "lp", Q: 8, Steps: 16, SelfLoops: true}, "zinc/val/r2/lp/clsfalse/q8/selfloopstrue/seed0/v2"},
	} {
		if got := c.key.String(); got != c.want {
			t.Errorf("key %+v: %q, want %q", c.key, got, c.want)
		}
	}
	if k16.FileName() == k8.FileName() {
		t.Fatalf("k = 8 and 16 share the file %s", k16.FileName())
	}
	dir := t.TempDir()
	calls := 0
	src := smallSource(t, "zinc", "val", 10, &calls)
	gs, _, err := Load(dir, k16, src, 1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, k16.FileName())
	if err := os.Rename(path, filepath.Join(dir, k8.FileName())); err != nil {
		t.Fatal(err)
	}
	_, err = ReadFile(filepath.Join(dir, k8.FileName()), k8)
	if err == nil || !strings.Contains(err.Error(), "stale cache") || !strings.Contains(err.Error(), "k16") {
		t.Fatalf("a k = 16 file read as k = 8: %v, want a stale-cache error naming k16", err)
	}
	got, st, err := Load(dir, k8, src, 1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Hit || !strings.Contains(st.Rebuilt, "stale") || calls != 2 || got[0].NodePEDim != 8 {
		t.Fatalf("k = 8 over a k = 16 file: %+v, %d calls, width %d", st, calls, got[0].NodePEDim)
	}
	if gs[0].NodePEDim != 16 {
		t.Fatalf("k = 16 build has width %d", gs[0].NodePEDim)
	}
}

// TestRWSEZeroOnNeighborsMatch: NeighborsMatch trees point child→parent, so no walk ever
// returns (a directed acyclic graph has no closed walks) and the encoding is zero everywhere,
// as docs/protocol.md §"Random-walk encoding" says.
func TestRWSEZeroOnNeighborsMatch(t *testing.T) {
	raw, spec, err := data.LoadSplitSeed("", "neighborsmatch-2", "train", 3)
	if err != nil {
		t.Fatal(err)
	}
	key := Key{Dataset: "neighborsmatch-2", Split: "train", R: 2, Encoding: "rwse", Steps: 16, CLS: true, SelfLoops: true, Seed: 3}
	gs, err := Build(raw[:8], spec, key, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range gs {
		if len(g.NodePE) != 16*g.N || slices.ContainsFunc(g.NodePE, func(x float32) bool { return x != 0 }) {
			t.Fatalf("graph %d: %d values, not all zero", i, len(g.NodePE))
		}
	}
}
