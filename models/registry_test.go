package models

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

// TestRegistry: every folder under models/ holding Go code is registered under its name (the
// generated registered.go is up to date), and the registered models are exactly those with a
// spec (configs/defaults/model/<name>.yaml): a model is its package and its defaults file.
func TestRegistry(t *testing.T) {
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range ents {
		if !e.IsDir() || e.Name() == "testdata" || e.Name() == "internal" {
			continue
		}
		gos, _ := filepath.Glob(filepath.Join(e.Name(), "*.go"))
		if slices.ContainsFunc(gos, func(g string) bool { return !strings.HasSuffix(g, "_test.go") }) {
			dirs = append(dirs, e.Name())
		}
	}
	if !slices.Equal(dirs, Names()) {
		t.Errorf("model packages %v, registered %v: run go generate ./models", dirs, Names())
	}
	if !slices.Equal(config.ModelNames, Names()) {
		t.Errorf("models with a spec (configs/defaults/model/*.yaml) %v, registered %v: a model needs both", config.ModelNames, Names())
	}
	if _, _, err := Build(config.Model{Name: "gcnn"}, nn.IO{}); err == nil || !strings.Contains(err.Error(), "want "+strings.Join(Names()[:len(Names())-1], ", ")) {
		t.Errorf("an unknown model: %v", err)
	}
}

// TestEveryModelRefusesBadShapes: each registered model's constructor refuses a depth, width or
// dropout no network has (the config loader refuses them first; this is the constructor's own
// guard, nn.CheckShape), naming the model and what is wrong, and its build function refuses an
// empty bucket.
func TestEveryModelRefusesBadShapes(t *testing.T) {
	io := nn.IO{NodeVocab: 28, EdgeVocab: 4, Readout: nn.ReadoutMean, Loss: nn.LossL1, Out: 1}
	for _, name := range Names() {
		for _, c := range []struct {
			set  func(m *config.Model)
			want string
		}{
			{func(m *config.Model) { m.Layers = 0 }, "layers 0"},
			{func(m *config.Model) { m.Hidden = 3 }, "hidden 3"},
			{func(m *config.Model) { m.Dropout = 1 }, "dropout 1"},
		} {
			m := Small(t, name)
			c.set(&m)
			if _, _, err := Build(m, io); err == nil || !strings.HasPrefix(err.Error(), name+": ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s with %s: error %v, want one naming both", name, c.want, err)
			}
		}
		build, _, err := Build(Small(t, name), io)
		if err != nil {
			t.Fatal(err)
		}
		p, err := nn.NewParams(tensor.Float32, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := build(p, nn.Bucket{Nodes: 5, Edges: 0, Graphs: 1}, false); err == nil || !strings.Contains(err.Error(), "empty dimension") {
			t.Errorf("%s, a bucket without edges: error %v", name, err)
		}
	}
}
