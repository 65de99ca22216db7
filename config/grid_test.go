package config

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const smallGrid = `# a comment
name: small
table: "table:test"
datasets: [zinc]
models: [gatedgcn, transformer]
encodings: [adj]
cls: [false, true]
r: "1-2,4"
seeds: [41, 95]
extra:
  - models: [monet]
    datasets: [aqsol]
    encodings: [short]
    cls: [true]
    r: 3
overrides:
  train:
    max_time: 10m
`

func TestGridExpand(t *testing.T) {
	g, err := ParseGrid("grids/small.yaml", []byte(smallGrid), []string{"train.batch_size=16"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Name != "small" || g.Table != "table:test" || len(g.Products) != 2 {
		t.Fatalf("grid %+v", g)
	}
	runs, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range runs {
		names = append(names, r.Name)
		if r.Train.MaxTime != 10*time.Minute || r.Train.BatchSize != 16 || !reflect.DeepEqual(r.Train.Seeds, []int64{41, 95}) {
			t.Errorf("%s: max_time %v batch %d seeds %v", r.Name, r.Train.MaxTime, r.Train.BatchSize, r.Train.Seeds)
		}
		if r.Name != r.RunName() {
			t.Errorf("Name %q, RunName %q", r.Name, r.RunName())
		}
	}
	want := []string{
		"zinc-gatedgcn-adj-r1", "zinc-gatedgcn-adj-r2", "zinc-gatedgcn-adj-r4",
		"zinc-gatedgcn-adj-cls-r1", "zinc-gatedgcn-adj-cls-r2", "zinc-gatedgcn-adj-cls-r4",
		"zinc-transformer-adj-r1", "zinc-transformer-adj-r2", "zinc-transformer-adj-r4",
		"zinc-transformer-adj-cls-r1", "zinc-transformer-adj-cls-r2", "zinc-transformer-adj-cls-r4",
		"aqsol-monet-short-cls-r3",
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("expansion order\n got %v\nwant %v", names, want)
	}
	jobs := Jobs(runs)
	if len(jobs) != 26 || jobs[0].Seed != 41 || jobs[1].Seed != 95 || jobs[1].Run != runs[0] || jobs[2].Run != runs[1] {
		t.Errorf("jobs: %d, first %v/%v", len(jobs), jobs[0], jobs[1])
	}
	if jobs[1].Dir() != "runs/zinc-gatedgcn-adj-r1/seed95" {
		t.Errorf("job dir %s", jobs[1].Dir())
	}
	// a resolved run written out loads back to itself
	y, err := runs[12].YAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("config.yaml", y, nil)
	if err != nil || !reflect.DeepEqual(back, runs[12]) {
		t.Errorf("round trip of an expanded run: %v", err)
	}
}

func TestGridDefaultsSeedsAndName(t *testing.T) {
	g, err := ParseGrid("dir/my-grid.yaml", []byte("datasets: [pattern]\nmodels: [gatedgcn]\nencodings: [lp]\ncls: [false]\nr: 2\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if g.Name != "my-grid" || len(runs) != 1 || !reflect.DeepEqual(runs[0].Train.Seeds, PaperSeeds) || runs[0].Name != "pattern-gatedgcn-lp-r2" {
		t.Fatalf("grid %q runs %d seeds %v name %s", g.Name, len(runs), runs[0].Train.Seeds, runs[0].Name)
	}
}

// TestGridTag checks that a grid's tag ends every run name, so that a variant whose keys run names
// leave out (dataset.self_loops) gets names of its own, and that the run keeps its tagged name
// when its config is written and read back, as a resumed run reads it.
func TestGridTag(t *testing.T) {
	g, err := ParseGrid("g.yaml", []byte("datasets: [zinc]\nmodels: [gatedgcn]\nencodings: [none]\ncls: [false]\nr: 1-2\ntag: noloops\noverrides:\n  dataset: {self_loops: false}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range runs {
		names = append(names, r.Name)
		if r.Dataset.SelfLoops {
			t.Errorf("%s: self_loops true, want the override's false", r.Name)
		}
	}
	if want := []string{"zinc-gatedgcn-none-r1-noloops", "zinc-gatedgcn-none-r2-noloops"}; !slices.Equal(names, want) {
		t.Errorf("names %q, want %q", names, want)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := WriteFile(path, runs[0]); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if back.RunName() != names[0] {
		t.Errorf("read back as %q, want %q", back.RunName(), names[0])
	}
}

// TestGridNotes checks that a grid's notes are read in file order with their lines.
func TestGridNotes(t *testing.T) {
	g, err := ParseGrid("g.yaml", []byte("datasets: [zinc]\nmodels: [gatedgcn]\nencodings: [adj]\ncls: [false]\nr: 1-2\nnotes:\n  zinc-gatedgcn-adj-r2: \" second \"\n  zinc-gatedgcn-adj-r1: first\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Expand(); err != nil {
		t.Fatal(err)
	}
	want := []Note{{"zinc-gatedgcn-adj-r2", "second", 7}, {"zinc-gatedgcn-adj-r1", "first", 8}}
	if !reflect.DeepEqual(g.Notes, want) {
		t.Errorf("notes %+v, want %+v", g.Notes, want)
	}
}

func TestGridRejected(t *testing.T) {
	base := "datasets: [zinc]\nmodels: [gatedgcn]\nencodings: [adj]\ncls: [false]\nr: 1-2\n"
	cases := []struct {
		name, grid string
		sets       []string
		env        map[string]string
		want       []string
		atExpand   bool
	}{
		{"unknown key", base + "modles: [monet]\n", nil, nil, []string{"g.yaml:6:", `unknown key "modles"`}, false},
		{"singular", "dataset: zinc\n" + base[17:], nil, nil, []string{"g.yaml:1:", `did you mean "datasets"`}, false},
		{"missing key", "datasets: [zinc]\nmodels: [gatedgcn]\ncls: [false]\nr: 1\n", nil, nil, []string{`missing key "encodings"`}, false},
		{"unknown dataset", strings.Replace(base, "[zinc]", "[zinc, zync]", 1), nil, nil, []string{"g.yaml:1:", `unknown dataset "zync"`}, false},
		{"unknown model", strings.Replace(base, "[gatedgcn]", "[gcnn]", 1), nil, nil, []string{"g.yaml:2:", `unknown model "gcnn"`}, false},
		{"unknown encoding", strings.Replace(base, "[adj]", "[adjj]", 1), nil, nil, []string{"g.yaml:3:", `unknown encoding "adjj"`}, false},
		{"bad cls", strings.Replace(base, "[false]", "[no, maybe]", 1), nil, nil, []string{"g.yaml:4:", `"no" is not true or false`}, false},
		{"r 0", strings.Replace(base, "1-2", "0-2", 1), nil, nil, []string{"g.yaml:5:", `r: "0-2" is not a radius`}, false},
		{"r backwards", strings.Replace(base, "1-2", "3-1", 1), nil, nil, []string{`r: "3-1"`}, false},
		{"r repeated", strings.Replace(base, "1-2", "[1, 2, 1]", 1), nil, nil, []string{"radius 1 is listed twice"}, false},
		{"repeat", strings.Replace(base, "[adj]", "[adj, adj]", 1), nil, nil, []string{`encodings: "adj" is listed twice`}, false},
		{"empty list", strings.Replace(base, "[adj]", "[]", 1), nil, nil, []string{"encodings: empty list"}, false},
		{"override typo", base + "overrides:\n  train:\n    max_tme: 10m\n", nil, nil, []string{"g.yaml:8:", `unknown key "overrides.train.max_tme" (did you mean "overrides.train.max_time"?)`}, false},
		{"override type", base + "overrides:\n  train:\n    max_time: soon\n", nil, nil, []string{"g.yaml:8:", `overrides.train.max_time: "soon" is not a duration`}, false},
		{"override axis", base + "overrides:\n  dataset:\n    r: 3\n", nil, nil, []string{"g.yaml:8:", "overrides.dataset.r is chosen by the grid"}, false},
		{"override seeds", base + "overrides:\n  train: {seeds: [1]}\n", nil, nil, []string{"overrides.train.seeds is chosen by the grid"}, false},
		{"override value", base + "overrides:\n  train:\n    batch_size: 0\n", nil, nil, []string{"g.yaml:8:", "train.batch_size: want at least 1"}, true},
		{"set axis", base, []string{"dataset.r=3"}, nil, []string{"-set dataset.r=3: grid g.yaml: dataset.r is chosen by the grid"}, false},
		{"set typo", base, []string{"train.batchsize=3"}, nil, []string{`unknown key "train.batchsize"`}, false},
		{"env axis", base, nil, map[string]string{"REWIREGNN_MODEL_NAME": "monet"}, []string{"$REWIREGNN_MODEL_NAME: grid g.yaml: model.name is chosen by the grid"}, false},
		{"seeds empty", base + "seeds: []\n", nil, nil, []string{"g.yaml:6:", "train.seeds: empty"}, true},
		{"seeds repeated", base + "seeds: [1, 1]\n", nil, nil, []string{"g.yaml:6:", "seed 1 is listed twice"}, true},
		{"same run twice", base + "extra:\n  - r: 2\n", nil, nil, []string{"g.yaml:7: run zinc-gatedgcn-adj-r2 is already in the product on line 1"}, true},
		{"extra unknown key", base + "extra:\n  - seeds: [1]\n", nil, nil, []string{"g.yaml:7:", `extra: unknown key "seeds"`}, false},
		{"key twice", base + "seeds: [1]\nSeeds: [2]\n", nil, nil, []string{"g.yaml:7:", `key "seeds" given twice (first on line 6)`}, false},
		{"extra key twice", base + "extra:\n  - r: 3\n    r: 4\n", nil, nil, []string{"g.yaml:8:", `extra: key "r" given twice (first on line 7)`}, false},
		{"impossible run", strings.Replace(base, "[gatedgcn]", "[transformer]", 1) + "overrides:\n  model: {hidden: 50}\n", nil, nil, []string{"run zinc-transformer-adj-r1", "model.hidden: must be divisible"}, true},
		{"syntax", base + "overrides: [\n", nil, nil, []string{"g.yaml:", "YAML syntax error"}, false},
		{"note of no run", base + "notes:\n  zinc-gatedgcn-adj-r3: \"x\"\n", nil, nil, []string{"g.yaml:7: notes.zinc-gatedgcn-adj-r3: the grid has no such run"}, true},
		{"note empty", base + "notes:\n  zinc-gatedgcn-adj-r1: \"\"\n", nil, nil, []string{"g.yaml:7:", "notes.zinc-gatedgcn-adj-r1: want the footnote's text"}, false},
		{"note twice", base + "notes:\n  zinc-gatedgcn-adj-r1: a\n  zinc-gatedgcn-adj-r1: b\n", nil, nil, []string{"g.yaml:8:", "given twice (first on line 7)"}, false},
		{"notes not a mapping", base + "notes: [a]\n", nil, nil, []string{"g.yaml:6:", "notes: want a mapping"}, false},
		{"bad tag", base + "tag: No-Loops\n", nil, nil, []string{"g.yaml:6:", "tag: want lower-case letters and digits", `"No-Loops"`}, false},
		{"empty tag", base + "tag: \"\"\n", nil, nil, []string{"g.yaml:6:", "tag: want lower-case letters and digits"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			g, err := ParseGrid("g.yaml", []byte(c.grid), c.sets)
			if err == nil {
				if !c.atExpand {
					t.Errorf("ParseGrid accepted the grid")
				}
				_, err = g.Expand()
			} else if c.atExpand {
				t.Errorf("ParseGrid failed (%v), want the error from Expand", err)
			}
			if err == nil {
				t.Fatalf("accepted, want an error containing %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestSettingFilesConflict(t *testing.T) {
	a, err := ParseGrid("a.yaml", []byte("datasets: [zinc]\nmodels: [gatedgcn]\nencodings: [adj]\ncls: [false]\nr: 1\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseGrid("b.yaml", []byte("datasets: [zinc]\nmodels: [gatedgcn]\nencodings: [adj]\ncls: [false]\nr: 1\nseeds: [1]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	files, err := SettingFiles([]*Grid{a, a})
	if err != nil || len(files) != 1 {
		t.Fatalf("the same setting twice: %v, %d files", err, len(files))
	}
	if _, err := SettingFiles([]*Grid{a, b}); err == nil || !strings.Contains(err.Error(), "differently") {
		t.Fatalf("conflicting settings: %v", err)
	}
	files, _ = SettingFiles([]*Grid{b})
	f := string(files["zinc/gatedgcn-adj-r1.yaml"])
	if !strings.Contains(f, "seeds: [1]") || !strings.HasPrefix(f, GeneratedHeader) {
		t.Errorf("file:\n%s", f)
	}
	r, err := Parse("zinc/gatedgcn-adj-r1.yaml", []byte(f), nil)
	if err != nil || !reflect.DeepEqual(r.Train.Seeds, []int64{1}) {
		t.Fatalf("the generated file does not load: %v", err)
	}
}
