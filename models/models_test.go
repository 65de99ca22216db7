package models

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

var (
	ggcn  = config.Model{Name: "gatedgcn", Layers: 4, Hidden: 70, BatchNorm: true, Residual: true}
	mon   = config.Model{Name: "monet", Layers: 4, Hidden: 90, Own: map[string]any{"kernels": 3, "pseudo_dim": 2}, BatchNorm: true, Residual: true}
	trans = config.Model{Name: "transformer", Layers: 4, Hidden: 48, Own: map[string]any{"heads": 6, "norm": "pre_bn"}}
	// ZINC's Transformer (configs/defaults/override/zinc-transformer.yaml)
	transZ = config.Model{Name: "transformer", Layers: 10, Hidden: 30, Own: map[string]any{"heads": 6, "norm": "pre_bn"}}
)

// TestParamCounts checks the 100K configurations against docs/protocol.md §"Parameter budgets":
//
//	GatedGCN: 4(5d²+9d) = 100 520 (d = 70) + node input + edge input + MLPReadout(70→C)
//	          (2485 + 612 + 18C): ZINC 105 875, AQSOL 108 535, CLUSTER 104 355, PATTERN 104 003,
//	          MNIST 104 217, CIFAR10 104 357 (the last two are bgnn's leaderboard counts).
//	MoNet:    4(Kd² + 2Kp + 3d + 3p) = 98 352 (d = 90, K = 3, p = 2) + Emb(V, 90) + 5130:
//	          ZINC 106 002 (no edge embedding, bgnn's count); AQSOL with the paper's edge
//	          embedding and the adjacency encoding at r = 1: 109 332 + 5·90 + 2·90 + 4·(90·3+3).
//	Transformer: 4(11d² + 18d) = 104 832 (d = 48) + inputs + MLPReadout(48→C):
//	          ZINC 107 857, CLUSTER 106 818; ZINC's L = 10, d = 30: 10(11d² + 18d) = 104 400 +
//	          28d + 4d + MLPReadout(30→1) (585) = 105 945.
//
// Encodings add (k+1)·d for a Linear(k→d) and (r+2)·d for the shortest-path table; a CLS node
// adds one embedding row for categorical node inputs.
func TestParamCounts(t *testing.T) {
	dir := testdata.Dir(t)
	cases := []struct {
		dataset string
		model   config.Model
		enc     Encoding
		noEdge  bool
		want    int
	}{
		{"zinc", ggcn, Encoding{Name: "none"}, false, 105875},
		{"aqsol", ggcn, Encoding{Name: "none"}, false, 108535},
		{"cluster", ggcn, Encoding{Name: "none"}, false, 104355},
		{"pattern", ggcn, Encoding{Name: "none"}, false, 104003},
		{"mnist", ggcn, Encoding{Name: "none"}, false, 104217},
		{"cifar10", ggcn, Encoding{Name: "none"}, false, 104357},
		{"zinc", ggcn, Encoding{Name: "adj", R: 4, CLS: true}, false, 105875 + 70 + 5*70},
		{"zinc", ggcn, Encoding{Name: "short", R: 3}, false, 105875 + 5*70},
		{"zinc", ggcn, Encoding{Name: "lp", Q: 8, CLS: true}, false, 105875 + 70 + 9*70},
		{"mnist", ggcn, Encoding{Name: "lp", Q: 8, CLS: true}, false, 104217 + 9*70}, // float inputs: CLS adds no row
		{"zinc", ggcn, Encoding{Name: "rwse", RWSteps: 16, CLS: true}, false, 105875 + 70 + 17*70},
		{"zinc", trans, Encoding{Name: "rwse", RWSteps: 20}, false, 107857 + 21*48},
		{"zinc", mon, Encoding{Name: "none"}, true, 106002},
		{"aqsol", mon, Encoding{Name: "none"}, true, 109332},
		{"aqsol", mon, Encoding{Name: "adj", R: 1}, false, 109332 + 5*90 + 2*90 + 4*(90*3+3)},
		{"zinc", trans, Encoding{Name: "none"}, false, 107857},
		{"zinc", transZ, Encoding{Name: "none"}, false, 105945},
		{"zinc", transZ, Encoding{Name: "adj", R: 1}, false, 105945 + 2*30},
		{"cluster", trans, Encoding{Name: "none"}, false, 106818},
		{"neighborsmatch-2", ggcn, Encoding{Name: "adj", R: 2}, false, 0}, // checked below
	}
	for _, c := range cases {
		spec, err := data.OpenSpec(dir, c.dataset)
		if err != nil {
			t.Fatal(err)
		}
		io, err := IO(spec, c.enc)
		if err != nil {
			t.Fatal(err)
		}
		if c.noEdge {
			io.EdgeVocab, io.EdgeFloat = 0, 0
		}
		_, got, err := Build(c.model, io)
		if err != nil {
			t.Fatalf("%s %s: %v", c.dataset, c.model.Name, err)
		}
		want := c.want
		if c.dataset == "neighborsmatch-2" {
			// L = 4 leaves: key and value tables of 5 rows each, Linear(1→70) on the
			// constant edge feature, Linear(2→70) adjacency encoding, MLPReadout(70→5).
			want = 100520 + 2*5*70 + 2*70 + 3*70 + 2485 + 612 + 18*5
		}
		if got != want {
			t.Errorf("%s %s %+v: %d parameters, want %d", c.dataset, c.model.Name, c.enc, got, want)
		}
	}
}

func TestIOTasks(t *testing.T) {
	for _, c := range []struct {
		dataset, readout, loss string
		out                    int
	}{
		{"cluster", "node", "sbm_ce", 6}, {"pattern", "node", "sbm_ce", 2}, {"mnist", "cls", "ce", 10},
		{"neighborsmatch-3", "root", "ce", 9}, {"erdosrenyi", "cls", "ce", 100},
	} {
		spec, err := data.OpenSpec("", c.dataset)
		if err != nil {
			t.Fatal(err)
		}
		io, err := IO(spec, Encoding{Name: "adj", R: 2, CLS: true})
		if err != nil {
			t.Fatal(err)
		}
		if io.Readout != c.readout || io.Loss != c.loss || io.Out != c.out {
			t.Errorf("%s: readout %s, loss %s, out %d; want %s, %s, %d", c.dataset, io.Readout, io.Loss, io.Out, c.readout, c.loss, c.out)
		}
	}
	spec, _ := data.OpenSpec("", "cluster")
	if _, err := IO(spec, Encoding{Name: "adjj"}); err == nil {
		t.Error("an unknown encoding was accepted")
	}
	if _, err := IO(spec, Encoding{Name: "rwse"}); err == nil || !strings.Contains(err.Error(), "walks of at least 1 step") {
		t.Errorf("rwse without steps: %v", err)
	}
	if io, err := IO(spec, Encoding{Name: "rwse", RWSteps: 5, Q: 20}); err != nil || io.NodeEnc != "rwse" || io.NodePE != 5 || io.InputSpec().NodePE != 5 || io.InputSpec().LapSign {
		t.Errorf("rwse with k = 5 (and a q it ignores): %+v, %v", io, err)
	}
	io, _ := IO(spec, Encoding{Name: "none"})
	if _, _, err := Build(config.Model{Name: "gcnn"}, io); err == nil {
		t.Error("an unknown model was accepted")
	}
}

// TestPeptidesInputLayer: the LRGB peptides embed each OGB atom and bond column with its own
// table (the CLS node adds a row to every atom table; C_e's row is part of each bond table), and
// the parameter count is GatedGCN's formula with those tables:
// 4(5d²+9d) + d·Σ atom rows + d·Σ bond rows + (r+1)d (adjacency) + MLPReadout(d→out).
func TestPeptidesInputLayer(t *testing.T) {
	spec, err := data.OpenSpec("", "peptides-struct")
	if err != nil {
		t.Fatal(err)
	}
	atoms := []int{119, 5, 12, 12, 10, 6, 6, 2, 2} // Σ 174
	for _, cls := range []bool{false, true} {
		io, err := IO(spec, Encoding{Name: "adj", R: 3, CLS: cls})
		if err != nil {
			t.Fatal(err)
		}
		for c, v := range atoms {
			if cls {
				v++
			}
			if io.NodeVocabs[c] != v {
				t.Errorf("cls %v: atom tables %v", cls, io.NodeVocabs)
				break
			}
		}
		if !slices.Equal(io.EdgeVocabs, []int{6, 7, 3}) || io.NodeVocab != 0 || io.NodeCols != 0 || io.EdgeVocab != 0 {
			t.Errorf("cls %v: bond tables %v (shared forms %d %d %d)", cls, io.EdgeVocabs, io.NodeVocab, io.NodeCols, io.EdgeVocab)
		}
		_, got, err := Build(ggcn, io)
		if err != nil {
			t.Fatal(err)
		}
		d := 70
		rows := 174
		if cls {
			rows += 9
		}
		want := 4*(5*d*d+9*d) + rows*d + 16*d + 4*d + io.HeadParams(d)
		if got != want {
			t.Errorf("cls %v: %d parameters, want %d", cls, got, want)
		}
	}
	r := &config.Run{Dataset: config.Dataset{Name: "peptides-struct", Encoding: "none", R: 1}, Model: mon} // MoNet may leave the edges out
	r.Model.EdgeFeat = false
	io, _, _, err := FromConfig(r, spec)
	if err != nil {
		t.Fatal(err)
	}
	if io.EdgeVocabs != nil || io.HasEdgeInput() {
		t.Errorf("model.edge_feat off keeps the bond tables %v", io.EdgeVocabs)
	}
}

// TestParamFormulas checks every model's parameter formula (the count Build returns, which runs
// report before any net is built) against the parameters its built net holds: every registered
// model on every registered dataset, with every registered encoding, with and without the CLS
// node; and its variants (each value of its own string keys, each own bool key flipped, no batch
// norm, no residuals, no edge features) on every dataset with one encoding each, in turn. A
// formula that forgets a weight, or counts one the net lacks, fails here.
func TestParamFormulas(t *testing.T) {
	dir := testdata.Dir(t)
	encs := data.EncodingNames()
	for _, name := range Names() {
		checked := 0
		for v, m := range modelVariants(t, name) {
			for i, ds := range data.DatasetNames() {
				if strings.HasPrefix(ds, "neighborsmatch-") && ds != "neighborsmatch-2" {
					continue
				}
				spec, err := data.OpenSpec(dir, ds)
				if err != nil {
					t.Fatal(err)
				}
				for j, enc := range encs {
					if v > 0 && j != (i+v)%len(encs) { // a variant: one encoding per dataset
						continue
					}
					e := Encoding{Name: enc, R: 2, Q: 3, RWSteps: 4, CLS: (i+j)%2 == 0, SPLinear: (i+j)%4 == 2}
					checked += checkParamFormula(t, spec, e, m)
					if v == 0 {
						e.CLS = !e.CLS
						checked += checkParamFormula(t, spec, e, m)
					}
				}
			}
		}
		if checked < 100 {
			t.Errorf("%s: only %d settings built", name, checked)
		}
	}
}

// modelVariants is Small(name), and that model with each value of each of its own string keys,
// each own bool key flipped, and batch norm, residuals and edge features off.
func modelVariants(t *testing.T, name string) []config.Model {
	base := Small(t, name)
	out := []config.Model{base}
	with := func(f func(m *config.Model)) {
		m := base
		m.Own = maps.Clone(base.Own)
		f(&m)
		out = append(out, m)
	}
	with(func(m *config.Model) { m.BatchNorm = false })
	with(func(m *config.Model) { m.Residual = false })
	with(func(m *config.Model) { m.EdgeFeat = false })
	for _, k := range config.Spec(name).Keys {
		switch k.Type {
		case "string":
			for _, v := range k.OneOf {
				with(func(m *config.Model) { m.Own[k.Name] = v })
			}
		case "bool":
			with(func(m *config.Model) { m.Own[k.Name] = !base.Bool(k.Name) })
		}
	}
	return out
}

// checkParamFormula builds m on spec with enc and compares the count Build returns with the
// built net's parameters, and returns 1; a setting the model refuses is skipped (0): it has no
// count to check.
func checkParamFormula(t *testing.T, spec *data.Spec, enc Encoding, m config.Model) int {
	t.Helper()
	io, err := IO(spec, enc)
	if err != nil {
		t.Fatal(err)
	}
	if !m.EdgeFeat {
		io.EdgeVocab, io.EdgeVocabs, io.EdgeFloat = 0, nil, 0
	}
	build, want, err := Build(m, io)
	if err != nil {
		return 0
	}
	p, err := nn.NewParams(tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	net, err := build(p, nn.Bucket{Nodes: 24, Edges: 64, Graphs: 2}, true)
	if err != nil {
		return 0
	}
	net.Close()
	if got := p.Count(); got != want {
		t.Errorf("%s on %s, encoding %+v, own %v, batch norm %v, residual %v, edge features %v: the formula says %d parameters, the net holds %d",
			m.Name, spec.Name, enc, m.Own, m.BatchNorm, m.Residual, m.EdgeFeat, want, got)
	}
	return 1
}
