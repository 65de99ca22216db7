package sweep

import (
	"github.com/rewiregnn/rewiregnn/config"
)

// LoadPlan reads a grid file (configs/grids/*.yaml) with config.LoadGrid, applies the -set
// overrides, expands it into runs and makes one job per (run, seed). out, when not empty,
// replaces every run's out folder; configDir (default <out>/.sweep/configs) is where the resolved
// configs are written for the trainer.
func LoadPlan(path string, sets []string, out, configDir string) (*Plan, error) {
	g, err := config.LoadGrid(path, sets)
	if err != nil {
		return nil, err
	}
	runs, err := g.Expand()
	if err != nil {
		return nil, err
	}
	p, err := NewPlan(g.Name, g.Table, runs, out, configDir)
	if err != nil {
		return nil, err
	}
	p.Notes = g.Notes
	return p, nil
}

// WriteConfig writes a resolved run config for the trainer (config.WriteFile: atomic, every key).
func WriteConfig(path string, run *config.Run) error { return config.WriteFile(path, run) }
