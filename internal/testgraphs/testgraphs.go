// Package testgraphs holds small hand-made batches the model tests share.
package testgraphs

import "github.com/rewiregnn/rewiregnn/data"

// Tiny returns two small graphs (4 and 3 nodes) with node and edge types (vocabularies 5 and
// 3), shortest-path values < 3, a 2-wide adjacency encoding, a 2-wide Laplacian encoding and one
// target each. Both graphs' last node is marked as a CLS node.
func Tiny() (*data.Batch, error) {
	g1 := &data.Graph{N: 4, Src: []int32{0, 1, 1, 2, 2, 3, 0, 3}, Dst: []int32{1, 0, 2, 1, 3, 2, 0, 3},
		Node: data.Features{CatDim: 1, Cat: []int32{0, 1, 4, 2}},
		Edge: data.Features{CatDim: 1, Cat: []int32{1, 1, 2, 2, 1, 1, 0, 0}},
		Y:    []float32{1.5}, SP: []int32{1, 1, 1, 1, 1, 1, 0, 0}, HasCLS: true,
		AdjDim: 2, Adj: []float32{1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 0, 2},
		NodePEDim: 2, NodePE: []float32{0.5, -0.1, 0.2, 0.3, -0.4, 0.6, 0.1, 0.9}}
	g2 := &data.Graph{N: 3, Src: []int32{0, 1, 2, 0, 2, 1}, Dst: []int32{1, 0, 0, 2, 1, 2},
		Node: data.Features{CatDim: 1, Cat: []int32{3, 3, 1}},
		Edge: data.Features{CatDim: 1, Cat: []int32{2, 2, 0, 0, 0, 0}},
		Y:    []float32{-0.7}, SP: []int32{1, 1, 2, 2, 2, 2}, HasCLS: true,
		AdjDim: 2, Adj: []float32{1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		NodePEDim: 2, NodePE: []float32{0.3, 0.3, -0.2, 0.7, 0, 0}}
	return data.NewBatch([]*data.Graph{g1, g2})
}
