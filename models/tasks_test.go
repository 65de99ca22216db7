package models

import (
	"fmt"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/prep"
)

// TestEveryTask checks, for every task kind, feature kind and encoding, each model's gradient
// against finite differences and its invariance to padding: float and categorical node and
// edge inputs, two categorical node columns, a table per node and edge column, mean/CLS/root/node
// readouts, L1, cross-entropy and the SBM weighted cross-entropy.
func TestEveryTask(t *testing.T) {
	small := map[string]config.Model{}
	for _, name := range Names() {
		small[name] = Small(t, name)
	}
	// per-column vocabularies, as the LRGB peptides' OGB atom and bond features have
	columns := &data.Spec{Name: "columns", NodeVocabs: []int{5, 3, 2}, EdgeVocabs: []int{4, 3},
		CLSNode: data.Row{Cat: []int32{5, 3, 2}}, EdgeConst: data.Row{Cat: []int32{3, 2}},
		Splits: []string{"train"}, Task: data.GraphRegression}
	cases := []struct {
		dataset string
		enc     Encoding
		spec    *data.Spec // nil: the registry's
	}{
		{"cluster", Encoding{Name: "adj", R: 2}, nil},
		{"pattern", Encoding{Name: "lp", R: 1, Q: 2, CLS: true}, nil},
		{"mnist", Encoding{Name: "short", R: 2, CLS: true}, nil},
		{"cifar10", Encoding{Name: "short", R: 1, SPLinear: true}, nil},
		{"neighborsmatch-2", Encoding{Name: "adj", R: 2, CLS: true}, nil},
		// Erdős–Rényi nodes all have feature 0: without a node encoding every node state is
		// the same, and batch norm over equal rows (variance ≈ 0) is too ill-conditioned for
		// finite differences, so this case carries the Laplacian encoding.
		{"erdosrenyi", Encoding{Name: "lp", R: 1, Q: 3}, nil},
		{"cluster", Encoding{Name: "none", R: 3}, nil},
		{"columns", Encoding{Name: "adj", R: 2, CLS: true}, columns},
		// the random-walk encoding on directed graphs with float node features and a CLS node
		{"mnist", Encoding{Name: "rwse", R: 2, RWSteps: 4, CLS: true}, nil},
	}
	for _, c := range cases {
		spec := c.spec
		if spec == nil {
			var err error
			if spec, err = data.OpenSpec("", c.dataset); err != nil {
				t.Fatal(err)
			}
		}
		io, err := IO(spec, c.enc)
		if err != nil {
			t.Fatal(err)
		}
		key := prep.Key{Dataset: c.dataset, Split: "train", R: c.enc.R, Encoding: cacheEnc(c.enc.Name), CLS: c.enc.CLS, Q: c.enc.Q, Steps: c.enc.RWSteps, SelfLoops: true}
		gs, err := prep.Build(testgraphs.Synthetic(spec, 3, 5), spec, key, 1)
		if err != nil {
			t.Fatal(err)
		}
		bt, err := data.NewBatch(gs)
		if err != nil {
			t.Fatal(err)
		}
		io.AvgLogDeg = nn.AvgLogDegree(gs) // PNA's δ, as the trainer sets it
		for _, name := range Names() {
			build, _, err := Build(small[name], io)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(fmt.Sprintf("%s/%s/%s", c.dataset, c.enc.Name, name), func(t *testing.T) {
				testgraphs.GradCheck(t, build, bt, 12, 1e-5)
				testgraphs.BucketsAgree(t, build, bt)
			})
		}
	}
}

// cacheEnc maps an encoding name to the cache's.
func cacheEnc(name string) string {
	if name == "none" {
		return prep.EncNone
	}
	return name
}

// Small is the model called name at its defaults (its own keys' included) with 2 layers of
// width 12: every registered model in a size that finite differences check quickly. A model
// whose default heads do not divide 12 (GAT's 8) gets 4 heads; the Transformer keeps its 6.
func Small(t *testing.T, name string) config.Model {
	t.Helper()
	set := []string{"dataset.name=zinc", "model.name=" + name, "model.layers=2"}
	r, err := config.Load("", set)
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Model.Int("heads"); h > 0 && 12%h != 0 {
		set = append(set, "model.heads=4")
	}
	r, err = config.Load("", append(set, "model.hidden=12"))
	if err != nil {
		t.Fatal(err)
	}
	return r.Model
}
