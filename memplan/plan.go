package memplan

import (
	"fmt"
	"io"
	"strings"

	"github.com/rewiregnn/rewiregnn/internal/memlimit"
)

// The memory plan of a run (train -plan): what the memory guard estimates on the CPU, with and
// without activation recomputation, what the GPU executor's plan holds on the device, and the
// largest batch size that fits a budget.

// Plan is a run's planned memory.
type Plan struct {
	Name      string
	BatchSize int
	Budget    int64
	Layers    int
	// CPU and CPURecompute are the memory guard's estimates (live bytes; Need adds the garbage
	// collector's room); Fits* the largest batch size whose need is within the budget (0: none;
	// the batch size itself when it fits).
	CPU, CPURecompute         Estimate
	FitsCPU, FitsCPURecompute int
	GPU                       GPUEstimate
	FitsGPU                   int
}

// GPUEstimate is the device memory of a GPU run: the largest plan's activation slots (a run
// allocates them and frees them after), the holders of every net's inputs, and the parameters
// with Adam's moments (float32). The GPU executor does not recompute activations.
type GPUEstimate struct {
	Activations, Holders, Params int64
	// ActEdges is the edge count of the bucket whose plan sets Activations; ActTrain says it is
	// a training net's.
	ActEdges int
	ActTrain bool
}

// Total is the device memory the run needs.
func (g GPUEstimate) Total() int64 { return g.Activations + g.Holders + g.Params }

// Report writes the plan as a table.
func (pl *Plan) Report(w io.Writer) {
	f := memlimit.Format
	perEdge := func(b int64, edges int) string {
		if edges == 0 || pl.Layers == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f B", float64(b)/float64(edges)/float64(pl.Layers))
	}
	which := func(edges int, train bool) string {
		if train {
			return fmt.Sprintf("training, %d edges", edges)
		}
		return fmt.Sprintf("evaluation, %d edges", edges)
	}
	fits := func(n int) string {
		switch {
		case n == pl.BatchSize:
			return fmt.Sprintf("yes (batch %d)", n)
		case n == 0:
			return "no batch size"
		}
		return fmt.Sprintf("no; batch %d", n)
	}
	c, rc, g := &pl.CPU, &pl.CPURecompute, &pl.GPU
	fitted := ""
	if c.EvalFitted > 0 {
		fitted = fmt.Sprintf(" (%d fitted to the evaluation batches)", c.EvalFitted)
	}
	fmt.Fprintf(w, "%s, batch size %d: %d buckets%s, %d used for training\n", pl.Name, pl.BatchSize, c.Buckets, fitted, c.TrainBuckets)
	var b strings.Builder
	row := func(name string, a, r, g string) { fmt.Fprintf(&b, "%-30s %22s %22s %22s\n", name, a, r, g) }
	row("", "CPU", "CPU recompute", "GPU")
	row("activations (largest net)", f(c.Arena), f(rc.Arena), f(g.Activations))
	row("  that net", which(c.ArenaEdges, c.ArenaTrain), which(rc.ArenaEdges, rc.ArenaTrain), which(g.ActEdges, g.ActTrain))
	row("  per edge per layer", perEdge(c.Arena, c.ArenaEdges), perEdge(rc.Arena, rc.ArenaEdges), perEdge(g.Activations, g.ActEdges))
	row("nets' own state and inputs", f(c.Train+c.Eval), f(rc.Train+rc.Eval), f(g.Holders))
	row("graphs and batches (host)", f(c.Data+c.Batches), f(rc.Data+rc.Batches), "")
	row("parameters and Adam", f(c.Params), f(rc.Params), f(g.Params))
	row("live in all", f(c.Total()), f(rc.Total()), f(g.Total()))
	row("need (CPU: + 25% for the GC)", f(c.Need()), f(rc.Need()), f(g.Total()))
	row("fits "+f(pl.Budget), fits(pl.FitsCPU), fits(pl.FitsCPURecompute), fits(pl.FitsGPU))
	io.WriteString(w, b.String())
}
