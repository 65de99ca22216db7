// Command stats prints preprocessing statistics of a dataset for a list of hop radii: mean
// density of the rewired graphs, mean nodes and edges after rewiring, time per graph for
// rewiring with the shortest-path and adjacency encodings and for the Laplacian and random-walk
// node encodings (with the random-walk encoding's size per graph), and whether every graph is
// recovered exactly from its encodings (the lossless property); beside
// them the paper's density for that r, and above them which files were read (the public
// distribution, a substitute, or computed superpixels) and the original graphs' mean sizes
// beside the paper's benchmark table.
//
//	go run ./cmd/stats -data ../shared/data -dataset zinc -split test -r 1-10 [-q 8] [-rw-steps 16] [-cls] [-json]
//
// With -suggest it applies the paper's rule for choosing r instead (what dataset.r: auto does):
// the mean densities of the training split for r = 1, 2, … and the first r whose mean density
// exceeds 0.5. The densities are kept in the preprocessing cache (-cache).
//
//	go run ./cmd/stats -dataset cluster -suggest [-json] [-cache DIR|off]
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/hops"
	"github.com/rewiregnn/rewiregnn/posenc"
	"github.com/rewiregnn/rewiregnn/report/paper"
	"github.com/rewiregnn/rewiregnn/rewire"
	"github.com/rewiregnn/rewiregnn/train"
)

// Row is one line of the statistics: one hop radius. Field names are a stable interface.
type Row struct {
	Dataset          string  `json:"dataset"`
	Split            string  `json:"split"`
	R                int     `json:"r"`
	CLS              bool    `json:"cls"`
	Q                int     `json:"q"`
	Graphs           int     `json:"graphs"`
	Density          float64 `json:"density"`
	NodesMean        float64 `json:"nodes_mean"`
	EdgesMean        float64 `json:"edges_mean"`
	RewireUsPerGraph float64 `json:"rewire_us_per_graph"`
	LapPEUsPerGraph  float64 `json:"lappe_us_per_graph"`
	// The random-walk encoding with RWSteps steps: its time per graph and the bytes it adds
	// to a graph (float32, one row of RWSteps per node, the CLS node's included), on average.
	RWSteps           int     `json:"rw_steps"`
	RWSEUsPerGraph    float64 `json:"rwse_us_per_graph"`
	RWSEBytesPerGraph float64 `json:"rwse_bytes_per_graph"`
	Lossless          bool    `json:"lossless"`
	LosslessFailures  int     `json:"lossless_failures"`
	PaperDensity      string  `json:"paper_density,omitempty"` // the paper's table, as printed (".34", ">.99")
	Source            string  `json:"source"`                  // the files read (data.SourceOf)
}

// paperSizes are the paper's benchmark table (all splits): mean nodes and mean directed edges of
// the original graphs.
var paperSizes = map[string][2]float64{
	"pattern": {117.47, 4749.15}, "cluster": {117.20, 4301.72}, "mnist": {70.57, 564.53},
	"cifar10": {117.63, 941.07}, "zinc": {23.16, 49.83}, "aqsol": {17.57, 35.76},
}

// lrgbSizes are LRGB's dataset table for the datasets beyond the paper (Dwivedi et al. 2022;
// PyG's LRGBDataset docs): mean nodes and mean directed edges.
var lrgbSizes = map[string][2]float64{"peptides-func": {150.94, 307.30}, "peptides-struct": {150.94, 307.30}}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "stats:", err)
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("stats", flag.ContinueOnError)
	dir := fs.String("data", "", "benchmark data folder (default $"+data.EnvDataDir+", else "+data.DefaultDataDir+")")
	dataset := fs.String("dataset", "zinc", "dataset name ("+strings.Join(data.Names(), ", ")+")")
	split := fs.String("split", "test", "split: train, val, test, or all")
	radii := fs.String("r", "1-10", "hop radii: a range (1-10), a list (1,2,4) or both (1-3,6)")
	q := fs.Int("q", 0, "Laplacian eigenvectors (default: the dataset's value)")
	steps := fs.Int("rw-steps", config.DefaultRWSteps, "random-walk steps k of the rwse encoding")
	cls := fs.Bool("cls", false, "add the CLS node")
	selfLoops := fs.Bool("self-loops", true, "add a self-loop to every node (the paper's setting)")
	asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
	repeat := fs.Int("repeat", 3, "timing passes per radius; the fastest is reported")
	suggest := fs.Bool("suggest", false, "apply the paper's rule for r (dataset.r: auto): the first r whose mean density over the training split exceeds 0.5")
	cache := fs.String("cache", train.CacheAuto, "with -suggest: folder of the cached densities, auto (the preprocessing cache) or off")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *suggest {
		return suggestRadius(stdout, *dir, *dataset, *cache, *selfLoops, *asJSON)
	}
	rs, err := rewire.ParseRadii(*radii)
	if err != nil {
		return fmt.Errorf("-r: %w", err)
	}
	if *repeat < 1 {
		return fmt.Errorf("-repeat %d: must be at least 1", *repeat)
	}
	root, err := data.ResolveDataDir(*dir)
	if err != nil {
		return err
	}
	graphs, spec, err := load(root, *dataset, *split)
	if err != nil {
		return err
	}
	if *q == 0 {
		*q = spec.LapQ
	}
	if *q < 1 {
		return fmt.Errorf("-q %d: needs at least one eigenvector", *q)
	}
	if *steps < 1 || *steps > config.MaxRWSteps {
		return fmt.Errorf("-rw-steps %d: needs at least one step and at most %d", *steps, config.MaxRWSteps)
	}
	// Timings are per graph on one core.
	runtime.GOMAXPROCS(1)
	lapUs, err := timeLaplacian(graphs, *q, *repeat)
	if err != nil {
		return err
	}
	rwUs, err := timeRandomWalk(graphs, *steps, *repeat)
	if err != nil {
		return err
	}
	source := data.SourceOf(root, spec.Name)
	if !*asJSON {
		printOriginal(stdout, root, spec.Name, *split, graphs)
	}
	table := paperTable(spec.Name)
	var rows []Row
	for _, r := range rs {
		opt := rewire.Defaults(spec, r)
		opt.CLS, opt.SelfLoops = *cls, *selfLoops
		row, err := measure(graphs, opt, *repeat)
		if err != nil {
			return err
		}
		row.Dataset, row.Split, row.Q, row.LapPEUsPerGraph, row.Source = spec.Name, *split, *q, lapUs, source
		row.RWSteps, row.RWSEUsPerGraph, row.RWSEBytesPerGraph = *steps, rwUs, 4*float64(*steps)*row.NodesMean
		if table != nil && !*cls {
			if pr, ok := table.RowR(r); ok {
				row.PaperDensity = pr.Density
			}
		}
		rows = append(rows, row)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	return printTable(stdout, rows)
}

// load reads one split, or all of them concatenated.
func load(root, dataset, split string) ([]*data.Graph, *data.Spec, error) {
	if split != "all" {
		return data.LoadSplit(root, dataset, split)
	}
	spec, err := data.OpenSpec(root, dataset)
	if err != nil {
		return nil, nil, err
	}
	var all []*data.Graph
	for _, s := range spec.Splits {
		gs, _, err := data.LoadSplit(root, dataset, s)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, gs...)
	}
	return all, spec, nil
}

// measure rewires every graph (timed, fastest of repeat passes), then checks density, sizes
// and lossless recovery on the result.
func measure(graphs []*data.Graph, opt rewire.Options, repeat int) (Row, error) {
	var rw rewire.Rewirer
	out := make([]*data.Graph, len(graphs))
	best := time.Duration(1<<63 - 1)
	for pass := 0; pass < repeat; pass++ {
		start := time.Now()
		for i, g := range graphs {
			h, err := rw.Rewire(g, opt)
			if err != nil {
				return Row{}, fmt.Errorf("graph %d: %w", i, err)
			}
			out[i] = h
		}
		best = min(best, time.Since(start))
	}
	row := Row{R: opt.R, CLS: opt.CLS, Graphs: len(graphs), Lossless: true}
	counted := 0
	for i, h := range out {
		if d := rewire.Density(h); d == d { // skip empty graphs (NaN)
			row.Density += d
			counted++
		}
		row.NodesMean += float64(h.N)
		row.EdgesMean += float64(h.NumEdges())
		if err := rewire.CheckLossless(graphs[i], h); err != nil {
			row.Lossless = false
			row.LosslessFailures++
		}
	}
	n := float64(len(graphs))
	row.Density /= float64(max(counted, 1))
	row.NodesMean /= n
	row.EdgesMean /= n
	row.RewireUsPerGraph = float64(best.Microseconds()) / n
	if best < time.Millisecond {
		row.RewireUsPerGraph = float64(best.Nanoseconds()) / 1e3 / n
	}
	return row, nil
}

// timeLaplacian returns the fastest per-graph time of the Laplacian encoding over repeat passes.
func timeLaplacian(graphs []*data.Graph, q, repeat int) (float64, error) {
	var lap posenc.Laplacian
	var buf []float32
	best := time.Duration(1<<63 - 1)
	for pass := 0; pass < repeat; pass++ {
		start := time.Now()
		for i, g := range graphs {
			if cap(buf) < g.N*q {
				buf = make([]float32, g.N*q)
			}
			if err := lap.Encode(g.N, g.Src, g.Dst, q, buf[:g.N*q]); err != nil {
				return 0, fmt.Errorf("graph %d: %w", i, err)
			}
		}
		best = min(best, time.Since(start))
	}
	return float64(best.Nanoseconds()) / 1e3 / float64(len(graphs)), nil
}

// timeRandomWalk returns the fastest per-graph time of the random-walk encoding with k steps
// over repeat passes.
func timeRandomWalk(graphs []*data.Graph, k, repeat int) (float64, error) {
	var rw posenc.RandomWalk
	var buf []float32
	best := time.Duration(1<<63 - 1)
	for pass := 0; pass < repeat; pass++ {
		start := time.Now()
		for i, g := range graphs {
			if cap(buf) < g.N*k {
				buf = make([]float32, g.N*k)
			}
			if err := rw.Encode(g.N, g.Src, g.Dst, k, buf[:g.N*k]); err != nil {
				return 0, fmt.Errorf("graph %d: %w", i, err)
			}
		}
		best = min(best, time.Since(start))
	}
	return float64(best.Nanoseconds()) / 1e3 / float64(max(len(graphs), 1)), nil
}

// paperTable is the paper's r-sweep table of a dataset (nil when it has none).
func paperTable(dataset string) *paper.Table {
	f, err := paper.Load()
	if err != nil {
		return nil
	}
	t, _ := f.TableForDataset(dataset)
	return t
}

// printOriginal describes the split before rewiring, beside the paper's benchmark table.
func printOriginal(w io.Writer, root, dataset, split string, graphs []*data.Graph) {
	var nodes, edges float64
	for _, g := range graphs {
		nodes += float64(g.N)
		edges += float64(g.NumEdges())
	}
	n := float64(max(len(graphs), 1))
	fmt.Fprintf(w, "source: %s\n", data.DescribeSource(root, dataset))
	fmt.Fprintf(w, "original graphs (%s): %d, mean nodes %.2f, mean directed edges %.2f", split, len(graphs), nodes/n, edges/n)
	if p, ok := paperSizes[dataset]; ok {
		fmt.Fprintf(w, " (the paper's benchmark table, all splits: %.2f, %.2f)", p[0], p[1])
	}
	if p, ok := lrgbSizes[dataset]; ok {
		fmt.Fprintf(w, " (LRGB's table, all splits: %.2f, %.2f)", p[0], p[1])
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
}

func printTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "r\tgraphs\tdensity\tpaper\tnodes\tedges\trewire µs/graph\tLapPE µs/graph\tRWSE µs/graph\tRWSE B/graph\tlossless\t")
	for _, r := range rows {
		ok := "yes"
		if !r.Lossless {
			ok = fmt.Sprintf("NO (%d graphs)", r.LosslessFailures)
		}
		pd := r.PaperDensity
		if pd == "" {
			pd = "–"
		}
		fmt.Fprintf(tw, "%d\t%d\t%.3f\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f\t%s\t\n", r.R, r.Graphs, r.Density, pd, r.NodesMean, r.EdgesMean,
			r.RewireUsPerGraph, r.LapPEUsPerGraph, r.RWSEUsPerGraph, r.RWSEBytesPerGraph, ok)
	}
	if len(rows) > 0 {
		fmt.Fprintf(tw, "\n%s %s, q=%d, k=%d, cls=%v\t\t\t\t\t\t\t\t\t\t\n", rows[0].Dataset, rows[0].Split, rows[0].Q, rows[0].RWSteps, rows[0].CLS)
	}
	return tw.Flush()
}

// Suggestion is the -suggest -json output. Field names are a stable interface.
type Suggestion struct {
	Dataset   string    `json:"dataset"`
	Split     string    `json:"split"`
	Graphs    int       `json:"graphs"`
	SelfLoops bool      `json:"self_loops"`
	Threshold float64   `json:"threshold"`
	Density   []float64 `json:"density"` // density[i] at r = i+1
	R         int       `json:"r"`       // the rule's choice; 0 when no r exceeds the threshold
	Note      string    `json:"note,omitempty"`
}

// suggestRadius prints the rule's densities and choice for a dataset (stats -suggest), from the
// same source and cache as a run config's dataset.r: auto.
func suggestRadius(w io.Writer, dir, dataset, cache string, selfLoops, asJSON bool) error {
	c := &config.Run{Dataset: config.Dataset{Name: dataset, Dir: dir, Cache: cache, SelfLoops: selfLoops, R: config.RAuto}}
	src, err := train.RadiusSource(c, 0)
	if err != nil {
		return err
	}
	r, d, err := hops.Suggest(src, os.Stderr)
	if d == nil {
		return err
	}
	sg := Suggestion{Dataset: d.Dataset, Split: d.Split, Graphs: d.Graphs, SelfLoops: selfLoops, Threshold: hops.Threshold, Density: d.Mean, R: r}
	if err != nil {
		sg.Note = err.Error()
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sg)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "r\tdensity\t\t")
	for i, m := range d.Mean {
		mark := ""
		if i+1 == r {
			mark = "← first above 0.5"
		}
		fmt.Fprintf(tw, "%d\t%.3f\t%s\t\n", i+1, m, mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r == 0 {
		fmt.Fprintf(w, "\n%s: no suggestion: %s\n", dataset, sg.Note)
		return nil
	}
	_, err = fmt.Fprintf(w, "\n%s: r = %d (the first r whose mean density over the %d training graphs exceeds %g; what dataset.r: auto picks)\n",
		d.Dataset, r, d.Graphs, hops.Threshold)
	return err
}
