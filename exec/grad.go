package exec

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Sums records the gradient sums Grad added to a graph, by node id: the element-wise a + b
// nodes with which gorgonia.Grad adds up the gradient contributions of a node that has several
// consumers (a chain a + b, then + c, … for more than two). Compile runs them as sum steps.
type Sums map[int64]bool

// Grad is gorgonia.Grad(cost, wrt...) that also returns the gradient sums it added to cost's
// graph. A gradient sum is a node Grad added whose op is the one gorgonia.Add builds for its
// two inputs (found by building that add on a probe graph, with Gorgonia's exported API, and
// comparing the ops), and whose inputs are float tensors of its shape.
func Grad(cost *gorgonia.Node, wrt ...*gorgonia.Node) (gorgonia.Nodes, Sums, error) {
	g := cost.Graph()
	before := map[int64]bool{}
	for _, n := range g.AllNodes() {
		before[n.ID()] = true
	}
	grads, err := gorgonia.Grad(cost, wrt...)
	if err != nil {
		return nil, nil, err
	}
	sums := Sums{}
	probes := map[probeKey]gorgonia.Op{}
	for _, n := range g.AllNodes() {
		if before[n.ID()] || n.Op() == nil {
			continue
		}
		in := children(g, n)
		if len(in) != 2 || !sumShaped(n, in) {
			continue
		}
		add, err := probeAdd(probes, in[0], in[1])
		if err != nil {
			return nil, nil, err
		}
		if sameOp(n.Op(), add) {
			sums[n.ID()] = true
		}
	}
	return grads, sums, nil
}

// sumShaped reports whether n and its inputs are float tensors (not scalars) of one shape and
// element type, as a sum step needs.
func sumShaped(n *gorgonia.Node, in []*gorgonia.Node) bool {
	dt := n.Dtype()
	if n.IsScalar() || (dt != tensor.Float32 && dt != tensor.Float64) {
		return false
	}
	for _, c := range in {
		if !c.Shape().Eq(n.Shape()) || c.Dtype() != dt || c.IsScalar() {
			return false
		}
	}
	return true
}

type probeKey struct {
	dims  [2]int
	dtype tensor.Dtype
}

// probeAdd returns the op gorgonia.Add gives a + b for tensors of a's and b's rank and element
// type, built once per kind on a graph of its own.
func probeAdd(probes map[probeKey]gorgonia.Op, a, b *gorgonia.Node) (gorgonia.Op, error) {
	k := probeKey{[2]int{a.Dims(), b.Dims()}, a.Dtype()}
	if op, ok := probes[k]; ok {
		return op, nil
	}
	pg := gorgonia.NewGraph()
	x := gorgonia.NewTensor(pg, a.Dtype(), a.Dims(), gorgonia.WithShape(a.Shape()...))
	y := gorgonia.NewTensor(pg, b.Dtype(), b.Dims(), gorgonia.WithShape(b.Shape()...))
	s, err := gorgonia.Add(x, y)
	if err != nil {
		return nil, fmt.Errorf("gradient sums: probe add of %v and %v: %w", a.Shape(), b.Shape(), err)
	}
	probes[k] = s.Op()
	return s.Op(), nil
}

// sameOp reports whether two ops are equal values (false where they cannot be compared).
func sameOp(a, b gorgonia.Op) (eq bool) {
	defer func() {
		if recover() != nil {
			eq = false
		}
	}()
	return a == b
}

// children returns n's inputs in argument order.
func children(g *gorgonia.ExprGraph, n *gorgonia.Node) []*gorgonia.Node {
	var in []*gorgonia.Node
	it := g.From(n.ID())
	for it.Next() {
		in = append(in, it.Node().(*gorgonia.Node))
	}
	return in
}
