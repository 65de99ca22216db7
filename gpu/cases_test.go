package gpu

import (
	"fmt"
	"slices"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
	"github.com/rewiregnn/rewiregnn/models"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/prep"
)

// modelCase is one network on one dataset kind and encoding, from a resolved config.
type modelCase struct {
	name  string
	spec  *data.Spec
	key   prep.Key
	io    nn.IO
	build nn.BuildFunc
	cfg   *config.Run // the resolved config
}

// molecules stands in for OpenSpec of the molecule datasets, which reads a dictionary from the
// data folder: the op graph does not depend on the vocabulary size.
func specFor(t testing.TB, name string) *data.Spec {
	t.Helper()
	if f, ok := syntheticTasks[name]; ok {
		return f()
	}
	switch name {
	case "zinc", "aqsol":
		v, b := 28, 4
		if name == "aqsol" {
			v, b = 65, 5
		}
		return &data.Spec{Name: name, NodeVocab: v, EdgeVocab: b, EdgeConst: data.Row{Cat: []int32{0}},
			CLSNode: data.Row{Cat: []int32{int32(v)}}, Splits: []string{"train", "val", "test"}, Task: data.GraphRegression}
	}
	s, err := data.OpenSpec("", name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// syntheticTasks are task kinds no benchmark dataset of the paper has, on synthetic graphs
// (testgraphs): a case names one as its dataset and takes ZINC's config.
var syntheticTasks = map[string]func() *data.Spec{
	"multilabel":  func() *data.Spec { return testgraphs.MultiLabelSpec(5) },
	"multitarget": func() *data.Spec { return testgraphs.MultiTargetSpec(3) },
}

// encodingCase is a dataset with one preprocessing.
type encodingCase struct {
	dataset, enc string
	r            int
	cls          bool
	spLinear     bool
}

// encodings covers every task kind (graph regression with one and several targets, graph
// classification, multi-label graph classification, node and root classification), float and categorical features, mean/CLS/root/node readouts and every
// encoding.
var encodings = []encodingCase{
	{"zinc", "adj", 2, false, false},
	{"zinc", "adj", 2, true, false},
	{"aqsol", "short", 2, true, false},
	{"mnist", "short", 2, true, false},
	{"cifar10", "short", 1, false, true},
	{"cluster", "adj", 2, false, false},
	{"pattern", "lp", 1, true, false},
	{"neighborsmatch-2", "adj", 2, true, false},
	{"erdosrenyi", "lp", 1, false, false},
	{"cluster", "none", 2, false, false},
	{"zinc", "rwse", 2, true, false},
	{"multilabel", "adj", 2, false, false}, // the last two: synthetic tasks (stepCases)
	{"multitarget", "short", 1, true, false},
}

// modelSets are the networks: every registered model (models.Names) at a small size with its
// own defaults, and the transformer once per normalisation (pre_ln with GELU). A newly registered model is thus
// planned (TestEveryModelOpHasAKernel, TestPlanBuffers) and trained against the CPU
// (TestStepMatchesCPU) without a change here.
var modelSets = func() [][]string {
	var out [][]string
	for _, name := range models.Names() {
		base := []string{"model.name=" + name, "model.layers=2", "model.hidden=16"}
		switch name {
		case "sage": // both aggregators: the mean's weighted index, the max's segment max
			out = append(out, append(slices.Clone(base), "model.aggregator=max"), append(slices.Clone(base), "model.aggregator=mean"))
			continue
		case "gat":
			out = append(out, append(slices.Clone(base), "model.heads=4"))
			continue
		case "transformer":
		default:
			out = append(out, base)
			continue
		}
		for _, norm := range []string{"pre_bn", "post_bn", "pre_ln", "post_ln"} {
			set := append(slices.Clone(base), "model.heads=4", "model.norm="+norm)
			if norm == "pre_ln" { // GELU in the feed-forward blocks (ops.Gelu) once
				set = append(set, "model.ffn_activation=gelu")
			}
			out = append(out, set)
		}
	}
	return out
}()

// modelSet returns the first of modelSets of the model called name.
func modelSet(t testing.TB, name string) []string {
	for _, ms := range modelSets {
		if ms[0] == "model.name="+name {
			return slices.Clone(ms)
		}
	}
	t.Fatalf("no model %s among %v", name, models.Names())
	return nil
}

// newCase resolves a config for the encoding, the model sets and extra sets.
func newCase(t testing.TB, e encodingCase, sets ...string) modelCase {
	t.Helper()
	cfgName := e.dataset
	if _, ok := syntheticTasks[cfgName]; ok {
		cfgName = "zinc"
	}
	all := []string{"dataset.name=" + cfgName, "dataset.encoding=" + e.enc, fmt.Sprintf("dataset.r=%d", e.r), fmt.Sprintf("dataset.cls=%t", e.cls)}
	switch e.enc {
	case "lp":
		all = append(all, "dataset.q=2")
	case "rwse":
		all = append(all, "dataset.rw_steps=3")
	}
	if e.spLinear {
		all = append(all, "model.sp_encoder=linear")
	}
	all = append(all, sets...)
	r, err := config.Load("", all)
	if err != nil {
		t.Fatalf("config %v: %v", all, err)
	}
	spec := specFor(t, e.dataset)
	io, _, _, err := models.FromConfig(r, spec)
	if err != nil {
		t.Fatalf("model %v: %v", all, err)
	}
	// PNA's δ, which a run takes from its training split: any positive value serves a comparison
	// of the devices on the same network.
	io.AvgLogDeg = 1.1
	build, _, err := models.Build(r.Model, io)
	if err != nil {
		t.Fatalf("model %v: %v", all, err)
	}
	enc := e.enc
	if enc == "none" {
		enc = prep.EncNone
	}
	key := prep.Key{Dataset: e.dataset, Split: "train", R: e.r, Encoding: enc, CLS: e.cls, SelfLoops: true}
	switch enc {
	case "lp":
		key.Q = 2
	case "rwse":
		key.Steps = 3
	}
	model := r.Model.Name
	if r.Model.Str("relative") != "" {
		model += "+" + r.Model.Str("relative")
	}
	return modelCase{name: fmt.Sprintf("%s-%s-r%d-cls%t/%s/%s", e.dataset, e.enc, e.r, e.cls, model, r.Model.Str("norm")),
		spec: spec, key: key, io: io, build: build, cfg: r}
}

// synthetic returns k random connected graphs shaped like spec's, preprocessed as key says.
func synthetic(t testing.TB, spec *data.Spec, key prep.Key, k int, seed uint64) []*data.Graph {
	t.Helper()
	gs := testgraphs.Synthetic(spec, k, seed)
	out, err := prep.Build(gs, spec, key, 1)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// batchesOf cuts gs into batches of size.
func batchesOf(t testing.TB, gs []*data.Graph, size int) []*data.Batch {
	t.Helper()
	var out []*data.Batch
	for lo := 0; lo < len(gs); lo += size {
		b, err := data.NewBatch(gs[lo:min(lo+size, len(gs))])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}
