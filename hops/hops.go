// Package hops chooses the rewiring radius by the paper's density rule (§"Selecting Positional
// Encoding and Hops Size"): compute the mean density of the rewired training graphs for
// r = 1, 2, … and take the first r whose mean density exceeds one half.
//
// The density of a rewired graph is |E'|/n² over its original nodes, self-loops included
// (rewire.Density); the mean runs over the graphs with nodes. The densities of a split are kept
// in the preprocessing cache folder (one small checksummed file per dataset, split, self-loop
// setting, generation seed and subset), so a second run reads them instead of rewiring again.
package hops

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/prep"
	"github.com/rewiregnn/rewiregnn/rewire"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// Threshold is the paper's density: the chosen r is the first whose mean density exceeds it.
const Threshold = 0.5

// MaxR is the largest radius the rule looks at before giving up.
const MaxR = 32

// Source names the graphs whose densities the rule reads: a split of a dataset as a run loads
// it (generation seed, subset, self-loops).
type Source struct {
	Dataset   string
	Split     string // "train" for the rule
	SelfLoops bool
	Seed      uint64 // generation seed of a generated dataset (data.DefaultGenSeed)
	Subset    int    // the first Subset graphs; 0: all
	DataDir   string // resolved data folder ("" for a generated dataset without one)
	CacheDir  string // preprocessing cache folder; "" keeps nothing
	Workers   int    // rewiring goroutines; 0: all cores
}

// Densities are the mean densities of a split for r = 1 … len(Mean).
type Densities struct {
	Dataset   string
	Split     string
	SelfLoops bool
	Seed      uint64
	Subset    int
	Version   int       // prep.PreprocessVersion when measured
	Graphs    int       // graphs of the split (those with nodes count in the means)
	Mean      []float64 // Mean[i]: mean density at r = i+1
	Edges     []int64   // Edges[i]: rewired edges of all graphs at r = i+1
	// Saturated: r = len(Mean) added no edge to any graph, so no larger r changes the graphs.
	Saturated bool
}

// At is the mean density at radius r (1-based), NaN when it was not measured.
func (d *Densities) At(r int) float64 {
	if r < 1 || r > len(d.Mean) {
		return math.NaN()
	}
	return d.Mean[r-1]
}

// Rule is the first measured r whose mean density exceeds Threshold; ok is false when none does.
func (d *Densities) Rule() (r int, ok bool) {
	for i, m := range d.Mean {
		if m > Threshold {
			return i + 1, true
		}
	}
	return 0, false
}

// Describe lists the measured densities, "r=1 0.141, r=2 0.273, …".
func (d *Densities) Describe() string {
	parts := make([]string, len(d.Mean))
	for i, m := range d.Mean {
		parts[i] = fmt.Sprintf("r=%d %.3f", i+1, m)
	}
	return strings.Join(parts, ", ")
}

// Suggest measures (or reads from the cache) the densities of s for r = 1, 2, … until one
// exceeds Threshold and returns that r. When the graphs stop growing (every graph already
// reaches all it can) or MaxR is passed without a density above one half, it returns an error
// that lists the densities: the rule does not apply, and dataset.r must be given. log (may be
// nil) says where the densities came from.
func Suggest(s Source, log io.Writer) (int, *Densities, error) {
	d, err := Measure(s, 0, log)
	if err != nil {
		return 0, nil, err
	}
	if r, ok := d.Rule(); ok {
		return r, d, nil
	}
	why := fmt.Sprintf("up to r = %d", len(d.Mean))
	if d.Saturated {
		why = fmt.Sprintf("at r = %d every graph reaches all it can, so no larger r changes it", len(d.Mean))
	}
	return 0, d, fmt.Errorf("%s %s: no r has a mean density above %g (%s; %s): give dataset.r a number",
		s.Dataset, s.Split, Threshold, d.Describe(), why)
}

// Measure returns the densities of s up to radius upTo, or, with upTo 0, up to the first r
// whose density exceeds Threshold (or saturation, or MaxR). Cached densities are read and
// extended; the file is rewritten when new radii were measured.
func Measure(s Source, upTo int, log io.Writer) (*Densities, error) {
	if log == nil {
		log = io.Discard
	}
	if upTo < 0 || upTo > MaxR {
		return nil, fmt.Errorf("hops: radius %d outside 1..%d", upTo, MaxR)
	}
	path := ""
	if s.CacheDir != "" {
		path = filepath.Join(s.CacheDir, s.fileName())
	}
	d := s.empty()
	if path != "" {
		cached, err := read(path, s)
		switch {
		case err == nil:
			d = cached
		case !errors.Is(err, os.ErrNotExist):
			fmt.Fprintf(log, "densities: %v; measuring again\n", err)
		}
	}
	done := func() bool {
		if d.Saturated || len(d.Mean) >= MaxR {
			return true
		}
		if upTo > 0 {
			return len(d.Mean) >= upTo
		}
		_, ok := d.Rule()
		return ok
	}
	if done() {
		if path != "" {
			fmt.Fprintf(log, "densities: read %s\n", path)
		}
		return d, nil
	}
	gs, spec, err := s.load()
	if err != nil {
		return nil, err
	}
	d.Graphs = len(gs)
	for !done() {
		r := len(d.Mean) + 1
		mean, edges, err := measure(gs, spec, s, r)
		if err != nil {
			return nil, err
		}
		if r > 1 && edges == d.Edges[r-2] {
			d.Saturated = true // r added nothing: r-1 already reaches everything
		}
		d.Mean = append(d.Mean, mean)
		d.Edges = append(d.Edges, edges)
	}
	if path != "" {
		if err := runfiles.WriteCheckpoint(path, d); err != nil {
			fmt.Fprintf(log, "densities: not kept: %v\n", err)
		} else {
			fmt.Fprintf(log, "densities: wrote %s\n", path)
		}
	}
	return d, nil
}

// measure rewires gs at radius r (no encoding, chunk by chunk: prep.Stream) and returns the mean
// density over the graphs with nodes and the total number of rewired edges. The sum runs in graph
// order, so the result does not depend on the number of workers.
func measure(gs []*data.Graph, spec *data.Spec, s Source, r int) (float64, int64, error) {
	key := prep.Key{Dataset: s.Dataset, Split: s.Split, R: r, Encoding: prep.EncNone, SelfLoops: s.SelfLoops, Seed: s.Seed}
	var sum float64
	var edges int64
	counted := 0
	err := prep.Stream(gs, spec, key, s.Workers, func(_ int, h *data.Graph) error {
		edges += int64(h.NumEdges())
		if d := rewire.Density(h); !math.IsNaN(d) {
			sum += d
			counted++
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	if counted == 0 {
		return 0, 0, fmt.Errorf("%s %s: no graph has nodes", s.Dataset, s.Split)
	}
	return sum / float64(counted), edges, nil
}

// load reads the split's graphs as a run does: the superpixel datasets through the cache of their
// raw graphs when one exists (their segmentation takes minutes), the others from the data folder
// or their generator.
func (s Source) load() ([]*data.Graph, *data.Spec, error) {
	raw := prep.Key{Dataset: s.Dataset, Split: s.Split, Encoding: prep.EncRaw, Seed: s.Seed}.KeyedBy(s.DataDir)
	if s.CacheDir != "" {
		if _, err := os.Stat(filepath.Join(s.CacheDir, raw.FileName())); err == nil {
			gs, _, err := prep.LoadDataset(s.CacheDir, s.DataDir, raw, s.Workers)
			if err != nil {
				return nil, nil, err
			}
			spec, err := data.OpenSpec(s.DataDir, s.Dataset)
			if err != nil {
				return nil, nil, err
			}
			if s.Subset > 0 && len(gs) > s.Subset {
				gs = gs[:s.Subset]
			}
			return gs, spec, nil
		}
	}
	gs, spec, err := data.LoadFirst(s.DataDir, s.Dataset, s.Split, s.Subset)
	if err != nil {
		return nil, nil, err
	}
	if len(gs) == 0 {
		return nil, nil, fmt.Errorf("%s %s: no graphs", s.Dataset, s.Split)
	}
	return gs, spec, nil
}

func (s Source) empty() *Densities {
	return &Densities{Dataset: s.Dataset, Split: s.Split, SelfLoops: s.SelfLoops, Seed: s.Seed, Subset: s.Subset, Version: prep.PreprocessVersion}
}

// fileName is the cache file of the source's densities.
func (s Source) fileName() string {
	// the public distribution's densities are kept apart from a substitute's, as its graphs are
	dataset := prep.Key{Dataset: s.Dataset}.KeyedBy(s.DataDir).DatasetID()
	name := fmt.Sprintf("density_%s_%s_selfloops-%t_seed-%d", dataset, s.Split, s.SelfLoops, s.Seed)
	if s.Subset > 0 {
		name += "_first-" + strconv.Itoa(s.Subset)
	}
	return name + "_v" + strconv.Itoa(prep.PreprocessVersion) + ".bin"
}

// read loads cached densities and checks that they are whole (checksum), of this source and
// preprocessing version, and consistent (one edge count per radius, densities in [0, 1] and
// non-decreasing).
func read(path string, s Source) (*Densities, error) {
	d := new(Densities)
	if err := runfiles.ReadCheckpoint(path, d); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("densities %s: %w", path, err)
	}
	want := s.empty()
	if d.Dataset != want.Dataset || d.Split != want.Split || d.SelfLoops != want.SelfLoops || d.Seed != want.Seed ||
		d.Subset != want.Subset || d.Version != want.Version {
		return nil, fmt.Errorf("densities %s: written for another source (%s %s, self-loops %t, seed %d, subset %d, version %d)",
			path, d.Dataset, d.Split, d.SelfLoops, d.Seed, d.Subset, d.Version)
	}
	if len(d.Edges) != len(d.Mean) || d.Graphs < 1 {
		return nil, fmt.Errorf("densities %s: %d densities, %d edge counts, %d graphs", path, len(d.Mean), len(d.Edges), d.Graphs)
	}
	for i, m := range d.Mean {
		if !(m >= 0 && m <= 1+1e-9) || (i > 0 && (m < d.Mean[i-1] || d.Edges[i] < d.Edges[i-1])) {
			return nil, fmt.Errorf("densities %s: r = %d: density %g after %g is not a density of a growing radius", path, i+1, m, d.At(i))
		}
	}
	return d, nil
}
