package prep

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
)

// smallSource returns a source of the first n graphs of a split, counting its calls.
func smallSource(t testing.TB, name, split string, n int, calls *int) Source {
	dataDir := testdata.Dir(t)
	return func() ([]*data.Graph, *data.Spec, error) {
		*calls++
		gs, spec, err := data.LoadSplit(dataDir, name, split)
		if err != nil {
			return nil, nil, err
		}
		return gs[:min(n, len(gs))], spec, nil
	}
}

func encoded(t *testing.T, key Key, gs []*data.Graph) []byte {
	t.Helper()
	b, err := Encode(key, gs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLoadBuildsThenHits(t *testing.T) {
	for _, key := range []Key{
		{Dataset: "zinc", Split: "val", R: 3, Encoding: "adj", SelfLoops: true},
		{Dataset: "zinc", Split: "val", R: 2, Encoding: "short", CLS: true, SelfLoops: true},
		{Dataset: "zinc", Split: "val", R: 2, Encoding: "lp", Q: 8, SelfLoops: true},
		{Dataset: "zinc", Split: "val", R: 2, Encoding: "rwse", Steps: 16, CLS: true, SelfLoops: true},
		{Dataset: "neighborsmatch-2", Split: "train", R: 2, Encoding: "adj", CLS: true, SelfLoops: true, Seed: 3},
	} {
		dir := t.TempDir()
		calls := 0
		src := smallSource(t, key.Dataset, key.Split, 50, &calls)
		gs, st, err := Load(dir, key, src, 2)
		if err != nil {
			t.Fatal(err)
		}
		if st.Hit || st.Rebuilt != "missing" || calls != 1 {
			t.Fatalf("%s: first load %+v, %d source calls", key, st, calls)
		}
		again, st, err := Load(dir, key, src, 2)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Hit || calls != 1 {
			t.Fatalf("%s: second load %+v, %d source calls", key, st, calls)
		}
		if !bytes.Equal(encoded(t, key, gs), encoded(t, key, again)) {
			t.Errorf("%s: cached graphs differ from built ones", key)
		}
		g := again[0]
		switch key.Encoding {
		case "adj":
			if g.AdjDim != key.R || g.SP != nil || g.NodePE != nil {
				t.Errorf("adj: AdjDim %d, SP %v, NodePE %v", g.AdjDim, g.SP != nil, g.NodePE != nil)
			}
		case "short":
			if g.SP == nil || g.Adj != nil || !g.HasCLS {
				t.Errorf("short: SP %v, Adj %v, CLS %v", g.SP != nil, g.Adj != nil, g.HasCLS)
			}
		case "lp":
			if g.NodePEDim != 8 || len(g.NodePE) != 8*g.N || g.SP != nil || g.Adj != nil {
				t.Errorf("lp: NodePEDim %d, %d values", g.NodePEDim, len(g.NodePE))
			}
		case "rwse":
			if g.NodePEDim != 16 || len(g.NodePE) != 16*g.N || g.SP != nil || g.Adj != nil || !g.HasCLS {
				t.Errorf("rwse: NodePEDim %d, %d values, SP %v, Adj %v, CLS %v", g.NodePEDim, len(g.NodePE), g.SP != nil, g.Adj != nil, g.HasCLS)
			}
		}
	}
}

func TestCorruptAndStaleRebuilt(t *testing.T) {
	dir := t.TempDir()
	key := Key{Dataset: "zinc", Split: "val", R: 2, Encoding: "adj", SelfLoops: true}
	calls := 0
	src := smallSource(t, "zinc", "val", 40, &calls)
	if _, _, err := Load(dir, key, src, 2); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, key.FileName())
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	// flip one byte in the middle of the payload
	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 0x40
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path, key); err == nil || !strings.Contains(err.Error(), "checksum") || !strings.Contains(err.Error(), path) {
		t.Errorf("corrupt file: error %v, want a checksum error naming the file", err)
	}
	_, st, err := Load(dir, key, src, 2)
	if err != nil {
		t.Fatal(err)
	}
	if st.Hit || !strings.Contains(st.Rebuilt, "checksum") || calls != 2 {
		t.Errorf("corrupt file not rebuilt: %+v, %d calls", st, calls)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, good) {
		t.Error("rebuilt file differs from the original build")
	}

	// truncated file
	if err := os.WriteFile(path, good[:len(good)-100], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, st, _ = Load(dir, key, src, 2); st.Hit || calls != 3 {
		t.Errorf("truncated file not rebuilt: %+v", st)
	}

	// stale: written by another preprocessing version under the same name
	old := key
	old.Version = PreprocessVersion + 1
	gs, _, _ := src()
	calls--
	if err := WriteFile(path, old, gs); err != nil {
		t.Fatal(err)
	}
	_, st, err = Load(dir, key, src, 2)
	if err != nil {
		t.Fatal(err)
	}
	if st.Hit || !strings.Contains(st.Rebuilt, "stale") || calls != 4 {
		t.Errorf("stale file not rebuilt: %+v, %d calls", st, calls)
	}

	// no temporary files left behind
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d entries in the cache folder, want 1", len(entries))
	}
}

func TestByteIdentical(t *testing.T) {
	for _, key := range []Key{
		{Dataset: "cluster", Split: "val", R: 1, Encoding: "lp", Q: 4, CLS: true, SelfLoops: true, Seed: 5},
		{Dataset: "cluster", Split: "val", R: 2, Encoding: "rwse", Steps: 16, CLS: true, SelfLoops: true, Seed: 5},
	} {
		byteIdentical(t, key)
	}
}

// byteIdentical builds key's cache file with 1, 2 and 3 workers and requires the same bytes.
func byteIdentical(t *testing.T, key Key) {
	var files [][]byte
	for _, workers := range []int{1, 2, 3} {
		dir := t.TempDir()
		calls := 0
		src := func() ([]*data.Graph, *data.Spec, error) {
			calls++
			c := data.ClusterConfig()
			c.Val = 12
			gs, err := data.GenerateSBM(c, "val", key.Seed)
			spec, _ := data.OpenSpec("", "cluster") // generated: needs no data folder
			return gs, spec, err
		}
		if _, _, err := Load(dir, key, src, workers); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, key.FileName()))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, b)
	}
	for i := 1; i < len(files); i++ {
		if !bytes.Equal(files[0], files[i]) {
			t.Errorf("%s: cache built with different worker counts differs (%d vs %d bytes)", key, len(files[0]), len(files[i]))
		}
	}
}

func TestRawMNISTCachedOnce(t *testing.T) {
	// A small MNIST-like image set through the raw cache: the segmentation runs once for two
	// rewired variants.
	dataDir := testdata.Dir(t)
	dir := t.TempDir()
	calls := 0
	raw := Key{Dataset: "mnist", Split: "test", Encoding: EncRaw}
	src := func() ([]*data.Graph, *data.Spec, error) {
		calls++
		im, err := data.LoadMNISTImages(dataDir, "test")
		if err != nil {
			return nil, nil, err
		}
		o := data.MNISTSuperpixels()
		o.Limit = 10
		gs, err := data.SuperpixelGraphs(im, o)
		spec, _ := data.OpenSpec(dataDir, "mnist")
		return gs, spec, err
	}
	base, _, err := Load(dir, raw, src, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, st, err := Load(dir, raw, src, 2); err != nil || !st.Hit || calls != 1 {
		t.Fatalf("raw cache: %v %+v %d calls", err, st, calls)
	}
	for _, r := range []int{1, 2} {
		key := Key{Dataset: "mnist", Split: "test", R: r, Encoding: "adj", CLS: true, SelfLoops: true}
		gs, _, err := LoadDataset(dir, dataDir, key, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(gs) != 10 || gs[0].N != base[0].N+1 || !gs[0].HasCLS {
			t.Fatalf("r = %d: %d graphs, %d nodes (raw %d)", r, len(gs), gs[0].N, base[0].N)
		}
	}
	if calls != 1 {
		t.Errorf("segmentation ran %d times", calls)
	}
	if err := (Key{Dataset: "mnist", Split: "test", R: 1, Encoding: EncRaw}).Validate(); err == nil {
		t.Error("raw key with r = 1 accepted")
	}
}

func TestKeyErrors(t *testing.T) {
	for _, k := range []Key{
		{Dataset: "zinc", Split: "val", R: 0, Encoding: "adj"},
		{Dataset: "zinc", Split: "val", R: 1, Encoding: "spectral"},
		{Dataset: "zinc", Split: "val", R: 1, Encoding: "lp"},
		{Dataset: "zinc", Split: "val", R: 1, Encoding: "rwse"},
		{Dataset: "zinc", Split: "val", R: 1, Encoding: "rwse", Steps: -2},
		{Dataset: "../x", Split: "val", R: 1, Encoding: "adj"},
	} {
		if err := k.Validate(); err == nil {
			t.Errorf("key %s accepted", k)
		}
	}
	if _, err := Decode([]byte("RWGCACHE\x01\x00\x00\x00garbage"), Key{}); err == nil {
		t.Error("garbage decoded")
	}
	_, _, err := LoadDataset(t.TempDir(), t.TempDir(), Key{Dataset: "nosuch", Split: "train", R: 1, Encoding: "adj"}, 1)
	if err == nil || !strings.Contains(err.Error(), `unknown dataset "nosuch"`) {
		t.Errorf("unknown dataset: %v", err)
	}
}

// BenchmarkZincR4Adj compares building the ZINC training split at r = 4 with the adjacency
// encoding (cold: load the JSON Lines file, rewire, encode, write the cache) with reading it
// back from the cache (warm).
//
//	go test ./prep -run '^$' -bench ZincR4Adj -benchtime 3x
func BenchmarkZincR4Adj(b *testing.B) {
	dataDir := testdata.Dir(b)
	key := Key{Dataset: "zinc", Split: "train", R: 4, Encoding: "adj", SelfLoops: true}
	dir := b.TempDir()
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			os.Remove(filepath.Join(dir, key.FileName()))
			if _, st, err := LoadDataset(dir, dataDir, key, 0); err != nil || st.Hit {
				b.Fatal(err, st)
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		if _, _, err := LoadDataset(dir, dataDir, key, 0); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, st, err := LoadDataset(dir, dataDir, key, 0); err != nil || !st.Hit {
				b.Fatal(err, st)
			}
		}
	})
}

// TestUnwritableCacheFolder: a cache folder that cannot be created or written costs the cache,
// not the run: the graphs come back, and Status says why nothing was kept.
func TestUnwritableCacheFolder(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	key := Key{Dataset: "neighborsmatch-2", Split: "train", R: 1, Encoding: EncNone, SelfLoops: true}
	calls := 0
	gs, st, err := Load(filepath.Join(file, "cache"), key, smallSource(t, key.Dataset, key.Split, 5, &calls), 1)
	if err != nil || len(gs) != 5 || st.Hit || st.WriteErr == nil {
		t.Fatalf("got %d graphs, %+v, %v; want 5 graphs and a write error", len(gs), st, err)
	}
	if d := st.Describe(); !strings.HasPrefix(d, "cache: warning: ") || !strings.Contains(d, "continuing without the cache") {
		t.Errorf("Describe = %q", d)
	}
}

// TestStatusDescribe: one line for a read, a build and a rebuild (with its reason).
func TestStatusDescribe(t *testing.T) {
	for _, c := range []struct {
		st   Status
		want string
	}{
		{Status{Path: "/c/f.rwgc", Hit: true}, "cache: read /c/f.rwgc"},
		{Status{Path: "/c/f.rwgc", Rebuilt: "missing"}, "cache: built /c/f.rwgc"},
		{Status{Path: "/c/f.rwgc", Rebuilt: "/c/f.rwgc: checksum mismatch"}, "cache: rebuilt, the old file failed a check: /c/f.rwgc: checksum mismatch"},
	} {
		if got := c.st.Describe(); got != c.want {
			t.Errorf("Describe = %q, want %q", got, c.want)
		}
	}
}

// TestDecodeFirst: the first n graphs of a cache file are those Decode gives, more than the file
// holds gives all, and a corrupt file is refused as by Decode.
func TestDecodeFirst(t *testing.T) {
	key := Key{Dataset: "cluster", Split: "val", R: 1, Encoding: "lp", Q: 4, SelfLoops: true, Seed: 5}
	c := data.ClusterConfig()
	c.Val = 6
	raw, err := data.GenerateSBM(c, "val", key.Seed)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := data.OpenSpec("", "cluster")
	gs, err := Build(raw, spec, key, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := encoded(t, key, gs)
	all, err := Decode(b, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 4, 6, 9} {
		got, err := DecodeFirst(b, key, n)
		if err != nil {
			t.Fatal(err)
		}
		if want := all[:min(n, len(all))]; !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("first %d: %d graphs, not the first %d of Decode", n, len(got), len(want))
		}
	}
	b[len(b)/2] ^= 1
	if _, err := DecodeFirst(b, key, 1); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("corrupt file: %v", err)
	}
}
