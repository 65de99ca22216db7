package models

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/nn"
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
