package data

import (
	"fmt"
	"slices"
)

// EncodingInput is how an encoding enters a model (docs/protocol.md §"Input layer and
// encoders").
type EncodingInput int

// The ways an encoding enters a model.
const (
	NoInput    EncodingInput = iota // rewiring only: nothing beyond the graph's own features
	EdgeSP                          // each edge's shortest-path distance (Graph.SP): a table of r+2 rows, or Linear(1→d) on the value
	EdgeAdj                         // each edge's adjacency powers (Graph.Adj, width r): Linear(r→d)
	NodeVector                      // a vector per node computed on the original graph (Graph.NodePE): Linear(width→d)
)

// WidthParam is the setting an encoding's width comes from.
type WidthParam int

// The settings an encoding's width may come from.
const (
	FixedWidth WidthParam = iota // Encoding.Cols, whatever the settings
	WidthR                       // the rewiring radius r
	WidthQ                       // dataset.q, the Laplacian width (cache key part q<Q>)
	WidthSteps                   // dataset.rw_steps, the random-walk steps k (cache key part k<K>)
)

// Symbol is the setting's letter in messages and cache keys: r, q or k ("" for FixedWidth).
func (w WidthParam) Symbol() string {
	return [...]string{FixedWidth: "", WidthR: "r", WidthQ: "q", WidthSteps: "k"}[w]
}

// EncodingParams are the settings an encoding's width may come from.
type EncodingParams struct {
	R, Q, Steps int
}

// Encoding is one preprocessing encoding, declared once in the registry (RegisterEncoding)
// and read by the config's validation, the preprocessing cache key and the models' input layer.
type Encoding struct {
	Name  string        // its value of dataset.encoding
	Title string        // its name in prose: messages and the tables' legends ("the Laplacian encoding")
	Input EncodingInput // how it enters a model
	Width WidthParam    // the setting its width comes from
	Cols  int           // the width with FixedWidth
	// Need says what a width below 1 lacks ("at least 1 Laplacian eigenvector"), for the
	// widths a setting gives; such an encoding needs a width of at least 1.
	Need string
	// Node vectors: Feed names the batch input, and with "_pe" the Linear that reads it (the
	// names in checkpoints); Signs says training flips the sign of each column (the
	// Laplacian's eigenvectors, ApplySigns).
	Feed  string
	Signs bool
}

// WidthOf is e's width under p: its columns per node (NodeVector) or edge (EdgeAdj), or the
// radius (EdgeSP; the table has WidthOf+2 rows); 0 for NoInput.
func (e Encoding) WidthOf(p EncodingParams) int {
	switch e.Width {
	case WidthR:
		return p.R
	case WidthQ:
		return p.Q
	case WidthSteps:
		return p.Steps
	}
	return e.Cols
}

// NeedsWidth reports whether e's width comes from a setting that must be at least 1 (q, k).
func (e Encoding) NeedsWidth() bool { return e.Width == WidthQ || e.Width == WidthSteps }

// KeyPart is e's width part of a preprocessing cache key: q<Q> for a width from q, k<Steps> for
// one from the random-walk steps, q0 for every other (the radius is a key part of its own).
func (e Encoding) KeyPart(p EncodingParams) string {
	if !e.NeedsWidth() {
		return "q0"
	}
	return fmt.Sprintf("%s%d", e.Width.Symbol(), e.WidthOf(p))
}

// KeyParams is p with the settings e does not read set to zero: what a cache key holds, so that
// a setting the encoding ignores never splits its cache.
func (e Encoding) KeyParams(p EncodingParams) EncodingParams {
	out := EncodingParams{R: p.R}
	switch e.Width {
	case WidthQ:
		out.Q = p.Q
	case WidthSteps:
		out.Steps = p.Steps
	}
	return out
}

// encodings is the registry, in the order messages list them.
var encodings = []Encoding{
	{Name: "none", Title: "no encoding", Input: NoInput},
	{Name: "adj", Title: "the adjacency-power encoding", Input: EdgeAdj, Width: WidthR},
	{Name: "short", Title: "the shortest-path encoding", Input: EdgeSP, Width: WidthR},
	{Name: "lp", Title: "the Laplacian encoding", Input: NodeVector, Width: WidthQ, Need: "at least 1 Laplacian eigenvector", Feed: "lap", Signs: true},
	{Name: "rwse", Title: "the random-walk encoding (RWSE)", Input: NodeVector, Width: WidthSteps, Need: "walks of at least 1 step", Feed: "rwse"},
}

// RegisterEncoding adds e to the registry (a test's dummy encoding, or a new one declared beside
// the others), from an init function: the registry is not locked. It panics on an empty or taken
// name, or a node vector without Feed: programming errors.
func RegisterEncoding(e Encoding) {
	switch _, taken := LookupEncoding(e.Name); {
	case e.Name == "" || taken:
		panic(fmt.Sprintf("data.RegisterEncoding: name %q empty or taken", e.Name))
	case e.Input == NodeVector && e.Feed == "":
		panic(fmt.Sprintf("data.RegisterEncoding: node encoding %q without Feed", e.Name))
	}
	encodings = append(encodings, e)
}

// LookupEncoding returns the registered encoding of that name.
func LookupEncoding(name string) (Encoding, bool) {
	i := slices.IndexFunc(encodings, func(e Encoding) bool { return e.Name == name })
	if i < 0 {
		return Encoding{}, false
	}
	return encodings[i], true
}

// EncodingNames lists the registered encodings, in registration order.
func EncodingNames() []string {
	out := make([]string, len(encodings))
	for i, e := range encodings {
		out[i] = e.Name
	}
	return out
}
