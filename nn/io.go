package nn

import (
	"fmt"
	"math"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
)

// Readouts: how a model turns node states into the rows its head predicts (docs/protocol.md
// §"Readouts").
const (
	ReadoutMean = "mean" // mean of each graph's nodes
	ReadoutSum  = "sum"  // sum of each graph's nodes
	ReadoutCLS  = "cls"  // each graph's CLS node
	ReadoutRoot = "root" // each graph's node 0 (NeighborsMatch)
	ReadoutNode = "node" // every node (CLUSTER, PATTERN)
)

// Losses (docs/protocol.md §"Losses and metrics").
const (
	LossL1  = "l1"     // mean absolute error over the Out targets of every graph
	LossCE  = "ce"     // mean cross-entropy
	LossSBM = "sbm_ce" // cross-entropy with the per-batch SBM class weights
	LossBCE = "bce"    // binary cross-entropy with logits, mean over the labelled entries of Out labels per graph
)

// IO describes what a model reads from a dataset's batches and what it predicts: the input
// layer (docs/protocol.md §"Input layer and encoders") and the readout, MLP head and loss
// (§"Readouts", §"MLP readout", §"Losses and metrics"). It is the same for every model.
type IO struct {
	NodeVocab int    // rows of each categorical node table when every column shares one vocabulary (the CLS id included); 0 with NodeVocabs or float node features
	NodeCols  int    // categorical node columns sharing NodeVocab, one table each, summed (NeighborsMatch: key and value); 0 means 1
	NodeFloat int    // width of float node features, embedded by Linear(NodeFloat→d); 0 without
	EdgeVocab int    // rows of the table of the one categorical edge column; 0 with EdgeVocabs or without
	EdgeFloat int    // width of float edge features, embedded by Linear(EdgeFloat→d); 0 without
	SPRows    int    // rows of the shortest-path table (r+2); 0 without the encoding
	SPLinear  bool   // encode the shortest path by Linear(1→d) on its value instead (docs/protocol.md §"Input layer and encoders")
	AdjDim    int    // width r of the adjacency-power encoding; 0 without
	NodeEnc   string // the node encoding, a data.NodeVector of data's registry (lp, rwse); "" without
	NodePE    int    // its width (q, k); 0 without
	Readout   string
	Loss      string
	Out       int     // output width: targets (L1), labels (BCE) or classes (CE) per row
	InDropout float64 // dropout on the node embedding before the node encoding is added

	// Per-column vocabularies (OGB's atom and bond features): the rows of each categorical
	// column's own table, the tables' embeddings summed. They replace NodeVocab and NodeCols,
	// and EdgeVocab; nil when the columns share one vocabulary.
	NodeVocabs []int // the CLS id included
	EdgeVocabs []int

	// AvgLogDeg is the mean of log(d+1) over the training split's nodes, d the in-degree in the
	// graph the model reads (PNA's δ, which its degree scalers divide by). The trainer sets it
	// from the training graphs (AvgLogDegree); 0 where no data is loaded (a memory plan).
	AvgLogDeg float64
}

// AvgLogDegree is the mean of log(d+1) over the nodes of gs, d each node's in-degree (PNA's δ,
// as PyTorch Geometric computes it from the training split's degree histogram: nodes without
// in-edges count with log 1 = 0), summed in float64 in graph and node order; 0 for no nodes.
func AvgLogDegree(gs []*data.Graph) float64 {
	var sum float64
	var n int
	var deg []int
	for _, g := range gs {
		deg = append(deg[:0], make([]int, g.N)...)
		for _, d := range g.Dst {
			deg[d]++
		}
		for _, d := range deg {
			sum += math.Log(float64(d) + 1)
		}
		n += g.N
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// NodeTables returns the rows of every categorical node table, one per column: NodeVocabs, or
// NodeVocab for each of the NodeCols columns; nil with float node features.
func (io IO) NodeTables() []int {
	if io.NodeVocabs != nil {
		return io.NodeVocabs
	}
	return data.SharedVocabs(io.NodeVocab, io.NodeCols)
}

// EdgeTables returns the rows of every categorical edge table, one per column: EdgeVocabs, or
// EdgeVocab for the one column; nil without categorical edge features.
func (io IO) EdgeTables() []int {
	if io.EdgeVocabs != nil {
		return io.EdgeVocabs
	}
	return data.SharedVocabs(io.EdgeVocab, 1)
}

// HasEdgeInput reports whether edges carry an input feature.
func (io IO) HasEdgeInput() bool { return len(io.EdgeTables()) > 0 || io.EdgeFloat > 0 }

// validTables reports a per-column vocabulary list that has an empty table, or that comes with
// the shared form too.
func validTables(what string, tables []int, shared int) error {
	if tables == nil {
		return nil
	}
	if len(tables) == 0 || shared != 0 {
		return fmt.Errorf("%s input: per-column vocabularies %v with a shared vocabulary or column count %d, want exactly one form", what, tables, shared)
	}
	for c, rows := range tables {
		if rows < 1 {
			return fmt.Errorf("%s input: column %d has a table of %d rows", what, c, rows)
		}
	}
	return nil
}

// Validate reports the first inconsistent setting.
func (io IO) Validate() error {
	if err := validTables("node", io.NodeVocabs, io.NodeVocab+io.NodeCols); err != nil {
		return err
	}
	if err := validTables("edge", io.EdgeVocabs, io.EdgeVocab); err != nil {
		return err
	}
	switch {
	case (len(io.NodeTables()) > 0) == (io.NodeFloat > 0):
		return fmt.Errorf("node input: vocabularies %v and float width %d, want exactly one", io.NodeTables(), io.NodeFloat)
	case io.NodeCols < 0 || io.EdgeVocab < 0 || io.EdgeFloat < 0:
		return fmt.Errorf("negative input width (node columns %d, edge vocabulary %d, edge floats %d)", io.NodeCols, io.EdgeVocab, io.EdgeFloat)
	case len(io.EdgeTables()) > 0 && io.EdgeFloat > 0:
		return fmt.Errorf("edge input: both vocabularies (%v) and float features (%d)", io.EdgeTables(), io.EdgeFloat)
	case io.SPRows < 0 || io.AdjDim < 0 || io.NodePE < 0:
		return fmt.Errorf("negative encoding width (sp %d, adj %d, node %d)", io.SPRows, io.AdjDim, io.NodePE)
	case (io.NodeEnc != "") != (io.NodePE > 0):
		return fmt.Errorf("node encoding %q of width %d, want both or neither", io.NodeEnc, io.NodePE)
	case io.NodePE > 0 && io.nodePE().input == "":
		return fmt.Errorf("node encoding %q: not a node encoding of data's registry", io.NodeEnc)
	case io.SPLinear && io.SPRows == 0:
		return fmt.Errorf("a linear shortest-path encoder needs the encoding (sp rows 0)")
	case io.Out < 1:
		return fmt.Errorf("output width %d", io.Out)
	case io.InDropout < 0 || io.InDropout >= 1:
		return fmt.Errorf("input dropout %g outside [0, 1)", io.InDropout)
	}
	switch io.Readout {
	case ReadoutMean, ReadoutSum, ReadoutCLS, ReadoutRoot, ReadoutNode:
	default:
		return fmt.Errorf("readout %q, want mean, sum, cls, root or node", io.Readout)
	}
	switch io.Loss {
	case LossL1:
		if io.Readout == ReadoutNode {
			return fmt.Errorf("the L1 loss needs a graph-level readout, readout is %s", io.Readout)
		}
	case LossBCE:
		if io.Readout != ReadoutMean && io.Readout != ReadoutSum && io.Readout != ReadoutCLS {
			return fmt.Errorf("the BCE loss needs a graph-level readout (mean, sum or cls), readout is %s", io.Readout)
		}
	case LossCE, LossSBM:
		if io.Out < 2 {
			return fmt.Errorf("a classification loss needs at least 2 classes, have %d", io.Out)
		}
		if io.Loss == LossSBM && io.Readout != ReadoutNode {
			return fmt.Errorf("the SBM weighted loss is per node, readout is %s", io.Readout)
		}
	default:
		return fmt.Errorf("loss %q, want l1, bce, ce or sbm_ce", io.Loss)
	}
	return nil
}

// InputSpec is what a network built on io reads from a batch.
func (io IO) InputSpec() InputSpec {
	return InputSpec{
		NodeCols: len(io.NodeTables()), NodeFloat: io.NodeFloat,
		EdgeCols: len(io.EdgeTables()), EdgeFloat: io.EdgeFloat,
		SP: io.SPRows > 0 && !io.SPLinear, SPLinear: io.SPLinear, CLS: io.Readout == ReadoutCLS, Root: io.Readout == ReadoutRoot,
		AdjDim: io.AdjDim, NodePE: io.nodePE().width, LapSign: io.nodePE().signs, Loss: io.Loss,
		Classes: io.Out * btoi(io.Loss == LossCE || io.Loss == LossSBM), Targets: io.Out * btoi(io.Loss == LossL1 || io.Loss == LossBCE),
		AvgLogDeg: io.AvgLogDeg, SumReadout: io.Readout == ReadoutSum,
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// NodeParams is the parameter count of the node input layer for width d.
func (io IO) NodeParams(d int) int {
	p := sum(io.NodeTables()) * d
	if io.NodeFloat > 0 {
		p = (io.NodeFloat + 1) * d
	}
	if pe := io.nodePE(); pe.width > 0 {
		p += (pe.width + 1) * d
	}
	return p
}

// nodePEInput is the node encoding a network reads: its input's and its Linear's names, its
// width (0: none) and whether its columns' signs flip in training.
type nodePEInput struct {
	input, param string
	width        int
	signs        bool
}

// nodePE is io's node encoding, as data's registry declares it (the Laplacian's names are those
// of the checkpoints written before the random-walk encoding existed).
func (io IO) nodePE() nodePEInput {
	e, ok := data.LookupEncoding(io.NodeEnc)
	if !ok || e.Input != data.NodeVector || io.NodePE <= 0 {
		return nodePEInput{}
	}
	return nodePEInput{e.Feed, e.Feed + "_pe", io.NodePE, e.Signs}
}

// SignFlips is the number of node-encoding columns whose signs training flips (the Laplacian
// encoding's width), 0 for none.
func (io IO) SignFlips() int {
	if pe := io.nodePE(); pe.signs {
		return pe.width
	}
	return 0
}

// EdgeParams is the parameter count of the edge input layer (features and encodings).
func (io IO) EdgeParams(d int) int {
	p := sum(io.EdgeTables()) * d
	if io.EdgeFloat > 0 {
		p = (io.EdgeFloat + 1) * d
	}
	switch {
	case io.SPLinear:
		p += 2 * d
	default:
		p += io.SPRows * d
	}
	if io.AdjDim > 0 {
		p += (io.AdjDim + 1) * d
	}
	return p
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// HeadParams is the parameter count of the MLP readout d → ⌊d/2⌋ → ⌊d/4⌋ → Out
// (docs/protocol.md §"MLP readout").
func (io IO) HeadParams(d int) int {
	h1, h2 := d/2, d/4
	return d*h1 + h1 + h1*h2 + h2 + h2*io.Out + io.Out
}

// NodeInput embeds the node features and adds the node encoding, Laplacian (width q), random
// walk (width k) or another of data's registry (docs/protocol.md §"Input layer and encoders"):
// h⁰ = Σ_c Emb_c(f_c) (or Linear(f)) [+ Linear(q→d)(p) | + Linear(k→d)(p)].
func (b *Builder) NodeInput(in *Inputs, io IO, d int) *gorgonia.Node {
	var h *gorgonia.Node
	if io.NodeFloat > 0 {
		h = b.Linear(b.Input("node_x", in.NodeFloat), "node_lin", io.NodeFloat, d)
	} else {
		h = b.embedColumns(in.NodeCat, "node_emb", io.NodeTables(), d)
	}
	if io.InDropout > 0 {
		h = b.Dropout(h, "in_feat_dropout", io.InDropout)
	}
	if pe := io.nodePE(); pe.width > 0 {
		h = b.Add(h, b.Linear(b.Input(pe.input, in.NodePE), pe.param, pe.width, d))
	}
	return h
}

// embedColumns sums the embeddings of categorical columns, column c looked up in its own
// table of rows[c] rows, named prefix for column 0 and prefix<c> for the others:
// Σ_c Emb_c(f_c), added in column order.
func (b *Builder) embedColumns(cols []*ops.Index, prefix string, rows []int, d int) *gorgonia.Node {
	if len(cols) != len(rows) {
		b.Fail(fmt.Errorf("%d categorical columns in the batch inputs, %d tables", len(cols), len(rows)), prefix)
		return nil
	}
	var h *gorgonia.Node
	for c, ids := range cols {
		name := prefix
		if c > 0 {
			name = fmt.Sprintf("%s%d", prefix, c)
		}
		x := b.Embedding(ids, name, rows[c], d)
		if h == nil {
			h = x
		} else {
			h = b.Add(h, x)
		}
	}
	return h
}

// EdgeInput embeds the edge features and adds the edge encodings: e⁰ = Σ_c Emb_c(f_c) (or Linear)
// [+ SP table or Linear(1→d)] [+ Linear(r→d)(adj)]: the features, the encoding or both, as io has
// them. It returns nil when edges carry neither (HasEdgeEmbedding false).
func (b *Builder) EdgeInput(in *Inputs, io IO, d int) *gorgonia.Node {
	var e *gorgonia.Node
	switch {
	case io.EdgeFloat > 0:
		e = b.Linear(b.Input("edge_x", in.EdgeFloat), "edge_lin", io.EdgeFloat, d)
	case len(io.EdgeTables()) > 0:
		e = b.embedColumns(in.EdgeCat, "edge_emb", io.EdgeTables(), d)
	}
	switch {
	case io.SPLinear:
		e = b.addOrFirst(e, b.Linear(b.Input("sp", in.SPValue), "sp_pe", 1, d))
	case io.SPRows > 0:
		e = b.addOrFirst(e, b.Embedding(in.SP, "sp_pe", io.SPRows, d))
	}
	if io.AdjDim > 0 {
		e = b.addOrFirst(e, b.Linear(b.Input("adj", in.Adj), "adj_pe", io.AdjDim, d))
	}
	return e
}

// HasEdgeEmbedding reports whether EdgeInput builds anything: edge features or an edge encoding.
func (io IO) HasEdgeEmbedding() bool {
	return io.HasEdgeInput() || io.SPLinear || io.SPRows > 0 || io.AdjDim > 0
}

// addOrFirst is e + x, or x when e is nil.
func (b *Builder) addOrFirst(e, x *gorgonia.Node) *gorgonia.Node {
	if e == nil {
		return x
	}
	return b.Add(e, x)
}

// Head reads out the final node states h ([Nodes, d]), applies the MLP readout and the loss.
func (b *Builder) Head(in *Inputs, io IO, h *gorgonia.Node, d int) (pred, loss *gorgonia.Node) {
	var x *gorgonia.Node
	switch io.Readout {
	case ReadoutCLS:
		x = b.Gather(h, in.CLS)
	case ReadoutRoot:
		x = b.Gather(h, in.Root)
	case ReadoutNode:
		x = h
	default: // mean or sum: NodeGraph's weights are 1/size or 1 (Inputs.Load)
		x = b.ScatterAdd(h, in.NodeGraph, in.B.Graphs)
	}
	pred = b.MLPReadout(x, "readout", d, io.Out)
	switch io.Loss {
	case LossL1:
		return pred, b.L1(pred, in)
	case LossBCE:
		return pred, b.BCE(pred, in)
	}
	return pred, b.Apply("cross-entropy", func() (*gorgonia.Node, error) { return ops.WeightedCE(pred, in.Labels) })
}
