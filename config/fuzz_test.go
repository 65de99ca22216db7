package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addFiles adds the named files under ../configs as seeds.
func addFiles(f *testing.F, names ...string) {
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("..", "configs", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzParse feeds arbitrary YAML to the run-config reader: errors naming the source, never a
// panic; a config it accepts writes out (YAML) to a file that loads back to the same config.
func FuzzParse(f *testing.F) {
	addFiles(f, "zinc/gatedgcn-adj-cls-r1.yaml", "neighborsmatch-2/gatedgcn-adj-cls-r1.yaml", "erdosrenyi/gatedgcn-lp-r5.yaml")
	f.Add([]byte("dataset:\n  name: zinc\n  r: 3\ntrain:\n  max_time: 90m\n  seeds: [1, 2]\n"))
	f.Add([]byte("dataset: {name: zinc, r: -1}\nmodel: {name: nope}\n"))
	f.Add([]byte("dataset: {name: cluster, encoding: rwse, rw_steps: 8, cls: true}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("- 1\n- 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		const src = "fuzz.yaml"
		r, err := Parse(src, b, nil)
		if err != nil {
			if !strings.Contains(err.Error(), src) && !strings.Contains(err.Error(), ":") {
				t.Fatalf("error names neither the file nor a key: %v", err)
			}
			return
		}
		y, err := r.YAML()
		if err != nil {
			t.Fatalf("accepted config does not write: %v", err)
		}
		back, err := Parse("config.yaml", y, nil)
		if err != nil {
			t.Fatalf("written config does not load: %v\n%s", err, y)
		}
		y2, err := back.YAML()
		if err != nil || !bytes.Equal(y, y2) {
			t.Fatalf("round trip changed the config (%v):\n%s\nvs\n%s", err, y, y2)
		}
	})
}

// FuzzParseGrid feeds arbitrary YAML to the grid reader: errors, never a panic; an accepted
// grid expands, or fails to, with an error.
func FuzzParseGrid(f *testing.F) {
	addFiles(f, "grids/table-aqsol.yaml", "grids/fig-neighborplot.yaml")
	f.Add([]byte("datasets: [zinc]\nmodels: [gatedgcn]\nencodings: [adj]\ncls: [true]\nr: 1-3\nseeds: [1]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := ParseGrid("fuzz-grid.yaml", b, nil)
		if err != nil {
			return
		}
		runs, err := g.Expand()
		if err != nil {
			return
		}
		if len(runs) > 100000 {
			t.Fatalf("%d runs from %d bytes", len(runs), len(b))
		}
	})
}
