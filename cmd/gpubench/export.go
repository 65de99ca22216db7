package main

// The batch export: every batch of a setting's first epoch, as the trainer saw it, in a format
// a script in another language reads without this program's types (scripts/bench/
// torch_gatedgcn.py reads it with numpy). One folder per setting:
//
//	header.json  what is in data.bin: the feature widths, and per batch its node, edge and graph
//	             counts and the byte offset of its arrays
//	data.bin     per batch, in this order, little-endian, row-major: node_cat int32 [N, node_cat_dim],
//	             node_float float32 [N, node_float_dim], edge_cat int32 [E, edge_cat_dim],
//	             edge_float float32 [E, edge_float_dim], adj float32 [E, adj_dim], src int32 [E],
//	             dst int32 [E], node_graph int32 [N], y float32 [G, y_dim], label int32 [G]

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// exportHeader is header.json.
type exportHeader struct {
	Suite        string        `json:"suite"`
	R            int           `json:"r"`
	CLS          bool          `json:"cls"`
	NodeCatDim   int           `json:"node_cat_dim"`
	NodeFloatDim int           `json:"node_float_dim"`
	EdgeCatDim   int           `json:"edge_cat_dim"`
	EdgeFloatDim int           `json:"edge_float_dim"`
	AdjDim       int           `json:"adj_dim"`
	YDim         int           `json:"y_dim"`
	Task         string        `json:"task"` // "regression" (L1 on y) or "classification" (label)
	Classes      int           `json:"classes"`
	Batches      []exportBatch `json:"batches"`
}

type exportBatch struct {
	Nodes  int   `json:"nodes"`
	Edges  int   `json:"edges"`
	Graphs int   `json:"graphs"`
	Offset int64 `json:"offset"`
}

// exporter collects one setting's batches and writes them out at the end.
type exporter struct {
	dir  string
	head exportHeader
	buf  bytes.Buffer
}

func newExporter(root string, s setting, spec *data.Spec) *exporter {
	name := fmt.Sprintf("%s-r%d-cls%t", s.Suite, s.R, s.CLS)
	h := exportHeader{Suite: s.Suite, R: s.R, CLS: s.CLS, Task: "regression"}
	if spec.Classes > 0 {
		h.Task, h.Classes = "classification", spec.Classes
	}
	return &exporter{dir: filepath.Join(root, name), head: h}
}

// add appends batch b.
func (x *exporter) add(b *data.Batch) error {
	u := &b.Union
	h := &x.head
	if len(h.Batches) == 0 {
		h.NodeCatDim, h.NodeFloatDim = u.Node.CatDim, u.Node.FloatDim
		h.EdgeCatDim, h.EdgeFloatDim, h.AdjDim, h.YDim = u.Edge.CatDim, u.Edge.FloatDim, u.AdjDim, b.YDim
	}
	h.Batches = append(h.Batches, exportBatch{Nodes: u.N, Edges: u.NumEdges(), Graphs: b.NumGraphs, Offset: int64(x.buf.Len())})
	labels := b.Labels
	if len(labels) != b.NumGraphs {
		labels = make([]int32, b.NumGraphs)
	}
	y := b.Y
	if len(y) != b.NumGraphs*b.YDim {
		y = make([]float32, b.NumGraphs*b.YDim)
	}
	for _, a := range []any{u.Node.Cat, u.Node.Float, u.Edge.Cat, u.Edge.Float, u.Adj, u.Src, u.Dst, b.NodeGraph, y, labels} {
		if err := binary.Write(&x.buf, binary.LittleEndian, a); err != nil {
			return fmt.Errorf("export %s: %w", x.dir, err)
		}
	}
	return nil
}

// write writes header.json and data.bin (each atomically).
func (x *exporter) write() error {
	if err := os.MkdirAll(x.dir, 0o755); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := runfiles.WriteAtomic(filepath.Join(x.dir, "data.bin"), x.buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("export %s: %w", x.dir, err)
	}
	js, err := json.MarshalIndent(x.head, "", " ")
	if err != nil {
		return err
	}
	return runfiles.WriteAtomic(filepath.Join(x.dir, "header.json"), append(js, '\n'), 0o644)
}
