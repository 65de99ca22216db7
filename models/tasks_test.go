package models

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/data/cache"
	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
)

// synthetic returns k small random graphs shaped like spec's: its node and edge feature kinds
// and widths, and a target of its task.
func synthetic(spec *data.Spec, k int, seed uint64) []*data.Graph {
	rng := rand.New(rand.NewPCG(seed, 7))
	gs := make([]*data.Graph, k)
	for i := range gs {
		n := 3 + rng.IntN(4)
		g := &data.Graph{N: n}
		for v := 1; v < n; v++ { // a random tree plus a chord, both directions
			u := int32(rng.IntN(v))
			g.Src, g.Dst = append(g.Src, u, int32(v)), append(g.Dst, int32(v), u)
		}
		if n > 3 && g.Src[2*(n-2)] != 0 { // a chord 0–(n−1) unless it is a tree edge
			g.Src, g.Dst = append(g.Src, 0, int32(n-1)), append(g.Dst, int32(n-1), 0)
		}
		if cd := len(spec.CLSNode.Cat); cd > 0 {
			g.Node = data.Features{CatDim: cd, Cat: make([]int32, n*cd)}
			for j := range g.Node.Cat {
				g.Node.Cat[j] = int32(rng.IntN(spec.NodeVocab))
			}
		} else {
			fd := len(spec.CLSNode.Float)
			g.Node = data.Features{FloatDim: fd, Float: make([]float32, n*fd)}
			for j := range g.Node.Float {
				g.Node.Float[j] = rng.Float32()
			}
		}
		m := len(g.Src)
		if spec.EdgeVocab > 0 {
			g.Edge = data.Features{CatDim: 1, Cat: make([]int32, m)}
			for j := 0; j < m; j += 2 {
				b := int32(1 + rng.IntN(spec.EdgeVocab-1))
				g.Edge.Cat[j], g.Edge.Cat[j+1] = b, b
			}
		} else {
			g.Edge = data.Features{FloatDim: 1, Float: make([]float32, m)}
			for j := range g.Edge.Float {
				g.Edge.Float[j] = rng.Float32()
			}
		}
		switch spec.Task {
		case data.GraphRegression:
			g.Y = []float32{float32(rng.NormFloat64())}
		case data.NodeClass:
			g.NodeLabel = make([]int32, n)
			for v := range g.NodeLabel {
				g.NodeLabel[v] = int32(rng.IntN(spec.Classes))
			}
		default:
			g.Label = int32(rng.IntN(spec.Classes))
		}
		gs[i] = g
	}
	return gs
}

// TestEveryTask checks, for every task kind, feature kind and encoding, each model's gradient
// against finite differences and its invariance to padding: float and categorical node and
// edge inputs, two categorical node columns, mean/CLS/root/node readouts, L1, cross-entropy and
// the SBM weighted cross-entropy.
func TestEveryTask(t *testing.T) {
	small := map[string]config.Model{
		"gatedgcn":    {Name: "gatedgcn", Layers: 2, Hidden: 8, BatchNorm: true, Residual: true},
		"monet":       {Name: "monet", Layers: 2, Hidden: 8, Kernels: 2, PseudoDim: 2, BatchNorm: true, Residual: true},
		"transformer": {Name: "transformer", Layers: 2, Hidden: 8, Heads: 2, Norm: "pre_bn"},
	}
	cases := []struct {
		dataset string
		enc     Encoding
	}{
		{"cluster", Encoding{Name: "adj", R: 2}},
		{"pattern", Encoding{Name: "lp", R: 1, Q: 2, CLS: true}},
		{"mnist", Encoding{Name: "short", R: 2, CLS: true}},
		{"cifar10", Encoding{Name: "short", R: 1, SPLinear: true}},
		{"neighborsmatch-2", Encoding{Name: "adj", R: 2, CLS: true}},
		// Erdős–Rényi nodes all have feature 0: without a node encoding every node state is
		// the same, and batch norm over equal rows (variance ≈ 0) is too ill-conditioned for
		// finite differences, so this case carries the Laplacian encoding.
		{"erdosrenyi", Encoding{Name: "lp", R: 1, Q: 3}},
		{"cluster", Encoding{Name: "none", R: 3}},
	}
	for _, c := range cases {
		spec, err := data.OpenSpec("", c.dataset)
		if err != nil {
			t.Fatal(err)
		}
		io, err := IO(spec, c.enc)
		if err != nil {
			t.Fatal(err)
		}
		key := cache.Key{Dataset: c.dataset, Split: "train", R: c.enc.R, Encoding: cacheEnc(c.enc.Name), CLS: c.enc.CLS, Q: c.enc.Q, SelfLoops: true}
		gs, err := cache.Build(synthetic(spec, 3, 5), spec, key, 1)
		if err != nil {
			t.Fatal(err)
		}
		bt, err := data.NewBatch(gs)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"gatedgcn", "monet", "transformer"} {
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
		return cache.EncNone
	}
	return name
}
