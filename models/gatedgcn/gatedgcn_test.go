package gatedgcn

import (
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

// TestParamCountZINC: L(5d²+9d) + 28d + 4d + (d·⌊d/2⌋ + ⌊d/2⌋ + ⌊d/2⌋·⌊d/4⌋ + ⌊d/4⌋ + ⌊d/4⌋ + 1)
// = 100 520 + 1960 + 280 + 3115 = 105 875 for L = 4, d = 70 (docs/protocol.md
// §"Parameter budgets").
func TestParamCountZINC(t *testing.T) {
	cfg := ZINC()
	if got := cfg.Params(); got != 105875 {
		t.Fatalf("formula gives %d, want 105875", got)
	}
	if got := count(t, cfg); got != 105875 {
		t.Fatalf("built network has %d parameters, want 105875", got)
	}
}

func loadZINC(t testing.TB, n int) []*data.Graph { return testgraphs.ZINC(t, n) }

// TestParamCountWithoutBatchNorm: model.batch_norm false drops γ and β of h and e (4d a layer),
// and the formula the trainer checks the built network against says so.
func TestParamCountWithoutBatchNorm(t *testing.T) {
	cfg := ZINC()
	cfg.BatchNorm = false
	if got, want := count(t, cfg), 105875-4*4*70; got != want || cfg.Params() != want {
		t.Fatalf("built %d parameters, formula %d, want %d", got, cfg.Params(), want)
	}
}

// count builds cfg's network on a small bucket and counts its parameters.
func count(t *testing.T, cfg Config) int {
	t.Helper()
	p, err := nn.NewParams(tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	net, err := Build(cfg, p, nn.Bucket{Nodes: 40, Edges: 90, Graphs: 2}, false)
	if err != nil {
		t.Fatal(err)
	}
	net.Close()
	return p.Count()
}
