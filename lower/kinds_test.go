package lower

import (
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestKinds checks that every element-wise operator, built as a model or gorgonia.Grad would,
// is recognised as itself and as nothing else, with tensor and scalar operands, and that
// constants, inputs and other ops are told apart.
func TestKinds(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		g := gorgonia.NewGraph()
		a := gorgonia.NewMatrix(g, dt, gorgonia.WithShape(3, 2), gorgonia.WithName("a"))
		b := gorgonia.NewMatrix(g, dt, gorgonia.WithShape(3, 2), gorgonia.WithName("b"))
		s := gorgonia.NewScalar(g, dt, gorgonia.WithName("s"))
		k := NewKinds()
		for _, c := range binaryKinds {
			for _, in := range [][2]*gorgonia.Node{{a, b}, {a, s}, {s, a}} {
				n, err := c.op(in[0], in[1])
				if err != nil {
					t.Fatal(err)
				}
				if got := k.Of(g, n); got != c.kind {
					t.Errorf("%v %s of %v and %v: recognised as %q", dt, c.kind, in[0].Shape(), in[1].Shape(), got)
				}
			}
		}
		for _, c := range unaryKinds {
			n, err := c.op(a)
			if err != nil {
				t.Fatal(err)
			}
			if got := k.Of(g, n); got != c.kind {
				t.Errorf("%v %s: recognised as %q", dt, c.kind, got)
			}
		}
		var v any = 1.0
		if dt == tensor.Float32 {
			v = float32(1)
		}
		one := gorgonia.NewConstant(v)
		ten := gorgonia.NewConstant(tensor.New(tensor.WithShape(3, 2), tensor.Of(dt)))
		sq, err := gorgonia.Square(a)
		if err != nil {
			t.Fatal(err)
		}
		// a constant joins the graph when used: take the nodes the graph holds
		m1, err := gorgonia.Mul(s, one)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := gorgonia.HadamardProd(a, ten)
		if err != nil {
			t.Fatal(err)
		}
		one, ten = Children(g, m1)[1], Children(g, m2)[1]
		for _, c := range []struct {
			n    *gorgonia.Node
			want string
		}{{one, KindConst}, {ten, KindConst}, {a, ""}, {sq, ""}} {
			if got := k.Of(g, c.n); got != c.want {
				t.Errorf("%v %v: recognised as %q, want %q", dt, c.n, got, c.want)
			}
		}
	}
}
