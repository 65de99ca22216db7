package gatedgcn

import (
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

// TestBadInputsAreErrors checks that impossible settings and inputs give errors, not panics.
func TestBadInputsAreErrors(t *testing.T) {
	p, err := nn.NewParams(tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	bad := ZINC()
	bad.Readout = "max"
	if _, err := nn.BuildOf(bad, Build)(p, nn.Bucket{Nodes: 10, Edges: 10, Graphs: 1}, true); err == nil || !strings.Contains(err.Error(), "readout") {
		t.Errorf("readout max: error %v, want one naming the readout", err)
	}
	if _, _, err := nn.Bind(bad, Build); err == nil {
		t.Error("readout max accepted by the constructor")
	}
	if _, err := nn.BuildOf(ZINC(), Build)(p, nn.Bucket{Nodes: 0, Edges: 10, Graphs: 1}, true); err == nil || !strings.Contains(err.Error(), "empty dimension") {
		t.Errorf("empty bucket: error %v, want one naming the empty dimension", err)
	}
	cfg := tinyConfig("mean")
	cfg.NodeVocab = 4 // the tiny batch uses node type 4
	net, err := Build(cfg, p, nn.Bucket{Nodes: 9, Edges: 17, Graphs: 3}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	if _, err := net.Run(tinyBatch(t)); err == nil || !strings.Contains(err.Error(), "node type") {
		t.Errorf("node type outside the embedding: error %v, want one naming the node types", err)
	}
	p2, err := nn.NewParams(tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	small, err := Build(tinyConfig("mean"), p2, nn.Bucket{Nodes: 3, Edges: 17, Graphs: 3}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	if _, err := small.Run(tinyBatch(t)); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("oversized batch: error %v, want one saying it does not fit", err)
	}
	cls, err := Build(tinyConfig("cls"), p2, nn.Bucket{Nodes: 9, Edges: 17, Graphs: 3}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer cls.Close()
	if _, err := Build(cfg, p2, nn.Bucket{Nodes: 9, Edges: 17, Graphs: 3}, true); err == nil {
		t.Error("a parameter set built for another vocabulary accepted")
	}
	bt := tinyBatch(t)
	bt.CLS[1] = -1
	if _, err := cls.Run(bt); err == nil || !strings.Contains(err.Error(), "CLS") {
		t.Errorf("CLS readout without CLS node: error %v", err)
	}
}
