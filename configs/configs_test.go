package configs_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/configs"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/models"
)

// The tests run in configs/, so paths are relative to it.

// expected runs per grid: the settings of docs/protocol.md §"Experiment grid" (× seeds = jobs).
var gridCounts = map[string]struct {
	table         string
	configs, jobs int
}{
	"table-zinc.yaml":       {"table:zinc", 120, 480},
	"table-aqsol.yaml":      {"table:aqsol", 120, 480},
	"table-cluster.yaml":    {"table:cluster", 36, 144},
	"table-pattern.yaml":    {"table:pattern", 18, 72},
	"table-mnist.yaml":      {"table:mnist", 18, 72},
	"table-cifar10.yaml":    {"table:cifar10", 18, 72},
	"fig-neighborplot.yaml": {"fig:neighborplot", 45, 180},
	"fig-random-erdos.yaml": {"fig:random_erdos", 4, 16},
	"fig-comp-time1.yaml":   {"fig:comp_time1", 40, 40},
	"fig-comp-time2.yaml":   {"fig:comp_time2", 12, 12},
	"zinc-reduced.yaml":     {"table:zinc", 8, 16},
	"zinc-gpu.yaml":         {"table:zinc", 4, 16},
	"zinc-cpu.yaml":         {"table:zinc", 2, 4},
	"table-zincT.yaml":      {"table:zincT", 20, 80},
	"table-clusterT.yaml":   {"table:clusterT", 12, 48},

	"lrgb-peptides-func.yaml":           {"table:peptides-func", 16, 64},
	"lrgb-peptides-func-baselines.yaml": {"table:peptides-func", 2, 8},
	"lrgb-peptides-struct.yaml":         {"table:peptides-struct", 16, 64},

	"model-agnostic.yaml": {"table:results", 20, 80},

	"fidelity-monet-aqsol.yaml":           {"table:aqsol", 2, 4},
	"fidelity-monet-plain.yaml":           {"table:aqsol", 1, 2},
	"fidelity-gatedgcn-zinc.yaml":         {"table:zinc", 1, 2},
	"fidelity-gatedgcn-zinc-noloops.yaml": {"table:zinc", 1, 2},
	"fidelity-transformer-zinc.yaml":      {"table:zinc", 2, 4},
	"fidelity-transformer-gelu.yaml":      {"table:zinc", 1, 2},
	"fidelity-transformer-deep.yaml":      {"table:zinc", 2, 4},
	"fidelity-transformer-sum.yaml":       {"table:zinc", 1, 2},
}

func TestGridCounts(t *testing.T) {
	grids, err := config.LoadGrids("grids", nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, g := range grids {
		base := filepath.Base(g.Path)
		seen[base] = true
		want, ok := gridCounts[base]
		if !ok {
			t.Errorf("%s: no expected count in this test", g.Path)
			continue
		}
		runs, err := g.Expand()
		if err != nil {
			t.Fatal(err)
		}
		jobs := config.Jobs(runs)
		if g.Table != want.table || len(runs) != want.configs || len(jobs) != want.jobs {
			t.Errorf("%s: table %q, %d configs, %d jobs; want %q, %d, %d", g.Path, g.Table, len(runs), len(jobs), want.table, want.configs, want.jobs)
		}
		dirs := map[string]bool{}
		for _, j := range jobs {
			if dirs[j.Dir()] {
				t.Errorf("%s: run directory %s twice", g.Path, j.Dir())
			}
			dirs[j.Dir()] = true
		}
	}
	for name := range gridCounts {
		if !seen[name] {
			t.Errorf("grid %s missing", name)
		}
	}
}

// TestGridSettings spot-checks what the paper's grids resolve to.
func TestGridSettings(t *testing.T) {
	byName := map[string]*config.Run{}
	grids, err := config.LoadGrids("grids", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range grids {
		if g.Name == "zinc-reduced" || g.Name == "zinc-gpu" || g.Name == "zinc-cpu" || strings.HasPrefix(g.Name, "fig-comp-time") { // slices of table:zinc, timing grids
			continue
		}
		runs, err := g.Expand()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if byName[r.Name] != nil {
				t.Fatalf("run %s in two paper grids", r.Name)
			}
			byName[r.Name] = r
		}
	}
	check := func(name string, ok func(r *config.Run) bool) {
		t.Helper()
		r := byName[name]
		if r == nil {
			t.Fatalf("no run %s", name)
		}
		if !ok(r) {
			y, _ := r.YAML()
			t.Errorf("%s resolves to\n%s", name, y)
		}
	}
	check("zinc-gatedgcn-adj-cls-r4", func(r *config.Run) bool {
		return r.Dataset.R == 4 && r.Dataset.CLS && r.Model.Readout == "cls" && r.Train.BatchSize == 128 && len(r.Train.Seeds) == 4
	})
	check("zinc-transformer-lp-r10", func(r *config.Run) bool {
		return r.Model.Layers == 10 && r.Model.Hidden == 30 && r.Model.Int("heads") == 6 && r.Dataset.Q == 8
	})
	check("aqsol-monet-short-cls-r1", func(r *config.Run) bool { return r.Model.Int("kernels") == 3 && r.Model.EdgeFeat && r.Dataset.Q == 4 })
	check("cluster-transformer-lp-r3", func(r *config.Run) bool { return r.Train.BatchSize == 32 && r.Train.Patience == 5 && r.Dataset.Q == 20 })
	check("cluster-gatedgcn-adj-cls-r1", func(r *config.Run) bool { return r.Train.BatchSize == 48 && r.Model.Readout == "node" })
	check("pattern-gatedgcn-short-r2", func(r *config.Run) bool { return r.Train.BatchSize == 48 && r.Dataset.Q == 2 })
	check("neighborsmatch-5-gatedgcn-adj-r3", func(r *config.Run) bool {
		return r.Model.Layers == 6 && r.Train.BatchSize == 256 && r.Train.MaxTime.Hours() == 6 && r.Model.Readout == "root"
	})
	check("neighborsmatch-1-gatedgcn-adj-cls-r1", func(r *config.Run) bool { return r.Model.Layers == 2 && r.Dataset.CLS })
	check("cluster-transformer+learned-adj-cls-r2", func(r *config.Run) bool {
		return r.Model.Str("relative") == "learned" && r.Train.BatchSize == 32 && r.Out == "runs/table-clusterT"
	})
	check("zinc-transformer+learned-short-cls-r7", func(r *config.Run) bool {
		return r.Model.Str("relative") == "learned" && r.Dataset.Encoding == "short" && r.Dataset.CLS && r.Model.SPEncoder == "table"
	})
	check("erdosrenyi-gatedgcn-adj-r10", func(r *config.Run) bool {
		return r.Train.MaxEpochs == 250 && r.Train.MinLR == 0 && r.Train.Patience >= 250
	})
	// LRGB's protocol (configs/grids/lrgb-peptides-func*.yaml): the rewiring grid keeps the
	// self-loops, the baselines are the molecular graph as it is
	lrgb := func(r *config.Run) bool {
		return r.Model.Layers == 5 && r.Model.Hidden == 135 && r.Train.BatchSize == 128 && r.Train.LR == 0.001 &&
			r.Train.LRFactor == 0.5 && r.Train.Patience == 20 && r.Train.MinLR == 1e-5 && r.Train.MaxEpochs == 500 &&
			r.Train.Monitor == "val_loss" && r.Model.Dropout == 0 && r.Model.Residual && r.Model.BatchNorm
	}
	check("peptides-func-gatedgcn-adj-cls-r8", func(r *config.Run) bool { return lrgb(r) && r.Dataset.SelfLoops && r.Model.Readout == "cls" })
	check("peptides-func-gatedgcn-none-r1", func(r *config.Run) bool {
		return lrgb(r) && !r.Dataset.SelfLoops && r.Dataset.R == 1 && !r.Dataset.CLS && r.Model.Readout == "mean"
	})
	check("peptides-func-gatedgcn-rwse-r1", func(r *config.Run) bool {
		return lrgb(r) && !r.Dataset.SelfLoops && r.Dataset.R == 1 && r.Dataset.RWSteps == 16 && r.Model.Readout == "mean"
	})

	g, err := config.LoadGrid("grids/zinc-reduced.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Train.MaxTime.Minutes() != 10 || r.Out != "runs/zinc-reduced" || len(r.Train.Seeds) != 2 || r.Model.Name != "gatedgcn" || r.Dataset.Encoding != "adj" {
			y, _ := r.YAML()
			t.Errorf("zinc-reduced run:\n%s", y)
		}
	}
}

// TestEveryConfigLoads walks configs/: every grid expands, every other YAML file (the
// per-setting configs) loads and validates. defaults/ are layers, not configs: package
// config's tests load them for every dataset and model.
func TestEveryConfigLoads(t *testing.T) {
	n := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == "defaults" {
				return fs.SkipDir
			}
			return nil
		}
		if filepath.Ext(p) != ".yaml" {
			return nil
		}
		n++
		if strings.HasPrefix(p, "grids"+string(filepath.Separator)) {
			g, err := config.LoadGrid(p, nil)
			if err != nil {
				t.Error(err)
				return nil
			}
			if _, err := g.Expand(); err != nil {
				t.Error(err)
			}
			return nil
		}
		r, err := config.Load(p, nil)
		if err != nil {
			t.Error(err)
			return nil
		}
		if want := filepath.ToSlash(p); config.SettingPath(r) != want {
			t.Errorf("%s holds the setting of %s", p, config.SettingPath(r))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 379 {
		t.Errorf("only %d YAML files under configs/", n)
	}
}

// TestSettingFilesUpToDate checks that the committed per-setting files are exactly what
// go run ./cmd/configgen writes from the grids.
func TestSettingFilesUpToDate(t *testing.T) {
	grids, err := config.LoadGrids("grids", nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := config.SettingFiles(grids)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string][]byte{}
	err = filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (p == "grids" || p == "defaults") {
			return fs.SkipDir
		}
		if d.IsDir() || filepath.Ext(p) != ".yaml" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		have[filepath.ToSlash(p)] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var diffs []string
	for p, w := range want {
		if h, ok := have[p]; !ok {
			diffs = append(diffs, "missing "+p)
		} else if !bytes.Equal(h, w) {
			diffs = append(diffs, "differs "+p)
		}
	}
	for p := range have {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, "not from any grid "+p)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		if len(diffs) > 20 {
			diffs = append(diffs[:20], "…")
		}
		t.Errorf("per-setting configs out of date with the grids (run go run ./cmd/configgen):\n%s", strings.Join(diffs, "\n"))
	}
	if len(want) != 120+120+36+18+18+18+45+4+16+16 {
		t.Errorf("%d per-setting files, want 411", len(want))
	}
}

// TestDefaultsEmbedded checks the embedded tree is the folder on disk.
func TestDefaultsEmbedded(t *testing.T) {
	n := 0
	err := fs.WalkDir(configs.Defaults, "defaults", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		emb, _ := fs.ReadFile(configs.Defaults, p)
		disk, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(emb, disk) {
			t.Errorf("%s: embedded copy differs from the file", p)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("walking the embedded defaults: %v (%d files)", err, n)
	}
}

// TestPaperSettingsBuild checks that the network of every paper setting can be described by
// package models from the resolved config (the check a training run does first), and that
// the parameter counts stay near the paper's 100K budget (the LRGB peptides: LRGB's 500K).
func TestPaperSettingsBuild(t *testing.T) {
	grids, err := config.LoadGrids("grids", nil)
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]*data.Spec{}
	for _, g := range grids {
		runs, err := g.Expand()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			spec := specs[r.Dataset.Name]
			if spec == nil {
				dir := ""
				if r.Dataset.Name == "zinc" || r.Dataset.Name == "aqsol" {
					dir = testdata.Dir(t)
				}
				if spec, err = data.OpenSpec(dir, r.Dataset.Name); err != nil {
					t.Fatal(err)
				}
				specs[r.Dataset.Name] = spec
			}
			_, _, params, err := models.FromConfig(r, spec)
			if err != nil {
				t.Errorf("%s: %v", r.Name, err)
				continue
			}
			// 100K models; the adjacency encoding at r = 10 and the NeighborsMatch
			// key/value tables (up to 2^9+1 rows each) and r_p+1 layers add more
			lo, hi := 95_000, 125_000
			switch {
			case strings.HasPrefix(r.Dataset.Name, "neighborsmatch-"):
				lo, hi = 50_000, 400_000 // depth 9: 10 layers and two 513-row tables
			case strings.HasPrefix(r.Dataset.Name, "peptides-"):
				lo, hi = 475_000, 525_000 // LRGB's 500K budget, ±5%
			}
			if params < lo || params > hi {
				t.Errorf("%s: %d parameters, outside [%d, %d]", r.Name, params, lo, hi)
			}
		}
	}
}
