package cuda

import (
	"fmt"
	"math"
	"strings"
)

// The launchers below are the GPU side of the project's ops (see ops/doc.go for shapes and the
// contract: every op fully overwrites its outputs and never writes its inputs). Arguments are
// device buffers of float32 (index buffers of int32, -1 meaning "no row") and sizes; an
// optional buffer may be 0. Each launcher validates sizes and buffers, queues its kernels on
// the device's stream and returns.

// Gather writes out [n, d] = w[i]·x[idx[i], :] for x [rows, d] (zero rows where idx is -1; w
// optional). CPU twin: ops.Gather / kern.GatherRows. Its gradient is ScatterAdd.
func (k *Kernels) Gather(out, x, idx, w DevPtr, n, rows, d int) error {
	c := k.check("gather").sizes("n, rows, d", n, rows, d).
		buf("out", out, n*d).buf("idx", idx, n).opt("w", w, n).buf("x", x, rows*d)
	return k.run(c, func() error {
		return k.launch("gather_rows", k.grid1(int64(n)*int64(d)), block1, aP(out), aP(x), aP(idx), aP(w), aI(n), aI(rows), aI(d))
	})
}

// ScatterAdd writes out [rows, d] = Σ_{i: idx[i]=r} w[i]·x[i, :] for x [n, d] (entries with
// idx -1 skipped; w optional). CPU twin: ops.ScatterAdd / kern.ScatterAddRows. Its gradient is
// Gather.
func (k *Kernels) ScatterAdd(out, x, idx, w DevPtr, n, rows, d int) error {
	c := k.check("scatter-add").sizes("n, rows, d", n, rows, d).
		buf("out", out, rows*d).buf("x", x, n*d).buf("idx", idx, n).opt("w", w, n)
	return k.run(c, func() error {
		if err := k.d.fillLocked(out, rows*d, 0); err != nil {
			return err
		}
		return k.scatterAddLocked(out, x, idx, w, n, rows, d)
	})
}

// ScatterAddInto is ScatterAdd adding into out, which the caller filled (with zeros, for
// ScatterAdd's result).
func (k *Kernels) ScatterAddInto(out, x, idx, w DevPtr, n, rows, d int) error {
	c := k.check("scatter-add into").sizes("n, rows, d", n, rows, d).
		buf("out", out, rows*d).buf("x", x, n*d).buf("idx", idx, n).opt("w", w, n)
	return k.run(c, func() error { return k.scatterAddLocked(out, x, idx, w, n, rows, d) })
}

func (k *Kernels) scatterAddLocked(out, x, idx, w DevPtr, n, rows, d int) error {
	return k.launch("scatter_add_rows", k.grid1(int64(n)*int64(d)), block1, aP(out), aP(x), aP(idx), aP(w), aI(n), aI(rows), aI(d))
}

// EdgeSumBackward writes the gradients of EdgeSum's hs and ht, ds and dt [rows, d], from the
// output gradient g [m, d]: ScatterAdd of g along src and along dst, in one pass over g.
func (k *Kernels) EdgeSumBackward(ds, dt, g, src, dst DevPtr, m, rows, d int) error {
	c := k.check("edge sum backward").sizes("m, rows, d", m, rows, d).buf("ds", ds, rows*d).buf("dt", dt, rows*d).
		buf("g", g, m*d).buf("src", src, m).buf("dst", dst, m)
	return k.run(c, func() error {
		if err := k.fill2(ds, 0, dt, 0, rows*d); err != nil {
			return err
		}
		return k.scatterPairLocked(ds, dt, g, src, dst, m, rows, d)
	})
}

// EdgeSumBackwardInto is EdgeSumBackward adding into ds and dt, which the caller filled (with
// zeros, for EdgeSumBackward's results).
func (k *Kernels) EdgeSumBackwardInto(ds, dt, g, src, dst DevPtr, m, rows, d int) error {
	c := k.check("edge sum backward into").sizes("m, rows, d", m, rows, d).buf("ds", ds, rows*d).buf("dt", dt, rows*d).
		buf("g", g, m*d).buf("src", src, m).buf("dst", dst, m)
	return k.run(c, func() error { return k.scatterPairLocked(ds, dt, g, src, dst, m, rows, d) })
}

func (k *Kernels) scatterPairLocked(ds, dt, g, src, dst DevPtr, m, rows, d int) error {
	return k.launch("scatter_add_pair", k.grid1(int64(m)*int64(d)), block1, aP(ds), aP(dt), aP(g), aP(src), aP(dst), aI(m), aI(rows), aI(d))
}

// fill2 queues a = va and b = vb over n elements each in one launch. The caller holds the
// device.
func (k *Kernels) fill2(a DevPtr, va float32, b DevPtr, vb float32, n int) error {
	if n <= 0 {
		return nil
	}
	return k.launch("fill2", k.grid1(int64(n)), block1, aP(a), aF(va), aP(b), aF(vb), aI(n))
}

// EdgeSum writes out [m, d] = e + hs[src] + ht[dst] row by row for e [m, d] and hs, ht
// [rows, d] (an index of -1 adds nothing). CPU twin: ops.EdgeSum. Its gradients are the output
// gradient for e and ScatterAdd along src and along dst for hs and ht.
func (k *Kernels) EdgeSum(out, e, hs, ht, src, dst DevPtr, m, rows, d int) error {
	return k.EdgeSumBiased(out, e, 0, hs, 0, ht, 0, src, dst, m, rows, d, false, nil)
}

// EdgeGate is a gated aggregation of the edge sum's output ê that the edge sum's pass computes
// too (GatedGCN's ê = Ce + Dh_src + Eh_dst, gated along the same src and dst: the executor's
// Plan.foldGate): as it stores each element of ê it adds σ(ê)·Bh[src] into Out[dst] and σ(ê)
// into Den[dst], as GatedAggregate's pass over ê would (with GatedBufs.Prefilled and Raw). The
// caller fills Out [Nodes, d] with 0 and Den [Nodes, d] with GatedEps first, and divides
// later (AddBiasedDiv); Bh is [NBh, d], BhBias a bias [d] folded into it or 0. ê's value is the
// one stored (rounded, with outBF16).
type EdgeGate struct {
	Bh, BhBias, Out, Den DevPtr
	NBh, Nodes           int
}

// check adds the gate's buffers to c (nothing for no gate).
func (g *EdgeGate) check(c *check, d int) {
	if g != nil {
		c.sizes("gate NBh, Nodes", g.NBh, g.Nodes).buf("gate Bh", g.Bh, g.NBh*d).buf("gate Out", g.Out, g.Nodes*d).
			buf("gate Den", g.Den, g.Nodes*d).opt("gate BhBias", g.BhBias, d)
	}
}

// args are the gate's kernel arguments (gout, gden, gbh, gbb, nbh, nodes): null pointers for
// no gate.
func (g *EdgeGate) args() []arg {
	if g == nil {
		return []arg{aP(0), aP(0), aP(0), aP(0), aI(0), aI(0)}
	}
	return []arg{aP(g.Out), aP(g.Den), aP(g.Bh), aP(g.BhBias), aI(g.NBh), aI(g.Nodes)}
}

// EdgeSumBiased is EdgeSum of operands that each may carry a bias [d] (be, bs, bt; 0 for none)
// added to them first, bit for bit as AddBias before EdgeSum would give. With outBF16, out is
// stored in bf16 (m·d elements of 2 bytes, each the float32 sum rounded to nearest even:
// RoundBF16's bits; train.precision bf16). With gate, the gated aggregation of out is added
// into the gate's sums in the same pass, on gated_edges's grid (so in its order on the
// emulator's deterministic schedule: the same bits as EdgeSumBiased, then GatedAggregate).
func (k *Kernels) EdgeSumBiased(out, e, be, hs, bs, ht, bt, src, dst DevPtr, m, rows, d int, outBF16 bool, gate *EdgeGate) error {
	s := edgeSumOperands{out, e, be, hs, bs, ht, bt, src, dst, m, rows, d, outBF16, gate}
	return k.run(s.check(k.check("edge sum")), func() error {
		return k.launch("edge_sum", k.grid1(int64(m)*int64(d)), block1, s.args()...)
	})
}

// edgeSumOperands are the arguments of EdgeSumBiased and EdgeSumBiasedStats, in the order of
// the edge_sum kernels' parameters.
type edgeSumOperands struct {
	out, e, be, hs, bs, ht, bt, src, dst DevPtr
	m, rows, d                           int
	outBF16                              bool
	gate                                 *EdgeGate
}

// check adds the operands' sizes and buffers to c.
func (s edgeSumOperands) check(c *check) *check {
	c.sizes("m, rows, d", s.m, s.rows, s.d).stored("out", s.out, s.m*s.d, s.outBF16).buf("e", s.e, s.m*s.d).
		buf("hs", s.hs, s.rows*s.d).buf("ht", s.ht, s.rows*s.d).buf("src", s.src, s.m).buf("dst", s.dst, s.m).
		opt("be", s.be, s.d).opt("bs", s.bs, s.d).opt("bt", s.bt, s.d)
	s.gate.check(c, s.d)
	return c
}

// args are the edge_sum kernels' arguments (out … obf, then the gate's).
func (s edgeSumOperands) args() []arg {
	return append([]arg{aP(s.out), aP(s.e), aP(s.be), aP(s.hs), aP(s.bs), aP(s.ht), aP(s.bt), aP(s.src), aP(s.dst),
		aI(s.m), aI(s.rows), aI(s.d), aI(btoi(s.outBF16))}, s.gate.args()...)
}

// AddBiased writes out [rows, d] = (a + ba) + (b + bb), each bias [d] optional (0 for none),
// bit for bit as AddBias on the operands before Add would give.
func (k *Kernels) AddBiased(out, a, ba, b, bb DevPtr, rows, d int) error {
	return k.AddBiasedDiv(out, a, ba, b, bb, 0, rows, d)
}

// AddBiasedDiv is AddBiased whose second operand is b / db (db [rows, d], 0 for none) before
// its bias: b holds a gated aggregation's undivided sums and db their denominators, and the
// bits are those of the division (GatedAggregate's), then AddBiased.
func (k *Kernels) AddBiasedDiv(out, a, ba, b, bb, db DevPtr, rows, d int) error {
	c := k.check("add (biased)").sizes("rows, d", rows, d).buf("out", out, rows*d).buf("a", a, rows*d).buf("b", b, rows*d).
		opt("ba", ba, d).opt("bb", bb, d).opt("db", db, rows*d)
	return k.run(c, func() error {
		return k.launch("add_biased", k.grid1(int64(rows)*int64(d)), block1, aP(out), aP(a), aP(ba), aP(b), aP(bb), aP(db), aI(rows), aI(d))
	})
}

// SegmentSoftmax writes y [m, h] = the softmax of s [m, h] over the edges sharing a
// destination seg[i] < nodes (zero rows for seg -1). CPU twin: ops.SegmentSoftmax.
func (k *Kernels) SegmentSoftmax(y, s, seg DevPtr, m, h, nodes int) error {
	c := k.check("segment softmax").sizes("m, h, nodes", m, h, nodes).
		buf("y", y, m*h).buf("s", s, m*h).buf("seg", seg, m)
	return k.run(c, func() error {
		if m*h == 0 {
			return nil
		}
		acc, free, err := k.scratch(2 * max(nodes*h, 1))
		if err != nil {
			return err
		}
		defer free()
		mx, sum := acc, acc+DevPtr(4*max(nodes*h, 1))
		if err := k.d.fillLocked(mx, nodes*h, math.Float32bits(float32(math.Inf(-1)))); err != nil {
			return err
		}
		if err := k.d.fillLocked(sum, nodes*h, 0); err != nil {
			return err
		}
		g := k.grid1(int64(m) * int64(h))
		if err := k.launch("seg_softmax_max", g, block1, aP(mx), aP(s), aP(seg), aI(m), aI(h), aI(nodes)); err != nil {
			return err
		}
		if err := k.launch("seg_softmax_exp", g, block1, aP(y), aP(sum), aP(s), aP(mx), aP(seg), aI(m), aI(h), aI(nodes)); err != nil {
			return err
		}
		return k.launch("seg_softmax_div", g, block1, aP(y), aP(sum), aP(seg), aI(m), aI(h), aI(nodes))
	})
}

// SegmentSoftmaxBackward writes dx = y ⊙ (dy − Σ_segment y ⊙ dy) for the forward output y.
func (k *Kernels) SegmentSoftmaxBackward(dx, y, dy, seg DevPtr, m, h, nodes int) error {
	c := k.check("segment softmax backward").sizes("m, h, nodes", m, h, nodes).
		buf("dx", dx, m*h).buf("y", y, m*h).buf("dy", dy, m*h).buf("seg", seg, m)
	return k.run(c, func() error {
		if m*h == 0 {
			return nil
		}
		dot, free, err := k.scratch(max(nodes*h, 1))
		if err != nil {
			return err
		}
		defer free()
		if err := k.d.fillLocked(dot, nodes*h, 0); err != nil {
			return err
		}
		g := k.grid1(int64(m) * int64(h))
		if err := k.launch("seg_softmax_bwd_dot", g, block1, aP(dot), aP(y), aP(dy), aP(seg), aI(m), aI(h), aI(nodes)); err != nil {
			return err
		}
		return k.launch("seg_softmax_bwd", g, block1, aP(dx), aP(y), aP(dy), aP(dot), aP(seg), aI(m), aI(h), aI(nodes))
	})
}

// SegmentMax writes out [nodes, d] = the maximum of x [m, d] over the edges sharing a
// destination seg[i] < nodes (seg -1: padding, ignored; a node without edges gets 0), and arg
// [nodes, d] (int32) = the arg-max edge, the lowest among ties (-1 for a node without edges),
// which SegmentMaxBackward reads. A NaN propagates (it wins, and is its column's arg-max).
// Integer atomics only: deterministic. CPU twin: ops.SegmentMax / kern.SegmentMaxRows.
func (k *Kernels) SegmentMax(out, arg, x, seg DevPtr, m, d, nodes int) error {
	c := k.check("segment max").sizes("m, d, nodes", m, d, nodes).
		buf("out", out, nodes*d).buf("arg", arg, nodes*d).buf("x", x, m*d).buf("seg", seg, m)
	return k.run(c, func() error {
		if nodes*d == 0 {
			return nil
		}
		if m == 0 { // no edges: every node is empty
			if err := k.d.fillLocked(out, nodes*d, 0); err != nil {
				return err
			}
			return k.d.fillLocked(arg, nodes*d, math.MaxUint32) // -1
		}
		key, free, err := k.scratch(nodes * d)
		if err != nil {
			return err
		}
		defer free()
		if err := k.d.fillLocked(key, nodes*d, 0x80000000); err != nil { // RW_MAX_EMPTY
			return err
		}
		if err := k.d.fillLocked(arg, nodes*d, math.MaxInt32); err != nil {
			return err
		}
		g := k.grid1(int64(m) * int64(d))
		if err := k.launch("seg_max_keys", g, block1, aP(key), aP(x), aP(seg), aI(m), aI(d), aI(nodes)); err != nil {
			return err
		}
		if err := k.launch("seg_max_arg", g, block1, aP(arg), aP(key), aP(x), aP(seg), aI(m), aI(d), aI(nodes)); err != nil {
			return err
		}
		return k.launch("seg_max_out", k.grid1(int64(nodes)*int64(d)), block1, aP(out), aP(arg), aP(key), aP(x), aI(nodes), aI(d))
	})
}

// SegmentMaxBackward writes dx [m, d]: g [nodes, d] at the arg-max edge of each (node, column)
// (arg from SegmentMax on the same seg), 0 elsewhere and on padding edges. No atomics.
// CPU twin: kern.SegmentMaxGradRows.
func (k *Kernels) SegmentMaxBackward(dx, g, arg, seg DevPtr, m, d, nodes int) error {
	c := k.check("segment max backward").sizes("m, d, nodes", m, d, nodes).
		buf("dx", dx, m*d).buf("g", g, nodes*d).buf("arg", arg, nodes*d).buf("seg", seg, m)
	return k.run(c, func() error {
		if m*d == 0 {
			return nil
		}
		return k.launch("seg_max_bwd", k.grid1(int64(m)*int64(d)), block1, aP(dx), aP(g), aP(arg), aP(seg), aI(m), aI(d), aI(nodes))
	})
}

// BNEps and BNMomentum are batch norm's constants (nn.BNEps, nn.BNMomentum).
const (
	BNEps      = 1e-5
	BNMomentum = 0.1
)

// BatchNormBufs are the buffers of one masked batch norm: inputs X [rows, d], Gamma, Beta [d],
// Keep [rows] (int32, non-zero for real rows); state RunMean, RunVar [d] (updated in
// training); outputs Out [rows, d], Mean, InvStd [d]. The backward pass reads X, Mean and
// InvStd, and recomputes the normalised x̂ = (X − Mean)·InvStd from them where it needs it, with
// the forward pass's bits (rw_bn_xhat), rather than the forward pass storing a [rows, d] x̂.
type BatchNormBufs struct {
	X, Gamma, Beta, Keep DevPtr
	RunMean, RunVar      DevPtr
	Out                  DevPtr
	Mean, InvStd         DevPtr
	Res                  DevPtr // BatchNormRelu: the residual added after the ReLU (0 for none)
	// StatsDone: in training, the producer of X computed Mean, InvStd and the running
	// statistics in its own pass (EdgeSumBiasedStats, AddBiasedDivStats), so only the
	// normalising pass runs.
	StatsDone bool
	// Tot, where given, makes the backward write dγ, dβ and its column sums into Tot (3·d
	// float64: Σ dy, Σ dy·x̂ and the count of kept rows, TotElems(d) float32 elements) and no
	// dx: the gated aggregation's gradient computes dx where it reads it (GatedBufs.BN).
	Tot DevPtr
	// XBF16: X is stored in bf16 (2 bytes an element: EdgeSumBiased's outBF16); every other
	// buffer, and every pass's arithmetic, stays float32.
	XBF16 bool
}

// checkBackward adds what a batch norm's backward reads to c, naming each buffer with prefix:
// its output gradient dy and X [rows, d], Mean, InvStd, Gamma [d], Keep [rows], and Beta [d]
// for the ReLU's gate. It returns the Beta the kernels take (0 without the ReLU).
func (b BatchNormBufs) checkBackward(c *check, prefix string, dy DevPtr, rows, d int, relu bool) DevPtr {
	c.buf(prefix+"dy", dy, rows*d).stored(prefix+"X", b.X, rows*d, b.XBF16).buf(prefix+"Mean", b.Mean, d).buf(prefix+"InvStd", b.InvStd, d).
		buf(prefix+"Gamma", b.Gamma, d).buf(prefix+"Keep", b.Keep, rows)
	if !relu {
		return 0
	}
	c.buf(prefix+"Beta", b.Beta, d)
	return b.Beta
}

// TotElems is the size of a batch norm's column sums (BatchNormBufs.Tot) in float32 elements.
func TotElems(d int) int { return 6 * d }

func (b BatchNormBufs) check(c *check, rows, d int) *check {
	return c.sizes("rows, d", rows, d).stored("X", b.X, rows*d, b.XBF16).buf("Gamma", b.Gamma, d).buf("Beta", b.Beta, d).
		buf("Keep", b.Keep, rows).buf("RunMean", b.RunMean, d).buf("RunVar", b.RunVar, d).
		buf("Out", b.Out, rows*d).buf("Mean", b.Mean, d).buf("InvStd", b.InvStd, d)
}

// BatchNorm is the forward pass of ops.BatchNorm: in training, statistics of the kept rows and
// a running-statistics update; in evaluation, the running statistics. The caller checks that
// training batches have at least 2 kept rows, as the CPU op does (it has the mask on the host).
func (k *Kernels) BatchNorm(b BatchNormBufs, rows, d int, training bool) error {
	return k.batchNorm("batch norm", b, rows, d, training, false)
}

// BatchNormRelu is the forward pass of ops.BatchNormRelu: BatchNorm, then out = ReLU(out) +
// b.Res (when b.Res is given), in the normalising pass itself.
func (k *Kernels) BatchNormRelu(b BatchNormBufs, rows, d int, training bool) error {
	return k.batchNorm("batch norm ReLU", b, rows, d, training, true)
}

func (k *Kernels) batchNorm(op string, b BatchNormBufs, rows, d int, training, relu bool) error {
	c := b.check(k.check(op), rows, d).opt("Res", b.Res, rows*d)
	return k.run(c, func() error {
		if d == 0 {
			return nil
		}
		var err error
		switch {
		case training && b.StatsDone:
		case training:
			err = k.bnTrainStats(b, rows, d)
		default:
			err = k.launch("bn_eval_stats", k.grid1(int64(d)), block1, aP(b.Mean), aP(b.InvStd), aP(b.RunMean), aP(b.RunVar), aI(d), aF(BNEps))
		}
		if err != nil {
			return err
		}
		return k.launch("bn_apply", k.grid1(int64(rows)*int64(d)), block1, aP(b.Out), aP(b.X), aP(b.Mean), aP(b.InvStd),
			aP(b.Gamma), aP(b.Beta), aP(b.Keep), aP(b.Res), aI(rows), aI(d), aI(btoi(relu)), aI(btoi(b.XBF16)))
	})
}

// BatchNormBackward writes dx [rows, d], dgamma, dbeta [d] from dy and the forward pass's
// buffers (b.X, b.Mean, b.InvStd, b.Gamma, b.Keep; b.Beta for the ReLU): one launch of bn_backward with one row chunk, else bn_backward (the sums, combined
// by the last block of each column tile) and the element-wise bn_backward_dx.
func (k *Kernels) BatchNormBackward(dx, dgamma, dbeta, dy DevPtr, b BatchNormBufs, rows, d int, training bool) error {
	return k.batchNormBackward("batch norm backward", dx, dgamma, dbeta, dy, b, rows, d, training, false)
}

// BatchNormReluBackward is BatchNormBackward of ops.BatchNormRelu for the gradient g of its
// output: the ReLU's gradient (g where γ⊙x̂ + β > 0, else 0, from the forward pass's x̂ and
// b.Beta) is taken where the kernels read it instead of stored. The residual's gradient is g
// itself.
func (k *Kernels) BatchNormReluBackward(dx, dgamma, dbeta, g DevPtr, b BatchNormBufs, rows, d int, training bool) error {
	return k.batchNormBackward("batch norm ReLU backward", dx, dgamma, dbeta, g, b, rows, d, training, true)
}

func (k *Kernels) batchNormBackward(op string, dx, dgamma, dbeta, dy DevPtr, b BatchNormBufs, rows, d int, training, relu bool) error {
	c := k.check(op).sizes("rows, d", rows, d).buf("dgamma", dgamma, d).buf("dbeta", dbeta, d)
	beta := b.checkBackward(c, "", dy, rows, d, relu) // the ReLU's gate, for relu only
	sumsOnly := b.Tot != 0
	if sumsOnly {
		c.buf("Tot", b.Tot, TotElems(d))
	} else {
		c.buf("dx", dx, rows*d)
	}
	t := btoi(training)
	return k.run(c, func() error {
		if d == 0 {
			return nil
		}
		// part [chunks][3][d] and tot [3][d], doubles (see batchnorm.cu).
		r, err := k.colReduce(rows, d, 3)
		if err != nil {
			return err
		}
		defer r.free()
		tot := r.tot
		if sumsOnly {
			tot = b.Tot
		}
		if err := k.launch("bn_backward", r.grid, blockCol, aP(dx), aP(dgamma), aP(dbeta), aP(tot), aP(r.part), aP(r.count),
			aP(dy), aP(b.X), aP(b.Mean), aP(b.InvStd), aP(b.Gamma), aP(beta), aP(b.Keep), aI(rows), aI(d), aI(r.rpc), aI(t), aI(btoi(sumsOnly)), aI(btoi(b.XBF16))); err != nil {
			return err
		}
		if r.grid.y == 1 || sumsOnly {
			return nil // the block wrote dx as well, or the sums are for the gated aggregation's gradient
		}
		return k.launch("bn_backward_dx", k.grid1(int64(rows)*int64(d)), block1, aP(dx), aP(dy), aP(b.X), aP(b.Mean), aP(b.InvStd), aP(b.Gamma), aP(beta),
			aP(b.Keep), aP(r.tot), aI(rows), aI(d), aI(t), aI(btoi(b.XBF16)))
	})
}

// btoi is a kernel's int flag.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// BNStats are the buffers of a batch norm's training statistics that the producer of its
// input computes in its own pass: Mean and InvStd [d] (written), RunMean and RunVar [d]
// (updated), Keep [rows] (the kept rows). CPU twin: ops.BatchNorm's statistics.
type BNStats struct {
	Mean, InvStd, RunMean, RunVar, Keep DevPtr
}

func (st BNStats) check(c *check, rows, d int) *check {
	return c.buf("Mean", st.Mean, d).buf("InvStd", st.InvStd, d).buf("RunMean", st.RunMean, d).
		buf("RunVar", st.RunVar, d).buf("Keep", st.Keep, rows)
}

// EdgeSumBiasedStats is EdgeSumBiased (out [m, d]) that also takes the training statistics of
// the batch norm reading out over its kept rows, in the same pass: the bits of EdgeSumBiased,
// then BatchNorm's statistics (whose launch then only normalises: BatchNormBufs.StatsDone).
// With outBF16, out is stored in bf16 (as EdgeSumBiased's) and the statistics are those of the
// stored (rounded) values, as BatchNorm would take them from out. With gate, the gated
// aggregation of out is added into the gate's sums in the same pass (as EdgeSumBiased's), in
// the order of the statistics' grid: on the emulator's deterministic schedule the sums then
// differ from GatedAggregate's in the last bits (a float sum in another order), as any two
// runs' do on a GPU.
func (k *Kernels) EdgeSumBiasedStats(out, e, be, hs, bs, ht, bt, src, dst DevPtr, m, rows, d int, outBF16 bool, gate *EdgeGate, st BNStats) error {
	s := edgeSumOperands{out, e, be, hs, bs, ht, bt, src, dst, m, rows, d, outBF16, gate}
	return k.run(st.check(s.check(k.check("edge sum with batch-norm statistics")), m, d), func() error {
		return k.launchWithStats("edge_sum_stats", m, d, st, s.args()...)
	})
}

// AddBiasedDivStats is AddBiasedDiv (out [rows, d]) that also takes the training statistics of
// the batch norm reading out over its kept rows, in the same pass (as EdgeSumBiasedStats).
func (k *Kernels) AddBiasedDivStats(out, a, ba, b, bb, db DevPtr, rows, d int, st BNStats) error {
	c := k.check("add (biased) with batch-norm statistics").sizes("rows, d", rows, d).buf("out", out, rows*d).buf("a", a, rows*d).
		buf("b", b, rows*d).opt("ba", ba, d).opt("bb", bb, d).opt("db", db, rows*d)
	st.check(c, rows, d)
	return k.run(c, func() error {
		return k.launchWithStats("add_biased_stats", rows, d, st, aP(out), aP(a), aP(ba), aP(b), aP(bb), aP(db), aI(rows), aI(d))
	})
}

// launchWithStats launches a producer of fused.cu over rows × d with its own arguments, then
// those of the batch norm's statistics, on the grid of a column reduction (bn_train_stats's).
// The caller holds the device.
func (k *Kernels) launchWithStats(kernel string, rows, d int, st BNStats, args ...arg) error {
	if d == 0 {
		return nil
	}
	r, err := k.colReduce(rows, d, 3)
	if err != nil {
		return err
	}
	defer r.free()
	args = append(args, aP(st.Mean), aP(st.InvStd), aP(st.RunMean), aP(st.RunVar), aP(r.part), aP(r.count), aP(st.Keep),
		aI(r.rpc), aF(BNEps), aF(BNMomentum))
	return k.launch(kernel, r.grid, blockCol, args...)
}

// bnTrainStats queues the training statistics of BatchNorm: one launch of bn_train_stats,
// which takes each row chunk's count, mean and centred sum of squares in one pass and merges
// the chunks in the last block of each column tile (batchnorm.cu). The caller holds the
// device.
func (k *Kernels) bnTrainStats(b BatchNormBufs, rows, d int) error {
	// part [chunks][3][d], doubles: count, mean, centred sum of squares.
	r, err := k.colReduce(rows, d, 3)
	if err != nil {
		return err
	}
	defer r.free()
	return k.launch("bn_train_stats", r.grid, blockCol, aP(b.Mean), aP(b.InvStd), aP(b.RunMean), aP(b.RunVar), aP(r.part), aP(r.count),
		aP(b.X), aP(b.Keep), aI(rows), aI(d), aI(r.rpc), aF(BNEps), aF(BNMomentum), aI(btoi(b.XBF16)))
}

// LayerNormBufs are the buffers of one masked layer norm: inputs X [rows, d], Gamma, Beta [d],
// Keep [rows]; outputs Out, Xhat [rows, d], InvStd [rows] (kept for the backward pass).
type LayerNormBufs struct {
	X, Gamma, Beta, Keep DevPtr
	Out, Xhat, InvStd    DevPtr
}

// LayerNorm is the forward pass of ops.LayerNorm.
func (k *Kernels) LayerNorm(b LayerNormBufs, rows, d int) error {
	c := k.check("layer norm").sizes("rows, d", rows, d).buf("X", b.X, rows*d).buf("Gamma", b.Gamma, d).buf("Beta", b.Beta, d).
		buf("Keep", b.Keep, rows).buf("Out", b.Out, rows*d).buf("Xhat", b.Xhat, rows*d).buf("InvStd", b.InvStd, rows).cond(d > 0 || rows == 0, "d = 0")
	return k.run(c, func() error {
		return k.launch("ln_forward", k.gridWarps(int64(rows)), block1, aP(b.Out), aP(b.Xhat), aP(b.InvStd), aP(b.X), aP(b.Gamma), aP(b.Beta), aP(b.Keep), aI(rows), aI(d), aF(BNEps))
	})
}

// LayerNormBackward writes dx [rows, d], dgamma, dbeta [d] from dy and the forward buffers.
func (k *Kernels) LayerNormBackward(dx, dgamma, dbeta, dy DevPtr, b LayerNormBufs, rows, d int) error {
	c := k.check("layer norm backward").sizes("rows, d", rows, d).buf("dx", dx, rows*d).buf("dgamma", dgamma, d).buf("dbeta", dbeta, d).
		buf("dy", dy, rows*d).buf("Xhat", b.Xhat, rows*d).buf("InvStd", b.InvStd, rows).buf("Gamma", b.Gamma, d).buf("Keep", b.Keep, rows)
	return k.run(c, func() error {
		if err := k.launch("ln_backward_x", k.gridWarps(int64(rows)), block1, aP(dx), aP(dy), aP(b.Xhat), aP(b.InvStd), aP(b.Gamma), aP(b.Keep), aI(rows), aI(d)); err != nil {
			return err
		}
		if d == 0 {
			return nil
		}
		r, err := k.colReduce(rows, d, 2)
		if err != nil {
			return err
		}
		defer r.free()
		return k.launch("ln_backward_params", r.grid, blockCol, aP(dgamma), aP(dbeta), aP(r.part), aP(r.count),
			aP(dy), aP(b.Xhat), aP(b.Keep), aI(rows), aI(d), aI(r.rpc))
	})
}

// GatedEps is added to GatedAggregate's gate sums (nn.GatedEps).
const GatedEps = 1e-6

// GatedBufs are the buffers of one GatedGCN aggregation: inputs Ehat [m, d], Bh [nbh, d], Src,
// Dst [m]; outputs Out [nodes, d], Den [nodes, d] (both kept for backward, which also reads Ehat
// to recompute the gate).
type GatedBufs struct {
	Ehat, Bh, Src, Dst DevPtr
	Out, Den           DevPtr
	// BhBias, where not 0, is a bias [d] folded into Bh: its rows are read as Bh + BhBias
	// (the bits of an AddBias before). AccDe makes the backward add dê into its buffer (the
	// bits of an Add after).
	BhBias DevPtr
	AccDe  bool
	// Raw: the forward leaves Out undivided (the reader divides it by Den: AddBiasedDiv) and
	// the backward divides where it reads it.
	Raw bool
	// Prefilled: the caller filled the accumulators (Out with 0 and Den with GatedEps forward,
	// dbh, and DSrc and DDst where given, with 0 backward), so the launchers do not.
	Prefilled bool
	// DSrc and DDst, where not 0, are the gradients [SRows, d] of the edge sum whose output Ehat
	// is: the backward adds each edge's final dê row into DSrc at row Src and into DDst at row
	// Dst (EdgeSumBackward's pass over dê, folded into this one; the same bits on the
	// emulator's schedule).
	DSrc, DDst DevPtr
	SRows      int
	// BN, where given, is the batch norm that reads Ehat (its rows the m edges): the backward
	// computes dê's first term as that batch norm's dx, from its output gradient Dy and the sums
	// its backward left in BN.Tot, instead of reading it from de (AccDe: bn_backward_dx's pass,
	// folded into this one; the same bits). Its B.XBF16 says how its X is stored.
	BN *GatedBN
	// EhatBF16: Ehat is stored in bf16 (EdgeSumBiased's outBF16); the gradients stay float32.
	EhatBF16 bool
}

// GatedBN is a batch norm whose dx GatedAggregateBackward computes (GatedBufs.BN): its output
// gradient Dy [m, d], its buffers (X, Mean, InvStd, Gamma, Keep, Tot; Beta for Relu), and its
// mode.
type GatedBN struct {
	Dy             DevPtr
	B              BatchNormBufs
	Training, Relu bool
}

// GatedAggregate is ops.GatedAggregate's forward pass: the sigmoid edge gate and both sums in
// one pass over the edges, then one division.
func (k *Kernels) GatedAggregate(b GatedBufs, m, nbh, nodes, d int) error {
	c := k.check("gated aggregate").sizes("m, nbh, nodes, d", m, nbh, nodes, d).stored("Ehat", b.Ehat, m*d, b.EhatBF16).buf("Bh", b.Bh, nbh*d).
		buf("Src", b.Src, m).buf("Dst", b.Dst, m).buf("Out", b.Out, nodes*d).buf("Den", b.Den, nodes*d).opt("BhBias", b.BhBias, d)
	return k.run(c, func() error {
		if !b.Prefilled {
			if err := k.fill2(b.Out, 0, b.Den, GatedEps, nodes*d); err != nil {
				return err
			}
		}
		if err := k.launch("gated_edges", k.grid1(int64(m)*int64(d)), block1, aP(b.Out), aP(b.Den), aP(b.Ehat), aP(b.Bh), aP(b.BhBias), aP(b.Src), aP(b.Dst), aI(m), aI(d), aI(nbh), aI(nodes), aI(btoi(b.EhatBF16))); err != nil {
			return err
		}
		if b.Raw {
			return nil
		}
		return k.launch("gated_div", k.grid1(int64(nodes)*int64(d)), block1, aP(b.Out), aP(b.Den), aI(nodes), aI(d))
	})
}

// GatedAggregateBackward writes dê [m, d] (adds it into de with b.AccDe) and dbh [nbh, d] from
// the output gradient g [nodes, d] in one fused pass over the edges.
func (k *Kernels) GatedAggregateBackward(de, dbh, g DevPtr, b GatedBufs, m, nbh, nodes, d int) error {
	c := k.check("gated aggregate backward").sizes("m, nbh, nodes, d", m, nbh, nodes, d).buf("de", de, m*d).buf("dbh", dbh, nbh*d).
		buf("g", g, nodes*d).buf("Bh", b.Bh, nbh*d).buf("Out", b.Out, nodes*d).buf("Den", b.Den, nodes*d).stored("Ehat", b.Ehat, m*d, b.EhatBF16).
		buf("Src", b.Src, m).buf("Dst", b.Dst, m).opt("BhBias", b.BhBias, d)
	scatter := b.DSrc != 0 || b.DDst != 0
	if scatter {
		c.sizes("SRows", b.SRows).buf("DSrc", b.DSrc, b.SRows*d).buf("DDst", b.DDst, b.SRows*d)
	}
	var bn GatedBN
	var beta DevPtr // the ReLU's gate, for Relu only
	if b.BN != nil {
		bn = *b.BN
		beta = bn.B.checkBackward(c, "BN.", bn.Dy, m, d, bn.Relu)
		c.buf("BN.Tot", bn.B.Tot, TotElems(d)).cond(!b.AccDe, "BN and AccDe both set (dê's first term is the batch norm's dx or de's contents, not both)")
	}
	return k.run(c, func() error {
		if !b.Prefilled {
			if err := k.d.fillLocked(dbh, nbh*d, 0); err != nil {
				return err
			}
			if scatter {
				if err := k.fill2(b.DSrc, 0, b.DDst, 0, b.SRows*d); err != nil {
					return err
				}
			}
		}
		return k.launch("gated_backward", k.grid1(int64(m)*int64(d)), block1, aP(de), aP(dbh), aP(b.DSrc), aP(b.DDst), aP(g), aP(b.Bh), aP(b.BhBias),
			aP(b.Out), aP(b.Den), aP(b.Ehat), aP(b.Src), aP(b.Dst), aP(bn.Dy), aP(bn.B.X), aP(bn.B.Mean), aP(bn.B.InvStd), aP(bn.B.Gamma), aP(beta),
			aP(bn.B.Keep), aP(bn.B.Tot), aI(m), aI(d), aI(nbh), aI(nodes), aI(b.SRows), aI(btoi(b.AccDe)), aI(btoi(b.Raw)), aI(btoi(bn.Training)),
			aI(btoi(b.EhatBF16)), aI(btoi(bn.B.XBF16)))
	})
}

// GaussianWeights writes w [m, kk] for pseudo-coordinates u [m, p], means mu and inverse
// standard deviations is [kk, p]. CPU twin: ops.GaussianWeights.
func (k *Kernels) GaussianWeights(w, u, mu, is DevPtr, m, kk, p int) error {
	c := k.check("gaussian weights").sizes("m, k, p", m, kk, p).buf("w", w, m*kk).buf("u", u, m*p).buf("mu", mu, kk*p).buf("is", is, kk*p)
	return k.run(c, func() error {
		return k.launch("gauss_weights", k.grid1(int64(m)*int64(kk)), block1, aP(w), aP(u), aP(mu), aP(is), aI(m), aI(kk), aI(p))
	})
}

// GaussianWeightsBackward writes du [m, p], dmu and dis [kk, p] from the forward output w and
// its gradient g [m, kk].
func (k *Kernels) GaussianWeightsBackward(du, dmu, dis, u, mu, is, w, g DevPtr, m, kk, p int) error {
	c := k.check("gaussian weights backward").sizes("m, k, p", m, kk, p).buf("du", du, m*p).buf("dmu", dmu, kk*p).buf("dis", dis, kk*p).
		buf("u", u, m*p).buf("mu", mu, kk*p).buf("is", is, kk*p).buf("w", w, m*kk).buf("g", g, m*kk)
	return k.run(c, func() error {
		if err := k.launch("gauss_grad_u", k.grid1(int64(m)*int64(p)), block1, aP(du), aP(u), aP(mu), aP(is), aP(w), aP(g), aI(m), aI(kk), aI(p)); err != nil {
			return err
		}
		return k.launch("gauss_grad_params", dim3{uint32(min(kk*p, 65535)), 1, 1}, block1, aP(dmu), aP(dis), aP(u), aP(mu), aP(is), aP(w), aP(g), aI(m), aI(kk), aI(p))
	})
}

// KernelMix writes out [m, d] = Σ_j w[m, j]·x[m, j·d : (j+1)·d] for x [m, kk·d], w [m, kk].
// CPU twin: ops.KernelMix.
func (k *Kernels) KernelMix(out, x, w DevPtr, m, kk, d int) error {
	c := k.check("kernel mix").sizes("m, k, d", m, kk, d).buf("out", out, m*d).buf("x", x, m*kk*d).buf("w", w, m*kk)
	return k.run(c, func() error {
		return k.launch("kernel_mix", k.grid1(int64(m)*int64(d)), block1, aP(out), aP(x), aP(w), aI(m), aI(kk), aI(d))
	})
}

// KernelMixBackward writes dx [m, kk·d] and dw [m, kk] from the output gradient g [m, d]: either
// or both (a gradient not wanted is 0, and so is x without dw). CPU twin:
// kern.KernelMixBackward.
func (k *Kernels) KernelMixBackward(dx, dw, x, w, g DevPtr, m, kk, d int) error {
	c := k.check("kernel mix backward").sizes("m, k, d", m, kk, d).cond(dx != 0 || dw != 0, "neither gradient is wanted").
		opt("dx", dx, m*kk*d).opt("dw", dw, m*kk).buf("w", w, m*kk).buf("g", g, m*d)
	if dw != 0 {
		c = c.buf("x", x, m*kk*d)
	}
	return k.run(c, func() error {
		if dx != 0 {
			if err := k.launch("kernel_mix_grad_x", k.grid1(int64(m)*int64(kk)*int64(d)), block1, aP(dx), aP(g), aP(w), aI(m), aI(kk), aI(d)); err != nil {
				return err
			}
		}
		if dw == 0 {
			return nil
		}
		return k.launch("kernel_mix_grad_w", k.gridWarps(int64(m)*int64(kk)), block1, aP(dw), aP(x), aP(g), aI(m), aI(kk), aI(d))
	})
}

func headCheck(c *check, m, h, d int) *check {
	return c.sizes("m, heads, d", m, h, d).cond(h > 0 && d%max(h, 1) == 0, "%d heads do not divide d = %d", h, d)
}

// HeadDot writes out [m, h] = per-head dot products of a and b [m, d]. CPU twin: ops.HeadDot.
// Gradients: da = HeadScale(b, g), db = HeadScale(a, g).
func (k *Kernels) HeadDot(out, a, b DevPtr, m, h, d int) error {
	c := headCheck(k.check("head dot"), m, h, d).buf("out", out, m*h).buf("a", a, m*d).buf("b", b, m*d)
	return k.run(c, func() error {
		return k.launch("head_dot", k.gridWarps(int64(m)*int64(h)), block1, aP(out), aP(a), aP(b), aI(m), aI(h), aI(d))
	})
}

// HeadScale writes out [m, d] = x [m, d] with head block j of row i scaled by s[i, j] (s
// [m, h]). CPU twin: ops.HeadScale. Gradients: dx = HeadScale(g, s), ds = HeadDot(x, g).
func (k *Kernels) HeadScale(out, x, s DevPtr, m, h, d int) error {
	c := headCheck(k.check("head scale"), m, h, d).buf("out", out, m*d).buf("x", x, m*d).buf("s", s, m*h)
	return k.run(c, func() error {
		return k.launch("head_scale", k.grid1(int64(m)*int64(d)), block1, aP(out), aP(x), aP(s), aI(m), aI(h), aI(d))
	})
}

// MatMul writes out [m, b] = x [m, a] · w [a, b] with cuBLAS. CPU twin: ops.MatMul.
func (k *Kernels) MatMul(out, x, w DevPtr, m, a, b int) error {
	c := k.check("matmul").sizes("m, a, b", m, a, b).buf("out", out, m*b).buf("x", x, m*a).buf("w", w, a*b)
	return k.run(c, func() error { return k.d.gemmLocked(false, false, m, b, a, x, w, out) })
}

// MatMulBackward writes dx [m, a] = g·wᵀ and dw [a, b] = xᵀ·g for the output gradient g
// [m, b]; either output may be 0 to skip it.
func (k *Kernels) MatMulBackward(dx, dw, x, w, g DevPtr, m, a, b int) error {
	c := k.check("matmul backward").sizes("m, a, b", m, a, b).opt("dx", dx, m*a).opt("dw", dw, a*b).buf("g", g, m*b)
	if dx != 0 {
		c.buf("w", w, a*b)
	}
	if dw != 0 {
		c.buf("x", x, m*a)
	}
	return k.run(c, func() error {
		if dx != 0 {
			if err := k.d.gemmLocked(false, true, m, a, b, g, w, dx); err != nil {
				return err
			}
		}
		if dw == 0 {
			return nil
		}
		if k.narrowGradW(m, a, b) {
			return k.narrowGradWLocked(dw, x, g, m, a, b)
		}
		return k.d.gemmLocked(true, false, a, b, m, x, g, dw)
	})
}

// MatMulAddGradX adds the input gradient of a product to dx [m, a]: dx += g·wᵀ for the output
// gradient g [m, b] and weights w [a, b] (one matrix product with β = 1). The executor folds a
// gradient sum into the product that computes its last term this way. CPU twin: dx + the dx
// of MatMulBackward.
func (k *Kernels) MatMulAddGradX(dx, w, g DevPtr, m, a, b int) error {
	c := k.check("matmul backward (accumulating)").sizes("m, a, b", m, a, b).buf("dx", dx, m*a).buf("w", w, a*b).buf("g", g, m*b)
	return k.run(c, func() error { return k.d.gemmBetaLocked(false, true, m, a, b, g, w, dx, true) })
}

// Gemm writes the row-major product c [m, n] = op(a)·op(b) with op(a) [m, kk], op(b) [kk, n];
// a is stored [m, kk] ([kk, m] when transA) and b [kk, n] ([n, kk] when transB).
func (k *Kernels) Gemm(transA, transB bool, m, n, kk int, a, b, c DevPtr) error {
	ch := k.check("gemm").sizes("m, n, k", m, n, kk).buf("c", c, m*n).buf("a", a, m*kk).buf("b", b, kk*n)
	return k.run(ch, func() error { return k.d.gemmLocked(transA, transB, m, n, kk, a, b, c) })
}

// AddBias writes out [rows, d] = x + b on every row. CPU twin: ops.AddBias. Gradients: dx = g,
// db = ColSum(g).
func (k *Kernels) AddBias(out, x, b DevPtr, rows, d int) error {
	c := k.check("add bias").sizes("rows, d", rows, d).buf("out", out, rows*d).buf("x", x, rows*d).buf("b", b, d)
	return k.run(c, func() error {
		return k.launch("add_bias", k.grid1(int64(rows)*int64(d)), block1, aP(out), aP(x), aP(b), aI(rows), aI(d))
	})
}

// ColSum writes out [d] = the column sums of x [rows, d]. CPU twin: ops.ColSum. Gradient:
// BroadcastRows.
func (k *Kernels) ColSum(out, x DevPtr, rows, d int) error {
	c := k.check("column sum").sizes("rows, d", rows, d).buf("out", out, d).buf("x", x, rows*d)
	return k.run(c, func() error {
		if d == 0 {
			return nil
		}
		r, err := k.colReduce(rows, d, 1)
		if err != nil {
			return err
		}
		defer r.free()
		return k.launch("col_sum", r.grid, blockCol, aP(out), aP(r.part), aP(r.count), aP(x), aI(rows), aI(d), aI(r.rpc))
	})
}

// BroadcastRows writes out [rows, d] = v [d] on every row (ColSum's gradient).
func (k *Kernels) BroadcastRows(out, v DevPtr, rows, d int) error {
	c := k.check("broadcast rows").sizes("rows, d", rows, d).buf("out", out, rows*d).buf("v", v, d)
	return k.run(c, func() error {
		return k.launch("broadcast_rows", k.grid1(int64(rows)*int64(d)), block1, aP(out), aP(v), aI(rows), aI(d))
	})
}

// unary and binary run an element-wise kernel over n elements.
func (k *Kernels) unary(kernel, op string, out, x DevPtr, n int) error {
	c := k.check(op).sizes("n", n).buf("out", out, n).buf("x", x, n)
	return k.run(c, func() error { return k.launch(kernel, k.grid1(int64(n)), block1, aP(out), aP(x), aI(n)) })
}

func (k *Kernels) binary(kernel, op string, out, a, b DevPtr, n int) error {
	c := k.check(op).sizes("n", n).buf("out", out, n).buf("a", a, n).buf("b", b, n)
	return k.run(c, func() error { return k.launch(kernel, k.grid1(int64(n)), block1, aP(out), aP(a), aP(b), aI(n)) })
}

// Add writes out = a + b (n elements). CPU twin: nn.Add.
func (k *Kernels) Add(out, a, b DevPtr, n int) error { return k.binary("ew_add", "add", out, a, b, n) }

// Mul writes out = a ⊙ b (n elements); Exp's gradient is Mul(dx, y, g).
func (k *Kernels) Mul(out, a, b DevPtr, n int) error { return k.binary("ew_mul", "mul", out, a, b, n) }

// Sub writes out = a − b (n elements). CPU twin: gorgonia.Sub.
func (k *Kernels) Sub(out, a, b DevPtr, n int) error { return k.binary("ew_sub", "sub", out, a, b, n) }

// Div writes out = a ⊘ b (n elements). CPU twin: gorgonia.HadamardDiv.
func (k *Kernels) Div(out, a, b DevPtr, n int) error { return k.binary("ew_div", "div", out, a, b, n) }

// Scalar operations of ScalarOp.
const (
	ScalarAdd = iota
	ScalarSub
	ScalarMul
	ScalarDiv
)

// ScalarOp writes out [n] = x ∘ s (scalarLeft false) or s ∘ x (scalarLeft true) for ∘ one of
// ScalarAdd, ScalarSub, ScalarMul, ScalarDiv and s the device scalar s[0]: gorgonia's
// element-wise operators with one scalar operand (a scaled attention score, 1 − y² in tanh's
// gradient). CPU twin: gorgonia.Add, Sub, HadamardProd, HadamardDiv with a scalar.
func (k *Kernels) ScalarOp(out, x, s DevPtr, n, op int, scalarLeft bool) error {
	c := k.check("scalar op").sizes("n", n).buf("out", out, n).buf("x", x, n).buf("s", s, 1).
		cond(op >= ScalarAdd && op <= ScalarDiv, "operator %d", op)
	left := 0
	if scalarLeft {
		left = 1
	}
	return k.run(c, func() error {
		return k.launch("ew_scalar", k.grid1(int64(n)), block1, aP(out), aP(x), aP(s), aI(n), aI(op), aI(left))
	})
}

// ReluBiased writes out [rows, d] = relu(x + b) for a bias b [d]: bit for bit AddBias, then
// Relu.
func (k *Kernels) ReluBiased(out, x, b DevPtr, rows, d int) error {
	c := k.check("relu biased").sizes("rows, d", rows, d).buf("out", out, rows*d).buf("x", x, rows*d).buf("b", b, d)
	return k.run(c, func() error {
		return k.launch("relu_biased", k.grid1(int64(rows)*int64(d)), block1, aP(out), aP(x), aP(b), aI(rows), aI(d))
	})
}

// SigmoidBackward writes dx = g·y·(1 − y) for y = sigmoid(x).
func (k *Kernels) SigmoidBackward(dx, y, g DevPtr, n int) error {
	return k.binary("ew_sigmoid_grad", "sigmoid backward", dx, y, g, n)
}

// TanhBackward writes dx = g·(1 − y²) for y = tanh(x).
func (k *Kernels) TanhBackward(dx, y, g DevPtr, n int) error {
	return k.binary("ew_tanh_grad", "tanh backward", dx, y, g, n)
}

// AbsBackward writes dx = g·sign(x) (0 where x = 0).
func (k *Kernels) AbsBackward(dx, x, g DevPtr, n int) error {
	return k.binary("ew_abs_grad", "abs backward", dx, x, g, n)
}

// Dropout writes out = x·float32(1/(1 − rate)) where ops.DropKeep(seed, i, rate), else 0: the
// ops' inverted dropout with seed = ops.DropState.StepSeed() of the step = base ⊕ the Mix of
// the step scalars sc on the device (base is the node's DropState.Seed). The backward pass is
// the same call on the output gradient. CPU twin: ops.DropKeep and ops.Dropout.
func (k *Kernels) Dropout(out, x DevPtr, n int, rate float64, base uint64, sc DevPtr) error {
	c := k.check("dropout").sizes("n", n).buf("out", out, n).buf("x", x, n).buf("step scalars", sc, StepScalarWords).
		cond(rate >= 0 && rate < 1, "rate = %v, want 0 ≤ rate < 1", rate)
	return k.run(c, func() error {
		return k.launch("dropout", k.grid1(int64(n)), block1, aP(out), aP(x), aI(n), aF(float32(1/(1-rate))), aU(base), aP(sc), aU(DropoutThreshold(rate)))
	})
}

// MaskedL1 writes out [1] = Σ w·|p − y| over n entries. CPU twin: ops.MaskedL1.
func (k *Kernels) MaskedL1(out, p, y, w DevPtr, n int) error {
	return k.pointLoss("masked_l1", "masked L1", out, p, y, w, n)
}

// MaskedL1Backward writes dp = g·w·sign(p − y), g a device scalar (the upstream gradient).
func (k *Kernels) MaskedL1Backward(dp, p, y, w, g DevPtr, n int) error {
	return k.pointLossGrad("masked_l1", "masked L1", dp, p, y, w, g, n)
}

// MaskedL1WithGrad is MaskedL1 and MaskedL1Backward in one launch (one block), bit for bit.
func (k *Kernels) MaskedL1WithGrad(out, dp, p, y, w, g DevPtr, n int) error {
	return k.pointLossBoth("masked_l1", "masked L1", out, dp, p, y, w, g, n)
}

// MaskedBCE writes out [1] = Σ w·(max(z, 0) − z·y + log(1 + e^(−|z|))) over n entries: the
// binary cross-entropy of logits z against targets y. CPU twin: kern.MaskedBCE (ops.MaskedBCE).
func (k *Kernels) MaskedBCE(out, z, y, w DevPtr, n int) error {
	return k.pointLoss("masked_bce", "masked BCE", out, z, y, w, n)
}

// MaskedBCEBackward writes dz = g·w·(σ(z) − y), g a device scalar (the upstream gradient). CPU
// twin: kern.MaskedBCEBackward.
func (k *Kernels) MaskedBCEBackward(dz, z, y, w, g DevPtr, n int) error {
	return k.pointLossGrad("masked_bce", "masked BCE", dz, z, y, w, g, n)
}

// MaskedBCEWithGrad is MaskedBCE and MaskedBCEBackward in one launch (one block), bit for bit.
func (k *Kernels) MaskedBCEWithGrad(out, dz, z, y, w, g DevPtr, n int) error {
	return k.pointLossBoth("masked_bce", "masked BCE", out, dz, z, y, w, g, n)
}

// The element-wise losses (L1, BCE) share their kernels' signatures: <kernel> (out [1] = Σ over
// n entries, one block), <kernel>_grad (dp [n], g a device scalar) and <kernel>_both (both in
// one block); what names the loss in errors.

func (k *Kernels) pointLoss(kernel, what string, out, p, y, w DevPtr, n int) error {
	c := k.check(what).sizes("n", n).buf("out", out, 1).buf("p", p, n).buf("y", y, n).buf("w", w, n)
	return k.run(c, func() error {
		return k.launch(kernel, oneBlock, block1, aP(out), aP(p), aP(y), aP(w), aI(n))
	})
}

func (k *Kernels) pointLossGrad(kernel, what string, dp, p, y, w, g DevPtr, n int) error {
	c := k.check(what+" backward").sizes("n", n).buf("dp", dp, n).buf("p", p, n).buf("y", y, n).buf("w", w, n).buf("g", g, 1)
	return k.run(c, func() error {
		return k.launch(kernel+"_grad", k.grid1(int64(n)), block1, aP(dp), aP(p), aP(y), aP(w), aP(g), aI(n))
	})
}

func (k *Kernels) pointLossBoth(kernel, what string, out, dp, p, y, w, g DevPtr, n int) error {
	c := k.check(what+" with its gradient").sizes("n", n).buf("out", out, 1).buf("dp", dp, n).buf("p", p, n).buf("y", y, n).
		buf("w", w, n).buf("g", g, 1)
	return k.run(c, func() error {
		return k.launch(kernel+"_both", oneBlock, block1, aP(out), aP(dp), aP(p), aP(y), aP(w), aP(g), aI(n))
	})
}

// WeightedCE writes out [1] = the weighted softmax cross-entropy of logits z [r, cl] against
// labels [r] (int32, -1: none) with row weights w [r]. CPU twin: ops.WeightedCE.
func (k *Kernels) WeightedCE(out, z, labels, w DevPtr, r, cl int) error {
	c := k.check("weighted cross-entropy").sizes("rows, classes", r, cl).cond(cl > 0, "no classes").
		buf("out", out, 1).buf("z", z, r*cl).buf("labels", labels, r).buf("w", w, r)
	return k.run(c, func() error {
		buf, free, err := k.scratch(2*r + 1)
		if err != nil {
			return err
		}
		defer free()
		rowloss, roww, total := buf, buf+DevPtr(4*r), buf+DevPtr(8*r)
		if err := k.launch("ce_rows", k.gridWarps(int64(r)), block1, aP(rowloss), aP(roww), aP(z), aP(labels), aP(w), aI(r), aI(cl)); err != nil {
			return err
		}
		return k.launch("ce_reduce", oneBlock, block1, aP(out), aP(total), aP(rowloss), aP(roww), aI(r))
	})
}

// WeightedCEBackward writes dz [r, cl] = g·w_i/Σw·(softmax(z_i) − onehot(y_i)), g a device
// scalar.
func (k *Kernels) WeightedCEBackward(dz, z, labels, w, g DevPtr, r, cl int) error {
	c := k.check("weighted cross-entropy backward").sizes("rows, classes", r, cl).cond(cl > 0, "no classes").
		buf("dz", dz, r*cl).buf("z", z, r*cl).buf("labels", labels, r).buf("w", w, r).buf("g", g, 1)
	return k.run(c, func() error {
		total, free, err := k.scratch(1)
		if err != nil {
			return err
		}
		defer free()
		if err := k.launch("ce_total", oneBlock, block1, aP(total), aP(labels), aP(w), aI(r), aI(cl)); err != nil {
			return err
		}
		return k.launch("ce_grad", k.gridWarps(int64(r)), block1, aP(dz), aP(z), aP(labels), aP(w), aP(total), aP(g), aI(r), aI(cl))
	})
}

// Adam holds the hyper-parameters of nn.Adam (docs/protocol.md §"Optimiser").
type Adam struct{ LR, Beta1, Beta2, Eps float64 }

// StepScalars are the values of one training step that its kernels read from device memory
// rather than take as launch arguments, so that a captured step replays with each step's own:
// Adam's learning rate and bias corrections, and the dropout masks' step mix. On the device
// they are StepScalarWords 32-bit words (Words).
type StepScalars struct {
	LR, C1, C2 float32 // c1 = 1 − β₁ᵗ and c2 = 1 − β₂ᵗ of Adam's step t (AdamScalars)
	Mix        uint64  // the step's part of every dropout seed (ops.DropState.StepSeed: Seed ⊕ Mix)
}

// StepScalarWords is the size of StepScalars on the device: lr, c1, c2, a pad word, then Mix
// (low word first).
const StepScalarWords = 6

// Words is the device layout of s.
func (s StepScalars) Words() [StepScalarWords]uint32 {
	return [StepScalarWords]uint32{math.Float32bits(s.LR), math.Float32bits(s.C1), math.Float32bits(s.C2), 0, uint32(s.Mix), uint32(s.Mix >> 32)}
}

// AdamScalars sets s's learning rate and bias corrections for update number step (1, 2, …),
// computed in float64 as nn.Adam computes them.
func (s *StepScalars) AdamScalars(a Adam, step int) error {
	if step < 1 {
		return fmt.Errorf("cuda: Adam step %d, want ≥ 1", step)
	}
	s.LR = float32(a.LR)
	s.C1 = float32(1 - math.Pow(a.Beta1, float64(step)))
	s.C2 = float32(1 - math.Pow(a.Beta2, float64(step)))
	return nil
}

// AdamStep applies one Adam update to x [n] with gradient g and moments m, v (zero before the
// first step), in place; the learning rate and bias corrections are read from sc (a
// StepScalars block on the device). CPU twin: nn.Adam.Step.
func (k *Kernels) AdamStep(a Adam, sc, x, m, v, g DevPtr, n int) error {
	c := k.check("adam").sizes("n", n).buf("step scalars", sc, StepScalarWords).
		buf("x", x, n).buf("m", m, n).buf("v", v, n).buf("g", g, n)
	return k.run(c, func() error {
		return k.launch("adam_step", k.grid1(int64(n)), block1, aP(x), aP(m), aP(v), aP(g), aI(n), aP(sc),
			aF(float32(a.Beta1)), aF(float32(a.Beta2)), aF(float32(a.Eps)))
	})
}

// DropoutThreshold is ⌈rate·2⁵³⌉, the kernel's form of the rate: a 53-bit draw u survives
// when u ≥ it, which is exactly ops.DropKeep's u·2⁻⁵³ ≥ rate (the scaling by 2⁵³ is exact in
// float64).
func DropoutThreshold(rate float64) uint64 {
	if rate <= 0 {
		return 0
	}
	return uint64(math.Ceil(rate * (1 << 53)))
}

// String describes the compiled kernel set.
func (k *Kernels) String() string {
	defs := ""
	if d := k.d.opts.KernelDefines; len(d) > 0 {
		defs = " with -D " + strings.Join(d, " -D ")
	}
	if k.NVRTC == nil {
		return fmt.Sprintf("%d kernels emulated on %s%s", len(k.fns), k.Target, defs)
	}
	return fmt.Sprintf("%d kernels for %s%s by NVRTC %v (%s); %d files from cache, %d compiled", len(k.fns), k.Target, defs, k.NVRTC.Version, k.NVRTC.Path, k.Cached, k.Built)
}
