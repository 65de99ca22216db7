package cpuexec

import (
	"fmt"

	"gorgonia.org/gorgonia"
)

// Activation recomputation. The forward pass keeps only the layers' outputs (the checkpoints a
// model declares) and what crosses from one layer to another; the backward pass, before the
// first step that reads an activation of a layer, runs that layer's forward steps again. The
// activations of a layer then live for its forward pass and again for its backward pass, not in
// between: a training step holds about one layer's activations besides the checkpoints. The
// recomputed steps run the same kernels on the same inputs, so every value, and with it every
// gradient, is bit for bit what the normal schedule computes; the steps are marked as replays
// (ops.RunOpts.Replay), so that a batch norm does not update its running statistics twice.

// Recompute asks Compile for activation recomputation.
type Recompute struct {
	// Checkpoints are the nodes the forward pass keeps for the backward pass: the layers'
	// outputs. A segment (a layer) is the forward steps computed from one checkpoint on up to
	// the next; the steps after the last checkpoint (the head) are never recomputed.
	Checkpoints gorgonia.Nodes
	// Forward tells the forward pass's nodes from the gradient nodes.
	Forward func(*gorgonia.Node) bool
}

// recompute inserts, before the first step outside the forward pass that reads an activation of
// a segment, a replay of that segment's forward steps.
func (m *Machine) recompute(rc *Recompute, kept map[int64]bool) error {
	check := map[int64]bool{}
	for _, n := range rc.Checkpoints {
		if n != nil {
			check[n.ID()] = true
		}
	}
	if len(check) == 0 {
		return fmt.Errorf("recompute: the model declares no checkpoints (layer outputs)")
	}
	// Segments: a forward step's is the largest of its inputs', plus one past a checkpoint.
	seg := map[int64]int{}
	ends := map[int]bool{} // segments that end in a checkpoint: the recomputable ones
	isFwd := make([]bool, len(m.steps))
	for i, s := range m.steps {
		if s.op == nil || !rc.Forward(s.node) {
			continue
		}
		isFwd[i] = true
		k := 0
		for _, c := range s.in {
			if kc, ok := seg[c.ID()]; ok {
				if check[c.ID()] {
					kc++
				}
				k = max(k, kc)
			}
		}
		seg[s.node.ID()] = k
		if check[s.node.ID()] {
			ends[k] = true
		}
	}
	// What the forward pass keeps: checkpoints, outputs, values another segment reads and the
	// values of segments that are not recomputed.
	keep := map[int64]bool{}
	for id := range check {
		keep[id] = true
	}
	for id := range kept {
		keep[id] = true
	}
	for i, s := range m.steps {
		if !isFwd[i] {
			continue
		}
		for _, c := range s.in {
			if kc, ok := seg[c.ID()]; ok && kc != seg[s.node.ID()] {
				keep[c.ID()] = true
			}
		}
		if !ends[seg[s.node.ID()]] {
			keep[s.node.ID()] = true
		}
	}
	replayed := map[int]bool{}
	var out []step
	for i, s := range m.steps {
		if !isFwd[i] {
			for _, c := range s.in {
				k, ok := seg[c.ID()]
				if !ok || keep[c.ID()] || replayed[k] {
					continue
				}
				replayed[k] = true
				for j := range m.steps {
					f := m.steps[j]
					if isFwd[j] && seg[f.node.ID()] == k && !keep[f.node.ID()] {
						if j > i {
							return fmt.Errorf("recompute: forward step %v runs after a gradient step that needs it", f.node.Op())
						}
						f.replay = true
						f.vals = make([]gorgonia.Value, len(f.in))
						out = append(out, f)
					}
				}
			}
		}
		out = append(out, s)
	}
	m.steps = out
	return nil
}
