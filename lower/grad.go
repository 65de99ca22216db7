package lower

import (
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Sums records the gradient sums Grad added to a graph, by node id: the element-wise a + b
// nodes with which gorgonia.Grad adds up the gradient contributions of a node that has several
// consumers (a chain a + b, then + c, … for more than two). Compile runs them as sum steps.
type Sums map[int64]bool

// Grad is gorgonia.Grad(cost, wrt...) that also returns the gradient sums it added to cost's
// graph: the nodes Grad added whose op Kinds recognises as Gorgonia's a + b and whose inputs
// are float tensors of its shape.
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
	kinds := NewKinds()
	for _, n := range g.AllNodes() {
		if before[n.ID()] || n.Op() == nil {
			continue
		}
		if in := children(g, n); len(in) == 2 && sumShaped(n, in) && kinds.Of(g, n) == KindAdd {
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
