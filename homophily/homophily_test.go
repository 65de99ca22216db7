package homophily

import (
	"context"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/report/paper"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/train"
)

func TestMain(m *testing.M) { os.Exit(testdata.MainWithTempCache(m)) }

// TestEdge: a path 0–1–2–3 stored both ways, labels 0 0 1 1, and a self-loop on 0: the edges
// 0–1 and 2–3 join equal labels, 1–2 does not, the self-loop does not count: 4 of 6.
func TestEdge(t *testing.T) {
	g := &data.Graph{N: 4, Src: []int32{0, 0, 1, 1, 2, 2, 3}, Dst: []int32{0, 1, 0, 2, 1, 3, 2}, NodeLabel: []int32{0, 0, 1, 1}}
	if h := Edge(g); math.Abs(h-4.0/6) > 1e-15 {
		t.Errorf("homophily %v, want 2/3", h)
	}
	if h := Edge(&data.Graph{N: 1, Src: []int32{0}, Dst: []int32{0}, NodeLabel: []int32{0}}); !math.IsNaN(h) {
		t.Errorf("a graph with only a self-loop: %v, want NaN", h)
	}
}

// TestBuckets: seven graphs in three parts of 3, 2 and 2 by increasing homophily, ties in index
// order, each part in the split's order.
func TestBuckets(t *testing.T) {
	h := []float64{0.5, 0.1, 0.9, 0.1, 0.3, 0.7, 0.2}
	bs, err := Buckets(h, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{1, 3, 6}, {0, 4}, {2, 5}}
	for i := range want {
		if !slices.Equal(bs[i], want[i]) {
			t.Errorf("buckets %v, want %v", bs, want)
			break
		}
	}
	if _, err := Buckets(h, 8); err == nil {
		t.Error("8 buckets of 7 graphs accepted")
	}
	if _, err := Buckets([]float64{0.1, math.NaN()}, 1); err == nil || !strings.Contains(err.Error(), "graph 1") {
		t.Errorf("a graph without edges: %v", err)
	}
}

// TestTrainedModel trains a small GatedGCN on the first 40 CLUSTER graphs for two epochs and
// analyses it: with one bucket the accuracy is the run's own test metric (the trainer's
// evaluation, bit for bit); the three buckets' homophily matches the test's own computation on
// the original test graphs; the Markdown has the paper's values beside ours.
func TestTrainedModel(t *testing.T) {
	c, err := config.Load("", []string{"dataset.name=cluster", "dataset.encoding=adj", "dataset.r=1", "dataset.subset=40",
		"model.layers=2", "model.hidden=16", "train.batch_size=8", "train.max_epochs=2", "out=" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := train.Train(context.Background(), train.Options{Run: c, Seed: 41, Dir: c.Dir(41), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := train.Predict(c.Dir(41), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	test, _, err := data.LoadFirst("", "cluster", "test", 40)
	if err != nil {
		t.Fatal(err)
	}
	test = test[:40]
	if len(p.Nodes) != len(test) || p.BatchSize != 8 {
		t.Fatalf("%d predicted graphs (batch %d), %d test graphs", len(p.Nodes), p.BatchSize, len(test))
	}
	all := make([]int, len(test))
	for i := range all {
		all[i] = i
	}
	if got := Accuracy(p, all, p.BatchSize); got != res.TestMetric {
		t.Errorf("whole test split: accuracy %v, the run's test metric %v", got, res.TestMetric)
	}
	for g, ys := range p.Labels {
		if !slices.Equal(ys, test[g].NodeLabel) {
			t.Fatalf("test graph %d: predicted labels are not the split's", g)
		}
	}

	rep, err := NewReport("cluster", test, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Add(c.RunName(), 1, []*runfiles.Predictions{p, p}); err != nil {
		t.Fatal(err)
	}
	var prev float64
	for b, graphs := range rep.Buckets {
		var sum float64
		for _, g := range graphs {
			same, n := 0, 0
			for i := range test[g].Src {
				u, v := test[g].Src[i], test[g].Dst[i]
				if u != v {
					n++
					if test[g].NodeLabel[u] == test[g].NodeLabel[v] {
						same++
					}
				}
			}
			h := float64(same) / float64(n)
			if h < prev {
				t.Errorf("bucket %d: homophily %v below the previous bucket's %v", b, h, prev)
			}
			sum += h
		}
		for _, g := range graphs {
			prev = max(prev, Edge(test[g]))
		}
		if got, want := rep.Homophily[b].Mean, sum/float64(len(graphs)); math.Abs(got-want) > 1e-12 || len(graphs) < 13 {
			t.Errorf("bucket %d: mean homophily %v over %d graphs, want %v", b, got, len(graphs), want)
		}
		a := rep.Settings[0].Acc[b]
		if a.Mean != Accuracy(p, graphs, 8) || a.Std != 0 || a.N != 2 {
			t.Errorf("bucket %d: accuracy %+v", b, a)
		}
	}
	pf, err := paper.Load()
	if err != nil {
		t.Fatal(err)
	}
	pt, _ := pf.Table("table:cluster_homo")
	md := rep.Markdown(pt)
	for _, want := range []string{"| low (14 graphs) | middle (13 graphs) | high (13 graphs) |", " / 0.315±0.008 |", " / 71.494±0.619 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}
