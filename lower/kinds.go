package lower

import (
	"fmt"
	"reflect"
	"strings"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Gorgonia's element-wise operators as the project names them. Models reach them through the
// builder (Tanh, Sigmoid, Exp, Sqrt, …) and gorgonia.Grad adds them when it differentiates those
// or adds gradient contributions up (sqrt's gradient is gradY ÷ (2 ⊙ y): a ⊙ with a scalar
// constant on the left, and a ÷).
const (
	KindAdd     = "+"
	KindSub     = "-"
	KindMul     = "⊙"
	KindDiv     = "÷"
	KindTanh    = "tanh"
	KindSigmoid = "sigmoid"
	KindExp     = "exp"
	KindAbs     = "abs"
	KindSqrt    = "sqrt"
	KindConst   = "const" // a constant (scalar or tensor)
)

var (
	binaryKinds = []struct {
		kind string
		op   func(a, b *gorgonia.Node) (*gorgonia.Node, error)
	}{{KindAdd, gorgonia.Add}, {KindSub, gorgonia.Sub}, {KindMul, gorgonia.HadamardProd}, {KindDiv, gorgonia.HadamardDiv}}
	unaryKinds = []struct {
		kind string
		op   func(a *gorgonia.Node) (*gorgonia.Node, error)
	}{{KindTanh, gorgonia.Tanh}, {KindSigmoid, gorgonia.Sigmoid}, {KindExp, gorgonia.Exp}, {KindAbs, gorgonia.Abs},
		{KindSqrt, gorgonia.Sqrt}}
)

// Kinds recognises Gorgonia's own ops in a graph without looking at Gorgonia's internal type
// names or strings: it builds each candidate through Gorgonia's exported API (gorgonia.Add,
// gorgonia.Tanh, gorgonia.NewConstant, …) on a probe graph whose inputs have the node's input
// types, and compares the ops as values (constants by their op's type, since the value is part
// of the op). Probes are built once per candidate and input signature. The zero value is not
// ready: use NewKinds.
type Kinds struct {
	probes map[string]gorgonia.Op
	consts []reflect.Type
}

// NewKinds returns a recogniser with the constant op types probed.
func NewKinds() *Kinds {
	k := &Kinds{probes: map[string]gorgonia.Op{}}
	g := gorgonia.NewGraph()
	for _, v := range []any{float32(1), tensor.New(tensor.WithShape(1), tensor.Of(tensor.Float32))} {
		k.consts = append(k.consts, reflect.TypeOf(gorgonia.NewConstant(v, gorgonia.In(g)).Op()))
	}
	return k
}

// Of returns the kind of n's op (one of the Kind constants), or "" when n is an input or its op
// is not one of Gorgonia's element-wise operators or constants.
func (k *Kinds) Of(g *gorgonia.ExprGraph, n *gorgonia.Node) string {
	op := n.Op()
	if op == nil {
		return ""
	}
	in := children(g, n)
	if len(in) == 0 {
		for _, t := range k.consts {
			if reflect.TypeOf(op) == t {
				return KindConst
			}
		}
		return ""
	}
	switch len(in) {
	case 1:
		for _, c := range unaryKinds {
			if p := k.probe(c.kind, in, func(x []*gorgonia.Node) (*gorgonia.Node, error) { return c.op(x[0]) }); p != nil && sameOp(op, p) {
				return c.kind
			}
		}
	case 2:
		for _, c := range binaryKinds {
			if p := k.probe(c.kind, in, func(x []*gorgonia.Node) (*gorgonia.Node, error) { return c.op(x[0], x[1]) }); p != nil && sameOp(op, p) {
				return c.kind
			}
		}
	}
	return ""
}

// probe returns the op build makes for inputs of in's types on a graph of its own, or nil where
// Gorgonia refuses those inputs.
func (k *Kinds) probe(kind string, in []*gorgonia.Node, build func([]*gorgonia.Node) (*gorgonia.Node, error)) gorgonia.Op {
	var key strings.Builder
	key.WriteString(kind)
	for _, c := range in {
		fmt.Fprintf(&key, "|%v %v %t", c.Dtype(), c.Shape(), c.IsScalar())
	}
	if op, ok := k.probes[key.String()]; ok {
		return op
	}
	pg := gorgonia.NewGraph()
	xs := make([]*gorgonia.Node, len(in))
	for i, c := range in {
		if c.IsScalar() {
			xs[i] = gorgonia.NewScalar(pg, c.Dtype())
		} else {
			xs[i] = gorgonia.NewTensor(pg, c.Dtype(), c.Dims(), gorgonia.WithShape(c.Shape()...))
		}
	}
	var op gorgonia.Op
	if out, err := build(xs); err == nil {
		op = out.Op()
	}
	k.probes[key.String()] = op
	return op
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

// children returns n's inputs in argument order (a node used twice appears twice).
func children(g *gorgonia.ExprGraph, n *gorgonia.Node) []*gorgonia.Node {
	var in []*gorgonia.Node
	it := g.From(n.ID())
	for it.Next() {
		in = append(in, it.Node().(*gorgonia.Node))
	}
	return in
}

// Children returns n's inputs in argument order (a node used twice appears twice).
func Children(g *gorgonia.ExprGraph, n *gorgonia.Node) []*gorgonia.Node { return children(g, n) }
