package train

import (
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/hops"
	"github.com/rewiregnn/rewiregnn/internal/plural"
	"github.com/rewiregnn/rewiregnn/prep"
)

// CacheOff is the dataset.cache value (and -cache flag) that disables the preprocessing cache;
// CacheAuto, the default, is the folder DefaultCacheDir gives.
const (
	CacheOff  = prep.DirOff
	CacheAuto = prep.DirAuto
)

// DefaultCacheDir is the preprocessing cache's default folder (prep.DefaultDir).
func DefaultCacheDir() (string, error) { return cacheFolder(CacheAuto) }

// Resolve fills the keys of c whose defaults depend on the machine, so that the config.yaml
// written into the run folder says what the run used and loads back to the same run: the data
// folder (dataset.dir after $REWIREGNN_DATA and the default, absolute; left empty for a
// generated dataset when no folder exists), the cache folder (dataset.cache: "auto" becomes
// DefaultCacheDir, "" becomes "off") and the run name.
func Resolve(c *config.Run) error {
	d := &c.Dataset
	if d.R == config.RAuto {
		return fmt.Errorf("dataset.r auto must be resolved (train.ResolveRadius) before the run is named")
	}
	if dir, err := data.ResolveDataDir(d.Dir); err == nil {
		if d.Dir, err = filepath.Abs(dir); err != nil {
			return fmt.Errorf("dataset.dir: %w", err)
		}
	} else if data.NeedsFiles(d.Name) {
		return err
	}
	cache, err := cacheFolder(d.Cache)
	if err != nil {
		return err
	}
	d.Cache = cmp.Or(cache, CacheOff)
	c.Name = c.RunName()
	return nil
}

// ResolveRadius applies the density rule to a config whose dataset.r is auto: r becomes the first
// radius whose mean density over the run's training split exceeds 0.5 (package hops; the
// densities are kept in the preprocessing cache). It says what it chose, and why, on log. A
// config with a number for r is left alone. It runs before the run is named (its folder carries r).
func ResolveRadius(c *config.Run, log io.Writer, workers int) error {
	if c.Dataset.R != config.RAuto {
		return nil
	}
	src, err := RadiusSource(c, workers)
	if err != nil {
		return err
	}
	r, dens, err := hops.Suggest(src, log)
	if err != nil {
		return fmt.Errorf("dataset.r auto: %w", err)
	}
	c.Dataset.R = r
	fmt.Fprintf(log, "dataset.r auto: r = %d, the first radius whose mean density over the %d training graphs exceeds %g (%s)\n",
		r, dens.Graphs, hops.Threshold, dens.Describe())
	return nil
}

// RadiusSource is the training split a run's density rule reads: the run's dataset, data and
// cache folders, self-loop setting and subset.
func RadiusSource(c *config.Run, workers int) (hops.Source, error) {
	d := c.Dataset
	dir, err := data.ResolveDataDir(d.Dir)
	if err != nil && data.NeedsFiles(d.Name) {
		return hops.Source{}, fmt.Errorf("dataset.r auto: %w", err)
	}
	if err := data.CheckFolder(dir, d.Name); err != nil {
		return hops.Source{}, fmt.Errorf("dataset.r auto: %w", err)
	}
	cache, err := cacheFolder(d.Cache)
	if err != nil {
		return hops.Source{}, err
	}
	return hops.Source{Dataset: d.Name, Split: "train", SelfLoops: d.SelfLoops, Seed: data.DefaultGenSeed,
		Subset: d.Subset, DataDir: dir, CacheDir: cache, Workers: workers}, nil
}

// cacheFolder is the absolute cache folder a dataset.cache value names, "" when it is off.
func cacheFolder(v string) (string, error) {
	dir, err := prep.ResolveDir(v)
	if err != nil {
		return "", fmt.Errorf("dataset.cache %s: %w: set dataset.cache (-cache DIR) or -cache off", v, err)
	}
	return dir, nil
}

// splitKey is the cache key of a split of the run's dataset read from dir.
func (r *run) splitKey(split, dir string) prep.Key {
	d := r.cfg.Dataset
	enc := d.Encoding
	if enc == "" {
		enc = prep.EncNone
	}
	// the generated datasets are drawn with the seed data.LoadSplit uses, cached or not
	key := prep.Key{Dataset: d.Name, Split: split, R: d.R, Encoding: enc, CLS: d.CLS, SelfLoops: d.SelfLoops, Seed: data.DefaultGenSeed}.KeyedBy(dir)
	return key.WithWidths(d.Q, d.RWSteps)
}

// openData resolves the data folder, opens the dataset's spec (r.spec) and returns the folder
// and the cache folder ("" when off).
func (r *run) openData(logSource bool) (dir, cache string, err error) {
	d := r.cfg.Dataset
	dir, err = data.ResolveDataDir(d.Dir)
	if err != nil && data.NeedsFiles(d.Name) {
		return "", "", err
	} // generated datasets need no folder
	if err := data.CheckFolder(dir, d.Name); err != nil {
		return "", "", err
	}
	spec, err := data.OpenSpec(dir, d.Name)
	if err != nil {
		return "", "", err
	}
	if data.NeedsFiles(d.Name) {
		if logSource {
			fmt.Fprintf(r.log, "data: %s\n", data.DescribeSource(dir, d.Name))
		}
		if data.SourceOf(dir, d.Name) == data.SourcePyG {
			r.dataSource = data.SourcePyG
		}
	}
	r.spec = spec
	cache, err = cacheFolder(d.Cache)
	return dir, cache, err
}

// presize sets r.sizes without holding the preprocessed splits, when the run reads them from the
// cache (a cache folder, no subset): each split's cache file is built chunk by chunk if it is
// missing, then scanned graph by graph (prep.SizesDataset). The memory guard can then refuse a
// run whose graphs do not fit before they are loaded. It says whether it did.
func (r *run) presize() (bool, error) {
	d := r.cfg.Dataset
	if d.Subset > 0 || d.Cache == CacheOff {
		return false, nil
	}
	dir, cache, err := r.openData(false)
	if err != nil || cache == "" {
		return false, err
	}
	var sz [3][]prep.GraphSize
	for i, split := range []string{"train", "val", "test"} {
		if !slices.Contains(r.spec.Splits, split) {
			continue
		}
		s, st, err := prep.SizesDataset(cache, dir, r.splitKey(split, dir), r.o.Workers)
		if err != nil {
			return false, err
		}
		if !st.Hit {
			fmt.Fprintln(r.log, st.Describe())
		}
		sz[i] = s
	}
	if sz[1] == nil && d.ValFraction > 0 {
		sz[0], sz[1] = carve(sz[0], d.ValFraction)
	}
	r.sizes = sz
	return true, nil
}

// loadData loads and preprocesses the splits (through the cache when one is configured),
// carves a validation split when asked, and builds the fixed evaluation batches.
func (r *run) loadData() error {
	d := r.cfg.Dataset
	dir, cache, err := r.openData(true)
	if err != nil {
		return err
	}
	spec := r.spec
	load := func(split string) ([]*data.Graph, error) {
		if !slices.Contains(spec.Splits, split) {
			return nil, nil
		}
		key := r.splitKey(split, dir)
		if cache != "" && r.cacheServes(cache, key) {
			if d.Subset > 0 { // the first graphs of the cached split, not all of them
				path := filepath.Join(cache, key.FileName())
				gs, err := prep.ReadFileFirst(path, key, d.Subset)
				if err == nil {
					fmt.Fprintf(r.log, "cache: read the first %s of %s\n", plural.Count(len(gs), "graph"), path)
					return gs, nil
				}
				fmt.Fprintf(r.log, "cache: %v; this subset run preprocesses only the graphs it uses\n", err)
			} else {
				gs, st, err := prep.LoadDataset(cache, dir, key, r.o.Workers)
				if err == nil {
					fmt.Fprintln(r.log, st.Describe())
				}
				return gs, err
			}
		}
		raw, spec, err := data.LoadFirst(dir, d.Name, split, d.Subset)
		if err != nil {
			return nil, err
		}
		return prep.Build(raw, spec, key, r.o.Workers)
	}
	if r.train, err = load("train"); err != nil {
		return err
	}
	if len(r.train) == 0 {
		return fmt.Errorf("%s: no training graphs", d.Name)
	}
	if r.val, err = load("val"); err != nil {
		return err
	}
	if r.test, err = load("test"); err != nil {
		return err
	}
	if r.val == nil && d.ValFraction > 0 {
		r.train, r.val = carve(r.train, d.ValFraction)
	}
	if r.val == nil && r.cfg.Train.Monitor == "val_loss" {
		return fmt.Errorf("train.monitor is val_loss but %s has no validation split: set dataset.val_fraction (e.g. 0.1) or train.monitor: train_loss", d.Name)
	}
	r.sizes = [3][]prep.GraphSize{sizesOf(r.train), sizesOf(r.val), sizesOf(r.test)}
	bs := r.cfg.Train.BatchSize
	if r.valB, err = batches(r.val, bs); err != nil {
		return err
	}
	r.testB, err = batches(r.test, bs)
	return err
}

// cacheServes says whether the cache is used for key's split: always, except for a subset run
// whose split is not cached yet, which preprocesses only its subset rather than build the whole
// split's cache file (minutes and gigabytes on CLUSTER for a quick look); it says so in the log.
func (r *run) cacheServes(cache string, key prep.Key) bool {
	if r.cfg.Dataset.Subset == 0 {
		return true
	}
	if _, err := os.Stat(filepath.Join(cache, key.FileName())); err == nil {
		return true
	}
	fmt.Fprintf(r.log, "cache: %s is not cached; this subset run (dataset.subset %d) preprocesses only the graphs it uses and keeps no cache file (a run without a subset builds it)\n", key, r.cfg.Dataset.Subset)
	return false
}

// carve moves a fixed random fraction of gs (the same for every seed) into a validation split
// (graphs, or their sizes: the same graphs either way).
func carve[T any](gs []T, frac float64) (train, val []T) {
	perm := rand.New(rand.NewPCG(1, 2)).Perm(len(gs))
	k := max(1, int(frac*float64(len(gs))))
	for i, j := range perm {
		if i < k {
			val = append(val, gs[j])
		} else {
			train = append(train, gs[j])
		}
	}
	return train, val
}

// batches cuts gs in order into batches of size (the last may be smaller).
func batches(gs []*data.Graph, size int) ([]*data.Batch, error) {
	var out []*data.Batch
	for lo := 0; lo < len(gs); lo += size {
		b, err := data.NewBatch(gs[lo:min(lo+size, len(gs))])
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
