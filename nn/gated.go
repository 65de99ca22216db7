package nn

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GatedEps is added to the gate sum in GatedAggregate (REFERENCE §2.1).
const GatedEps = 1e-6

// GatedAggregate is GatedGCN's edge-gated mean, fused into one op: with η = σ(ê) per edge,
//
//	out_i = Σ_{m: dst[m]=i} η_m ⊙ bh[src[m]]  ⊘  (Σ_{m: dst[m]=i} η_m + 1e-6)
//
// for ê [M, d] and bh [N, d]; out is [nodes, d]. Padding edges (src or dst -1) are skipped; a
// node without in-edges gets 0.
func GatedAggregate(ehat, bh *gorgonia.Node, src, dst *Index, nodes int) (*gorgonia.Node, error) {
	if ehat.Dims() != 2 || bh.Dims() != 2 || ehat.Shape()[1] != bh.Shape()[1] || ehat.Shape()[0] != src.Len() || src.Len() != dst.Len() {
		return nil, fmt.Errorf("gated aggregate: ê %v, bh %v, %d sources, %d destinations", ehat.Shape(), bh.Shape(), src.Len(), dst.Len())
	}
	st := &gatedState{src: src, dst: dst, nodes: nodes}
	op := newFuncOp(fmt.Sprintf("GatedAggregate{%d→%d}", src.Len(), nodes), 2, rowsOf(nodes, 0),
		gatedForward[float64](st), gatedForward[float32](st))
	op.dev = DeviceOp{Src: src, Dst: dst, Rows: nodes, State: st}
	op.check = func(s []tensor.Shape) error {
		if err := src.check(s[1][0]); err != nil {
			return err
		}
		return dst.check(nodes)
	}
	op.grad = func(in gorgonia.Nodes, out, g *gorgonia.Node) (gorgonia.Nodes, error) {
		// One pass computes both gradients: dê is the op's output, dbh is kept for a second op
		// that reads it after (it takes dê as input only to run after it).
		de := newFuncOp("GatedAggregateGrad{ê}", 3, rowsOf(src.Len(), 0), gatedBackward[float64](st), gatedBackward[float32](st))
		de.check = st.ready
		de.dev = DeviceOp{Src: src, Dst: dst, Rows: nodes, State: st}
		dE, err := apply(de, in[1], out, g)
		if err != nil {
			return nil, err
		}
		db := newFuncOp("GatedAggregateGrad{bh}", 2, sameAs(1), takeOther[float64](&st.dbh), takeOther[float32](&st.dbh))
		db.dev = DeviceOp{Src: src, Dst: dst, Rows: nodes, State: st, Which: 1}
		dB, err := apply(db, dE, in[1])
		if err != nil {
			return nil, err
		}
		return gorgonia.Nodes{dE, dB}, nil
	}
	n, err := gorgonia.ApplyOp(op, ehat, bh)
	if err != nil {
		return nil, fmt.Errorf("gated aggregate: %w", err)
	}
	return n, nil
}

// gatedState keeps, from the forward pass, η [M, d] and the denominators D = Σ η + eps
// [nodes, d]; from the backward pass, dbh. Buffers are []float32 or []float64.
type gatedState struct {
	src, dst   *Index
	nodes      int
	eta, den   any
	gd, dbh    any
	fwdM, fwdD int // shape of the last forward pass's ê
}

// ready checks that a forward pass of the gradient's shape ran (inputs bh, out, g).
func (st *gatedState) ready(s []tensor.Shape) error {
	if st.fwdM != st.src.Len() || st.fwdD != s[0][1] {
		return fmt.Errorf("no forward pass of width %d to differentiate", s[0][1])
	}
	return nil
}

// gatedForward: η = σ(ê) (vectorised), then per column range, num and den summed over in-edges
// (num in out), out = num/den.
func gatedForward[T Float](st *gatedState) kernel[T] {
	return func(out []T, in [][]T, s []tensor.Shape) {
		e, bh := in[0], in[1]
		m, d := s[0][0], s[0][1]
		st.fwdM, st.fwdD = m, d
		eta := grow[T](st.eta, m*d)
		den := grow[T](st.den, st.nodes*d)
		st.eta, st.den = eta, den
		sigmoidInto(eta, e)
		src, dst := st.src.Idx, st.dst.Idx
		parallelCols(d, m, func(c0, c1 int) {
			for i := 0; i < st.nodes; i++ {
				clear(out[i*d+c0 : i*d+c1])
				de := den[i*d+c0 : i*d+c1]
				for c := range de {
					de[c] = GatedEps
				}
			}
			for k, s := range src {
				t := dst[k]
				if s < 0 || t < 0 {
					continue
				}
				gatedFwdRow(out[int(t)*d+c0:int(t)*d+c1], den[int(t)*d+c0:int(t)*d+c1], eta[k*d+c0:k*d+c1], bh[int(s)*d+c0:int(s)*d+c1])
			}
			for i := 0; i < st.nodes; i++ {
				o := out[i*d+c0 : i*d+c1]
				de := den[i*d+c0 : i*d+c0+len(o)]
				for c := range o {
					o[c] /= de[c]
				}
			}
		})
	}
}

// gatedBackward takes bh, the forward output o and its gradient g. With q = η_m ⊙ g_t ⊘ D_t for
// edge m = (s → t): dê_m = q ⊙ (1 − η_m) ⊙ (bh_s − o_t), and dbh_s = Σ_m q (kept in st.dbh).
func gatedBackward[T Float](st *gatedState) kernel[T] {
	return func(dE []T, in [][]T, s []tensor.Shape) {
		bh, o, g := in[0], in[1], in[2]
		n, d := s[0][0], s[0][1]
		eta, den := st.eta.([]T), st.den.([]T)
		gd := grow[T](st.gd, st.nodes*d)
		dB := grow[T](st.dbh, n*d)
		st.gd, st.dbh = gd, dB
		for i, v := range g {
			gd[i] = v / den[i]
		}
		src, dst := st.src.Idx, st.dst.Idx
		parallelCols(d, len(src), func(c0, c1 int) {
			for i := 0; i < n; i++ {
				clear(dB[i*d+c0 : i*d+c1])
			}
			for k, s := range src {
				t := dst[k]
				de := dE[k*d+c0 : k*d+c1]
				if s < 0 || t < 0 {
					clear(de)
					continue
				}
				so, to := int(s)*d, int(t)*d
				gatedBwdRow(de, dB[so+c0:so+c1], eta[k*d+c0:k*d+c1], gd[to+c0:to+c1], bh[so+c0:so+c1], o[to+c0:to+c1])
			}
		})
	}
}
