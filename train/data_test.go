package train

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/prep"
)

// TestCachedDataMatchesUncached checks that a generated dataset is the same with and without
// the preprocessing cache: both draw it with the generated datasets' seed.
func TestCachedDataMatchesUncached(t *testing.T) {
	loadTrain := func(sets ...string) *run {
		c := nm2(t, sets...)
		r := &run{o: Options{Run: c, Seed: 1, Dir: c.Dir(1), Workers: 1}, cfg: c, start: time.Now(), log: io.Discard}
		if err := r.loadData(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	plain := loadTrain("dataset.cache=off")
	cached := loadTrain("dataset.cache=" + t.TempDir())
	for _, s := range []struct {
		name string
		a, b any
	}{{"train", plain.train, cached.train}, {"val", plain.val, cached.val}, {"test", plain.test, cached.test}} {
		if !reflect.DeepEqual(s.a, s.b) {
			t.Errorf("%s split differs between the cached and the uncached load", s.name)
		}
	}
}

// TestSubsetRunsAndTheCache: a subset run whose split is not cached preprocesses only its
// subset (the same graphs as the whole split's first ones) and writes no cache file; once a full
// run has cached the split, a subset run reads it.
func TestSubsetRunsAndTheCache(t *testing.T) {
	cache := t.TempDir()
	load := func(sets ...string) (*run, string) {
		c := nm2(t, append(sets, "dataset.cache="+cache)...)
		var log bytes.Buffer
		r := &run{o: Options{Run: c, Seed: 1, Dir: c.Dir(1), Workers: 1}, cfg: c, start: time.Now(), log: &log}
		if err := r.loadData(); err != nil {
			t.Fatal(err)
		}
		return r, log.String()
	}
	sub, log := load("dataset.subset=30")
	if !strings.Contains(log, "is not cached; this subset run") || strings.Contains(log, "cache: built") {
		t.Errorf("subset run on an empty cache logged:\n%s", log)
	}
	if files, _ := os.ReadDir(cache); len(files) != 0 {
		t.Errorf("the subset run wrote %d cache files", len(files))
	}
	full, log := load()
	if !strings.Contains(log, "cache: built") {
		t.Errorf("full run logged:\n%s", log)
	}
	again, log := load("dataset.subset=30")
	if !strings.Contains(log, "cache: read") || strings.Contains(log, "is not cached") {
		t.Errorf("subset run on a cached split logged:\n%s", log)
	}
	// the cache's encoding compares the graphs (a graph read back has nil where a built one has
	// empty slices)
	enc := func(gs []*data.Graph) []byte {
		b, err := prep.Encode(prep.Key{Dataset: "neighborsmatch-2", Split: "train", R: 2, Encoding: "adj", Seed: data.DefaultGenSeed}, gs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if len(sub.train) != 30 || !bytes.Equal(enc(sub.train), enc(full.train[:30])) || !bytes.Equal(enc(again.train), enc(sub.train)) {
		t.Errorf("the subset's %d training graphs are not the whole split's first 30 (read back: %d)", len(sub.train), len(again.train))
	}
}

// TestResolveFillsEveryKey: the written config names the cache folder actually used and the
// run name, and loads back to the same config (what -resume reads).
func TestResolveFillsEveryKey(t *testing.T) {
	for _, c := range []struct {
		cache, want string
	}{
		{"auto", filepath.Join(os.Getenv("XDG_CACHE_HOME"), "rewiregnn", "prep")},
		{"off", CacheOff},
		{"", CacheOff},
		{"rel/cache", filepath.Join(mustGetwd(t), "rel", "cache")},
	} {
		run := nm2(t, "dataset.cache="+c.cache)
		if err := Resolve(run); err != nil {
			t.Fatal(err)
		}
		if run.Dataset.Cache != c.want || run.Name != "neighborsmatch-2-gatedgcn-adj-r2" {
			t.Errorf("cache %q: resolved to cache %q, name %q", c.cache, run.Dataset.Cache, run.Name)
		}
		if run.Dataset.Dir != "" && !filepath.IsAbs(run.Dataset.Dir) {
			t.Errorf("data dir %q is not absolute", run.Dataset.Dir)
		}
		y, err := run.YAML()
		if err != nil {
			t.Fatal(err)
		}
		back, err := config.Parse("config.yaml", y, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := Resolve(back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, run) {
			t.Errorf("cache %q: the resolved config loads back as\n%+v\nnot\n%+v", c.cache, back, run)
		}
	}
}

func mustGetwd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// TestResolveRadius: dataset.r auto becomes the rule's radius before the run is named (ZINC: 4;
// CLUSTER, first 300 training graphs: 2), the choice and its densities are logged, and the
// resolved config writes the number; a number is left alone.
func TestResolveRadius(t *testing.T) {
	dir := testdata.Dir(t)
	for _, c := range []struct {
		sets []string
		r    int
	}{
		{[]string{"dataset.name=zinc", "dataset.dir=" + dir}, 4},
		{[]string{"dataset.name=cluster", "dataset.subset=300"}, 2},
	} {
		run := load(t, append(c.sets, "dataset.encoding=adj", "dataset.r=auto")...)
		var log strings.Builder
		if err := ResolveRadius(run, &log, 0); err != nil {
			t.Fatal(err)
		}
		if run.Dataset.R != c.r || !strings.HasSuffix(run.RunName(), fmt.Sprintf("-r%d", c.r)) {
			t.Errorf("%v: r = %d, name %s; want %d", c.sets, run.Dataset.R, run.RunName(), c.r)
		}
		if !strings.Contains(log.String(), fmt.Sprintf("dataset.r auto: r = %d, the first radius whose mean density", c.r)) {
			t.Errorf("%v: log %q does not say what was chosen", c.sets, log.String())
		}
		y, err := run.YAML()
		if err != nil || !strings.Contains(string(y), fmt.Sprintf("  r: %d\n", c.r)) {
			t.Errorf("%v: resolved config (%v):\n%s", c.sets, err, y)
		}
	}
	fixed := nm2(t)
	if err := ResolveRadius(fixed, io.Discard, 0); err != nil || fixed.Dataset.R != 2 {
		t.Errorf("r = 2 left as %d (%v)", fixed.Dataset.R, err)
	}
	unresolved := nm2(t, "dataset.r=auto")
	if err := Resolve(unresolved); err == nil || !strings.Contains(err.Error(), "ResolveRadius") {
		t.Errorf("Resolve of an unresolved r: %v", err)
	}
}
