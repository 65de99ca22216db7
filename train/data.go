package train

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/prep"
)

// loadData loads and preprocesses the splits (through the cache when one is configured),
// carves a validation split when asked, and builds the fixed evaluation batches.
func (r *run) loadData() error {
	d := r.cfg.Dataset
	dir, err := data.ResolveDataDir(d.Dir)
	if err != nil && data.NeedsFiles(d.Name) {
		return err
	} // generated datasets need no folder
	spec, err := data.OpenSpec(dir, d.Name)
	if err != nil {
		return err
	}
	r.spec = spec
	load := func(split string) ([]*data.Graph, error) {
		if !slices.Contains(spec.Splits, split) {
			return nil, nil
		}
		enc := d.Encoding
		if enc == "" {
			enc = prep.EncNone
		}
		// the generated datasets are drawn with the seed data.LoadSplit uses, cached or not
		key := prep.Key{Dataset: d.Name, Split: split, R: d.R, Encoding: enc, CLS: d.CLS, SelfLoops: d.SelfLoops, Seed: data.DefaultGenSeed}
		if enc == prep.EncLap {
			key.Q = d.Q
		}
		if d.Cache != "" {
			gs, _, err := prep.LoadDataset(d.Cache, dir, key, r.o.Workers)
			return r.subset(gs), err
		}
		raw, spec, err := data.LoadSplit(dir, d.Name, split)
		if err != nil {
			return nil, err
		}
		return prep.Build(r.subset(raw), spec, key, r.o.Workers)
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
	bs := r.cfg.Train.BatchSize
	if r.valB, err = batches(r.val, bs); err != nil {
		return err
	}
	r.testB, err = batches(r.test, bs)
	return err
}

func (r *run) subset(gs []*data.Graph) []*data.Graph {
	if r.cfg.Dataset.Subset > 0 && len(gs) > r.cfg.Dataset.Subset {
		return gs[:r.cfg.Dataset.Subset]
	}
	return gs
}

// carve moves a fixed random fraction of gs (the same for every seed) into a validation split.
func carve(gs []*data.Graph, frac float64) (train, val []*data.Graph) {
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
