// Package homophily is the paper's homophily analysis of the node-classification benchmarks
// (Appendix "Homophily Score and Performance", table:cluster_homo and table:pattern_homo): the
// test graphs are cut into three equal parts by increasing edge homophily of their original
// graph, and a trained model's weighted accuracy is measured on each part, from the test
// predictions the trainer saved (runfiles.Predictions; train -predict). It is on the reporting
// side: it links no training code.
package homophily

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/metric"
	"github.com/rewiregnn/rewiregnn/report/paper"
	"github.com/rewiregnn/rewiregnn/report/results"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// Edge is the edge homophily of a graph (Zhu et al. 2020; the paper cites Ma et al. 2022): the
// fraction of its edges, self-loops left out, whose two ends have the same node label. It is NaN
// for a graph without such edges.
func Edge(g *data.Graph) float64 {
	same, all := 0, 0
	for i := range g.Src {
		u, v := g.Src[i], g.Dst[i]
		if u == v {
			continue
		}
		all++
		if g.NodeLabel[u] == g.NodeLabel[v] {
			same++
		}
	}
	if all == 0 {
		return math.NaN()
	}
	return float64(same) / float64(all)
}

// Buckets cuts graph indices 0…len(h)-1 into k parts by increasing h (ties in index order): part
// sizes differ by at most one, the larger parts first; within a part the indices keep the split's
// order.
func Buckets(h []float64, k int) ([][]int, error) {
	if k < 1 || k > len(h) {
		return nil, fmt.Errorf("homophily: %d buckets of %d graphs", k, len(h))
	}
	idx := make([]int, len(h))
	for i := range idx {
		idx[i] = i
		if math.IsNaN(h[i]) {
			return nil, fmt.Errorf("homophily: graph %d has no edges between two nodes", i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return h[idx[a]] < h[idx[b]] })
	out := make([][]int, k)
	at := 0
	for b := range out {
		n := len(h) / k
		if b < len(h)%k {
			n++
		}
		out[b] = append([]int(nil), idx[at:at+n]...)
		sort.Ints(out[b])
		at += n
	}
	return out, nil
}

// Accuracy is the benchmark's weighted accuracy of a model on some test graphs, as the test
// metric is defined: the graphs in the split's order, in batches of batchSize graphs, the
// per-batch balanced accuracy (metric.SBMAccuracy) over the batch's nodes, averaged over batches.
// With every test graph it is the run's test metric.
func Accuracy(p *runfiles.Predictions, graphs []int, batchSize int) float64 {
	var sum float64
	batches := 0
	for lo := 0; lo < len(graphs); lo += batchSize {
		var ys, ps []int32
		for _, g := range graphs[lo:min(lo+batchSize, len(graphs))] {
			ys = append(ys, p.Labels[g]...)
			ps = append(ps, p.Nodes[g]...)
		}
		sum += metric.SBMAccuracy(ys, ps)
		batches++
	}
	return sum / float64(max(batches, 1))
}

// Setting is one trained setting's row: the accuracy of each bucket, mean ± population std over
// its seeds.
type Setting struct {
	Name  string         `json:"name"`
	R     int            `json:"r"`
	Seeds []int64        `json:"seeds"`
	Acc   []results.Stat `json:"accuracy"` // per bucket, %
}

// Report is the analysis of one dataset's test split: the buckets' homophily (mean ± population
// std over their graphs) and one row per trained setting.
type Report struct {
	Dataset   string         `json:"dataset"`
	Graphs    int            `json:"graphs"`
	Buckets   [][]int        `json:"-"`
	Sizes     []int          `json:"sizes"`
	Nodes     []int          `json:"-"` // nodes of each test graph
	Homophily []results.Stat `json:"homophily"`
	Settings  []Setting      `json:"settings"`
}

// NewReport buckets the original test graphs of a dataset by edge homophily.
func NewReport(dataset string, test []*data.Graph, k int) (*Report, error) {
	h := make([]float64, len(test))
	for i, g := range test {
		if len(g.NodeLabel) != g.N {
			return nil, fmt.Errorf("%s test graph %d: no node labels", dataset, i)
		}
		h[i] = Edge(g)
	}
	nodes := make([]int, len(test))
	for i, g := range test {
		nodes[i] = g.N
	}
	bs, err := Buckets(h, k)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dataset, err)
	}
	rep := &Report{Dataset: dataset, Graphs: len(test), Buckets: bs, Nodes: nodes}
	for _, b := range bs {
		var xs []float64
		for _, g := range b {
			xs = append(xs, h[g])
		}
		rep.Sizes = append(rep.Sizes, len(b))
		rep.Homophily = append(rep.Homophily, results.MeanStd(xs))
	}
	return rep, nil
}

// Add scores the seeds of one setting (their predictions on this report's test split) per bucket.
func (rep *Report) Add(name string, r int, seeds []*runfiles.Predictions) error {
	s := Setting{Name: name, R: r}
	per := make([][]float64, len(rep.Buckets))
	for _, p := range seeds {
		if p.Dataset != rep.Dataset || len(p.Nodes) != rep.Graphs {
			return fmt.Errorf("%s seed %d: %d test graphs of %s, the report has %d of %s", name, p.Seed, len(p.Nodes), p.Dataset, rep.Graphs, rep.Dataset)
		}
		for g, n := range rep.Nodes {
			if len(p.Nodes[g]) != n {
				return fmt.Errorf("%s seed %d: test graph %d has %d predicted nodes, the split's graph %d", name, p.Seed, g, len(p.Nodes[g]), n)
			}
		}
		s.Seeds = append(s.Seeds, p.Seed)
		for b, graphs := range rep.Buckets {
			per[b] = append(per[b], Accuracy(p, graphs, p.BatchSize))
		}
	}
	for _, xs := range per {
		s.Acc = append(s.Acc, results.MeanStd(xs))
	}
	rep.Settings = append(rep.Settings, s)
	return nil
}

// Markdown is the report laid out like the paper's table: a column per bucket, the homophily
// score row, then a row per setting; the paper's value follows ours ("ours / paper") where its
// table (pt, may be nil) has the setting's r. The paper's rows are GatedGCN with the adjacency
// encoding without CLS.
func (rep *Report) Markdown(pt *paper.Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Homophily buckets of %s (%d test graphs)\n\n", rep.Dataset, rep.Graphs)
	b.WriteString("Test graphs in three equal parts by increasing edge homophily of the original graph; weighted accuracy (%) of each part, mean ± std over seeds, ours / the paper's.\n\n")
	b.WriteString("| | seeds |")
	names := []string{"low", "middle", "high"}
	for i := range rep.Buckets {
		name := fmt.Sprintf("bucket %d", i+1)
		if len(rep.Buckets) == len(names) {
			name = names[i]
		}
		fmt.Fprintf(&b, " %s (%d graphs) |", name, rep.Sizes[i])
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(rep.Buckets)) + "\n| homophily score | |")
	for i, h := range rep.Homophily {
		fmt.Fprintf(&b, " %.3f ± %.3f%s |", h.Mean, h.Std, paperNote(pt, names, i, len(rep.Buckets)))
	}
	b.WriteString("\n")
	for _, s := range rep.Settings {
		fmt.Fprintf(&b, "| %s | %d |", s.Name, len(s.Seeds))
		for i, a := range s.Acc {
			fmt.Fprintf(&b, " %.3f ± %.3f%s |", a.Mean, a.Std, paperCell(pt, s.R, names, i, len(rep.Buckets)))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func paperNote(pt *paper.Table, names []string, i, k int) string {
	if pt == nil || k != len(names) {
		return ""
	}
	if n, ok := pt.ColumnNotes[names[i]]; ok {
		return " / " + strings.TrimPrefix(n, "homophily score ")
	}
	return ""
}

func paperCell(pt *paper.Table, r int, names []string, i, k int) string {
	if pt == nil || k != len(names) {
		return ""
	}
	if row, ok := pt.RowR(r); ok {
		if c, ok := row.Cells[names[i]]; ok {
			return " / " + c.String()
		}
	}
	return ""
}
