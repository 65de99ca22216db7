package registrytest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
	"github.com/rewiregnn/rewiregnn/models"
	"github.com/rewiregnn/rewiregnn/prep"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/train"
)

// degree is the dummy node encoding: each node's in-degree, one column.
type degree struct{}

func (degree) Encode(n int, src, dst []int32, width int, out []float32) error {
	clear(out[:n*width])
	for _, v := range dst {
		out[int(v)*width]++
	}
	return nil
}

// toySpec describes the dummy dataset: molecule-like categorical nodes and edges, one regression
// target per graph. Its task and splits are the registry's.
func toySpec(string, string) (*data.Spec, error) {
	return &data.Spec{Name: "toy", NodeVocab: 4, EdgeVocab: 3, EdgeConst: data.Row{Cat: []int32{0}},
		CLSNode: data.Row{Cat: []int32{4}}, LapQ: 2}, nil
}

// toyLoad generates a split of the dummy dataset: 24 small random graphs.
func toyLoad(_ string, spec *data.Spec, split string, seed uint64, _ int) ([]*data.Graph, error) {
	return testgraphs.Synthetic(spec, 24, seed+uint64(slices.Index(spec.Splits, split))), nil
}

func init() {
	data.RegisterEncoding(data.Encoding{Name: "deg", Title: "the degree encoding", Input: data.NodeVector, Cols: 1, Feed: "deg"})
	prep.RegisterNodeEncoder("deg", func() prep.NodeEncoder { return degree{} })
	data.RegisterDataset(data.Dataset{Name: "toy", Task: data.GraphRegression, Splits: []string{"train", "val", "test"}, Open: toySpec, Load: toyLoad,
		Defaults: "dataset:\n  q: 2\ntrain:\n  batch_size: 8\n  patience: 10\n  max_time: 1h\n"})
}

// toyRun is a small GatedGCN run on the dummy dataset with the dummy encoding, loaded as any run
// is: config.Load takes the dataset's defaults from its registration (data.Dataset.Defaults)
// and validates the dataset and the encoding by the registries.
func toyRun(t *testing.T) *config.Run {
	t.Helper()
	out := t.TempDir()
	r, err := config.Load("", []string{"dataset.name=toy", "dataset.encoding=deg", "model.name=gatedgcn", "model.layers=2", "model.hidden=16",
		"train.max_epochs=2", "dataset.r=2", "dataset.cls=true", "out=" + out, "dataset.cache=" + out + "/cache"})
	if err != nil {
		t.Fatalf("config refuses the registered dataset and encoding: %v", err)
	}
	if r.Train.BatchSize != 8 || r.Train.MaxTime.Hours() != 1 {
		t.Errorf("the registered defaults not read: batch %d, max_time %v", r.Train.BatchSize, r.Train.MaxTime)
	}
	return r
}

// TestRegisteredEncodingAndDataset: a registered encoding and dataset pass the config's
// validation and name its run, make their own cache key, give the model its input layer, and
// train (two epochs through train.Train, the cache written and read back) with nothing else
// edited.
func TestRegisteredEncodingAndDataset(t *testing.T) {
	r := toyRun(t)
	if name := r.RunName(); !strings.Contains(name, "toy") || !strings.Contains(name, "deg") {
		t.Errorf("run name %q lacks the dataset or the encoding", name)
	}
	key := prep.Key{Dataset: "toy", Split: "train", R: 2, Encoding: "deg", CLS: true, SelfLoops: true, Seed: data.DefaultGenSeed}.WithWidths(3, 5)
	if err := key.Validate(); err != nil || key.String() != fmt.Sprintf("toy/train/r2/deg/clstrue/q0/selfloopstrue/seed41/v%d", prep.PreprocessVersion) {
		t.Errorf("cache key %s: %v", key, err)
	}
	spec, err := data.OpenSpec("", "toy")
	if err != nil || spec.Task != data.GraphRegression || data.NeedsFiles("toy") {
		t.Fatalf("spec %+v: %v", spec, err)
	}
	io, _, params, err := models.FromConfig(r, spec)
	if err != nil {
		t.Fatal(err)
	}
	if io.NodeEnc != "deg" || io.NodePE != 1 || io.SignFlips() != 0 || io.InputSpec().NodePE != 1 {
		t.Errorf("input layer %+v", io)
	}
	res, err := train.Train(context.Background(), train.Options{Run: r, Seed: 41, Dir: r.Dir(41), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Epochs != 2 || res.Dataset != "toy" || res.Encoding != "deg" || res.Params != params {
		t.Errorf("result: %d epochs, dataset %s, encoding %s, %d parameters (want 2, toy, deg, %d)", res.Epochs, res.Dataset, res.Encoding, res.Params, params)
	}
	eps, err := runfiles.ReadMetrics(r.Dir(41) + "/" + runfiles.MetricsFile)
	if err != nil || len(eps) != 2 {
		t.Fatalf("%d epochs of metrics: %v", len(eps), err)
	}
	gs, st, err := prep.LoadDataset(r.Dataset.Cache, "", key, 1)
	if err != nil || !st.Hit || gs[0].NodePEDim != 1 || gs[0].NodePE[0] < 1 {
		t.Errorf("the training split's cache: %s, %v", st.Describe(), err)
	}
}
