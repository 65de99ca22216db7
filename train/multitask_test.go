package train

import (
	"math"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testgraphs"
	"github.com/rewiregnn/rewiregnn/models"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/prep"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"gorgonia.org/tensor"
)

// syntheticTrainer builds a small GatedGCN (ZINC's config, the task of spec) on the CPU and
// the batches of 48 synthetic graphs of spec (testgraphs.Synthetic), 8 to a batch.
func syntheticTrainer(t *testing.T, spec *data.Spec) (*nn.Trainer, nn.IO, []*data.Batch) {
	t.Helper()
	c, err := config.Load("", []string{"dataset.name=zinc", "dataset.encoding=adj", "dataset.r=1",
		"model.name=gatedgcn", "model.layers=2", "model.hidden=16", "out=" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	io, build, _, err := models.FromConfig(c, spec)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := prep.Build(testgraphs.Synthetic(spec, 48, 5), spec, prep.Key{Dataset: spec.Name, Split: "train", R: 1, Encoding: "adj", SelfLoops: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	var bs []*data.Batch
	for lo := 0; lo < len(gs); lo += 8 {
		b, err := data.NewBatch(gs[lo : lo+8])
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	buckets, err := nn.MakeBuckets(gs, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := nn.NewParams(tensor.Float32, 3)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := nn.NewTrainer(p, build, buckets, 3e-3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr, io, bs
}

// evalMeter evaluates every batch with the run's meter, checking on each that the loss formed
// on the host (nn.Inputs.BatchLoss) is the net's own, bit for bit.
func evalMeter(t *testing.T, tr *nn.Trainer, io nn.IO, bs []*data.Batch) *Meter {
	t.Helper()
	m := NewMeter(metricFor(io), io.Out)
	net, err := tr.EvalNet(0)
	if err != nil {
		t.Fatal(err)
	}
	for i, bt := range bs {
		loss, pred, err := tr.Eval(bt)
		if err != nil {
			t.Fatal(err)
		}
		host, err := net.In.BatchLoss(bt, pred)
		if err != nil {
			t.Fatal(err)
		}
		if host != loss || math.IsNaN(loss) {
			t.Fatalf("batch %d: loss %v formed on the host, %v from the net", i, host, loss)
		}
		m.Add(loss, pred, bt)
	}
	return m
}

// TestSyntheticMultiTaskLearns trains GatedGCN for 40 epochs on the CPU on a multi-label task
// (5 labels, some missing: the BCE loss, scored by average precision) and on a regression with
// 3 targets (the L1 loss over every target, scored by MAE): the evaluation loss falls by a
// quarter or more, and the metric improves with it.
func TestSyntheticMultiTaskLearns(t *testing.T) {
	for _, c := range []struct {
		spec   *data.Spec
		metric string
		out    int
	}{
		{testgraphs.MultiLabelSpec(5), runfiles.MetricAP, 5},
		{testgraphs.MultiTargetSpec(3), runfiles.MetricMAE, 3},
	} {
		t.Run(c.spec.Name, func(t *testing.T) {
			tr, io, bs := syntheticTrainer(t, c.spec)
			if metricFor(io) != c.metric || io.Out != c.out {
				t.Fatalf("metric %s, %d outputs; want %s, %d", metricFor(io), io.Out, c.metric, c.out)
			}
			before := evalMeter(t, tr, io, bs)
			for range 40 {
				for _, bt := range bs {
					if _, err := tr.Step(bt); err != nil {
						t.Fatal(err)
					}
				}
			}
			after := evalMeter(t, tr, io, bs)
			t.Logf("loss %.4f → %.4f, %s %.4f → %.4f", before.Loss(), after.Loss(), c.metric, before.Value(), after.Value())
			if !(after.Loss() < 0.75*before.Loss()) {
				t.Errorf("loss %.4f → %.4f, want a fall by a quarter", before.Loss(), after.Loss())
			}
			better := after.Value() > before.Value()
			if runfiles.LowerIsBetter(c.metric) {
				better = after.Value() < before.Value()
			}
			if !better || math.IsNaN(after.Value()) {
				t.Errorf("%s %.4f → %.4f, want an improvement", c.metric, before.Value(), after.Value())
			}
		})
	}
}

// TestCheckAPSplit: a split average precision cannot score is refused with its name.
func TestCheckAPSplit(t *testing.T) {
	nan := float32(math.NaN())
	g := func(y ...float32) *data.Graph { return &data.Graph{Y: y} }
	if err := CheckAPSplit("val", []*data.Graph{g(1, nan), g(0, 1)}, 2); err != nil {
		t.Errorf("task 0 has a positive and a negative: %v", err)
	}
	for _, c := range []struct {
		gs   []*data.Graph
		want string
	}{
		{[]*data.Graph{g(1, nan), g(1, 1)}, "val split: average precision: none of the 2 tasks"},
		{[]*data.Graph{g(1, 0), g(1)}, "val split: graph 1 has 1 labels, the model predicts 2"},
		{[]*data.Graph{g(1, 0), g(0, 2)}, "label 2, want 0, 1 or NaN"},
	} {
		if err := CheckAPSplit("val", c.gs, 2); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
}

// TestMeterMultiTargetMAE: with several targets the MAE is the mean over every entry of the
// split (LRGB), not the mean of per-batch means; one target keeps the per-batch mean (ZINC).
// Batches of 2 and 1 graphs, 2 targets: absolute errors 1,1,1,1 then 4,0 give 8/6 over the
// split, where the mean of the batch means would be (1 + 2)/2 = 1.5.
func TestMeterMultiTargetMAE(t *testing.T) {
	b1 := &data.Batch{Y: []float32{0, 0, 0, 0}}
	b2 := &data.Batch{Y: []float32{1, 1}}
	m := NewMeter(runfiles.MetricMAE, 2)
	m.Add(0, []float64{1, -1, 1, -1}, b1)
	m.Add(0, []float64{5, 1}, b2)
	if got, want := m.Value(), 8.0/6; got != want {
		t.Errorf("MAE over 2 targets %v, want %v", got, want)
	}
	one := NewMeter(runfiles.MetricMAE, 1)
	one.Add(0, []float64{1, 3}, &data.Batch{Y: []float32{0, 0}})
	one.Add(0, []float64{0}, &data.Batch{Y: []float32{4}})
	if got, want := one.Value(), 3.0; got != want { // batch means 2 and 4
		t.Errorf("MAE of one target %v, want %v (the mean of batch means)", got, want)
	}
}
