package gpu

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/cuda"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/tensor"
)

// program is a Plan with its device buffers: the index, mask and dense-input holders it
// uploads per batch, its static values (uploaded once) and, during a run, its activation
// slots.
type program struct {
	plan   *Plan
	idx    map[*ops.Index]cuda.DevPtr // int32 entries
	idxW   map[*ops.Index]cuda.DevPtr // float32 weights (indexes with W)
	mask   map[*ops.Mask]cuda.DevPtr  // int32, 1 on kept rows
	vals   map[int]cuda.DevPtr        // FromInput and FromStatic values
	slots  []cuda.DevPtr              // during a run
	result cuda.DevPtr                // loss, then the prediction
	wbuf   []float32
	kbuf   []int32
}

// newProgram allocates a plan's holders and uploads its static values, the parameters and the
// batch-norm statistics it reads.
func (t *Trainer) newProgram(pl *Plan) (*program, error) {
	pr := &program{plan: pl, idx: map[*ops.Index]cuda.DevPtr{}, idxW: map[*ops.Index]cuda.DevPtr{},
		mask: map[*ops.Mask]cuda.DevPtr{}, vals: map[int]cuda.DevPtr{}}
	ok := false
	defer func() {
		if !ok {
			t.freeProgram(pr)
		}
	}()
	alloc := func(n int, what string) (cuda.DevPtr, error) {
		p, err := t.b.Alloc(max(n, 1))
		if err != nil {
			return 0, fmt.Errorf("gpu: %s (%d elements): %w", what, n, err)
		}
		return p, nil
	}
	for _, ix := range pl.Indexes {
		p, err := alloc(ix.Len(), "index "+ix.Name)
		if err != nil {
			return nil, err
		}
		pr.idx[ix] = p
		if ix.W != nil {
			if pr.idxW[ix], err = alloc(ix.Len(), "weights of index "+ix.Name); err != nil {
				return nil, err
			}
		}
	}
	for _, m := range pl.Masks {
		p, err := alloc(len(m.Keep), "mask "+m.Name)
		if err != nil {
			return nil, err
		}
		pr.mask[m] = p
	}
	for i, v := range pl.Vals {
		switch v.Src {
		case FromParam:
			if err := t.ensureParam(v.Param); err != nil {
				return nil, err
			}
		case FromInput, FromStatic:
			p, err := alloc(v.Elems, v.Name)
			if err != nil {
				return nil, err
			}
			pr.vals[i] = p
			if v.Src == FromStatic {
				if v.Host != nil {
					err = t.b.UploadF32(p, v.Host.Float32s())
				} else {
					err = t.b.UploadF32(p, []float32{v.Const})
				}
				if err != nil {
					return nil, fmt.Errorf("gpu: uploading %s: %w", v.Name, err)
				}
			}
		}
	}
	for _, st := range pl.Steps {
		if st.Op.BN != nil {
			if err := t.ensureBN(st.Op.BN); err != nil {
				return nil, err
			}
		}
	}
	var err error
	if pr.result, err = alloc(1+pl.Vals[pl.Pred].Elems, "loss and prediction"); err != nil {
		return nil, err
	}
	ok = true
	return pr, nil
}

func (t *Trainer) freeProgram(pr *program) {
	for _, m := range []map[*ops.Index]cuda.DevPtr{pr.idx, pr.idxW} {
		for _, p := range m {
			_ = t.b.Free(p)
		}
	}
	for _, p := range pr.mask {
		_ = t.b.Free(p)
	}
	for _, p := range pr.vals {
		_ = t.b.Free(p)
	}
	_ = t.b.Free(pr.result)
	pr.idx, pr.idxW, pr.mask, pr.vals, pr.result = nil, nil, nil, nil, 0
}

// stage checks the net's freshly loaded host inputs and queues their upload.
func (t *Trainer) stage(pr *program) error {
	pl := pr.plan
	for i, ix := range pl.Indexes {
		if err := ix.CheckRows(pl.IndexRows[i]); err != nil {
			return fmt.Errorf("gpu: %w", err)
		}
		if err := t.b.UploadI32(pr.idx[ix], ix.Idx); err != nil {
			return fmt.Errorf("gpu: uploading index %q: %w", ix.Name, err)
		}
		if ix.W != nil {
			pr.wbuf = growF(pr.wbuf, len(ix.W))
			for j, w := range ix.W {
				pr.wbuf[j] = float32(w)
			}
			if err := t.b.UploadF32(pr.idxW[ix], pr.wbuf); err != nil {
				return fmt.Errorf("gpu: uploading the weights of index %q: %w", ix.Name, err)
			}
		}
	}
	for _, m := range pl.Masks {
		if cap(pr.kbuf) < len(m.Keep) {
			pr.kbuf = make([]int32, len(m.Keep))
		}
		kb := pr.kbuf[:len(m.Keep)]
		for j, k := range m.Keep {
			kb[j] = 0
			if k {
				kb[j] = 1
			}
		}
		if err := t.b.UploadI32(pr.mask[m], kb); err != nil {
			return fmt.Errorf("gpu: uploading mask %q: %w", m.Name, err)
		}
	}
	for i, v := range pl.Vals {
		if v.Src == FromInput {
			if err := t.b.UploadF32(pr.vals[i], v.Host.Float32s()); err != nil {
				return fmt.Errorf("gpu: uploading input %s: %w", v.Name, err)
			}
		}
	}
	return nil
}

func growF(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// run queues every step of the program (after stage); the caller frees the slots with
// release once the results are read.
func (t *Trainer) run(pr *program) error {
	pl := pr.plan
	if cap(pr.slots) < len(pl.Slots) {
		pr.slots = make([]cuda.DevPtr, len(pl.Slots))
	}
	pr.slots = pr.slots[:len(pl.Slots)]
	clear(pr.slots)
	for i, n := range pl.Slots {
		p, err := t.b.Alloc(n)
		if err != nil {
			t.release(pr)
			return fmt.Errorf("gpu: activation buffer %d of %d (%d elements; %d MiB for the bucket's %d buffers): %w",
				i, len(pl.Slots), n, pl.Bytes()>>20, len(pl.Slots), err)
		}
		pr.slots[i] = p
	}
	for i := range pl.Steps {
		if err := t.step(pr, &pl.Steps[i]); err != nil {
			return fmt.Errorf("gpu: step %d of %d (%s), bucket %v: %w", i, len(pl.Steps), pl.Vals[pl.Steps[i].Outs[0]].Name, pl.Net.In.B, err)
		}
	}
	return nil
}

func (t *Trainer) release(pr *program) {
	for i, p := range pr.slots {
		if p != 0 {
			_ = t.b.Free(p)
		}
		pr.slots[i] = 0
	}
	pr.slots = pr.slots[:0]
}

// ptr is the device address of value v.
func (t *Trainer) ptr(pr *program, v int) cuda.DevPtr {
	val := &pr.plan.Vals[v]
	switch val.Src {
	case FromStep:
		return pr.slots[val.Slot]
	case FromParam:
		return t.params[val.Param].x
	}
	return pr.vals[v]
}

// shape returns the rows and columns of value v (a vector is one row; a scalar 1×1).
func shape(pl *Plan, v int) (int, int) { return pl.Vals[v].Rows, pl.Vals[v].Cols }

// step queues one step.
func (t *Trainer) step(pr *program, st *Step) error {
	pl := pr.plan
	b := t.b
	in := primary(st)
	p := func(i int) cuda.DevPtr { return t.ptr(pr, in[i]) }
	out := t.ptr(pr, st.Outs[0])
	o := func(w int) cuda.DevPtr { return t.ptr(pr, st.Outs[w]) }
	aux := func(i int) cuda.DevPtr { return t.ptr(pr, st.Aux[i]) }
	rc := func(i int) (int, int) { return shape(pl, in[i]) }
	n := pl.Vals[st.Outs[0]].Elems
	d := st.Op
	switch st.Kind {
	case ops.OpGather:
		rows, cols := rc(0)
		return b.Gather(out, p(0), pr.idx[d.Index], pr.idxW[d.Index], d.Index.Len(), rows, cols)
	case ops.OpScatterAdd:
		m, cols := rc(0)
		return b.ScatterAdd(out, p(0), pr.idx[d.Index], pr.idxW[d.Index], m, d.Rows, cols)
	case ops.OpSegmentSoftmax:
		m, h := rc(0)
		return b.SegmentSoftmax(out, p(0), pr.idx[d.Index], m, h, d.Rows)
	case ops.OpSegmentSoftmaxGrad: // (y, dy)
		m, h := rc(0)
		return b.SegmentSoftmaxBackward(out, p(0), p(1), pr.idx[d.Index], m, h, d.Rows)
	case ops.OpBatchNorm, ops.OpBatchNormRelu: // (x, γ, β) or, with a residual, (x, γ, β, res)
		rows, cols := rc(0)
		if d.BN.Training {
			if k := d.Mask.Count(); k < 2 {
				return fmt.Errorf("batch norm %q: %d real rows; training statistics need at least 2", d.BN.Name, k)
			}
		}
		s := t.bn[d.BN]
		if err := b.BatchNorm(cuda.BatchNormBufs{X: p(0), Gamma: p(1), Beta: p(2), Keep: pr.mask[d.Mask],
			RunMean: s.mean, RunVar: s.vari, Out: out, Xhat: aux(0), Mean: aux(1), InvStd: aux(2)}, rows, cols, d.BN.Training); err != nil {
			return err
		}
		if st.Kind == ops.OpBatchNorm {
			return nil
		}
		if err := b.Relu(out, out, n); err != nil { // in place: element by element
			return err
		}
		if len(in) == 4 {
			return b.Add(out, out, p(3), n)
		}
		return nil
	case ops.OpBatchNormGrad, ops.OpBatchNormReluGrad: // (x, γ, β, dy) → dx, dγ, dβ
		rows, cols := rc(3)
		dy := p(3)
		if st.Kind == ops.OpBatchNormReluGrad {
			dy = t.ptr(pr, st.Tmp[0])
			if err := b.BatchNormReluMask(dy, p(3), aux(0), p(1), p(2), rows, cols); err != nil {
				return err
			}
		}
		return b.BatchNormBackward(o(0), o(1), o(2), dy, cuda.BatchNormBufs{Gamma: p(1), Keep: pr.mask[d.Mask],
			Xhat: aux(0), Mean: aux(1), InvStd: aux(2)}, rows, cols, d.BN.Training)
	case ops.OpLayerNorm: // (x, γ, β)
		rows, cols := rc(0)
		return b.LayerNorm(cuda.LayerNormBufs{X: p(0), Gamma: p(1), Beta: p(2), Keep: pr.mask[d.Mask], Out: out, Xhat: aux(0), InvStd: aux(1)}, rows, cols)
	case ops.OpLayerNormGrad: // (γ, dy) → dx, dγ, dβ
		rows, cols := rc(1)
		return b.LayerNormBackward(o(0), o(1), o(2), p(1), cuda.LayerNormBufs{Gamma: p(0), Keep: pr.mask[d.Mask], Xhat: aux(0), InvStd: aux(1)}, rows, cols)
	case ops.OpGated: // (ê, bh)
		m, cols := rc(0)
		nbh, _ := rc(1)
		return b.GatedAggregate(cuda.GatedBufs{Ehat: p(0), Bh: p(1), Src: pr.idx[d.Src], Dst: pr.idx[d.Dst], Out: out, Den: aux(0)}, m, nbh, d.Rows, cols)
	case ops.OpGatedGrad: // (ê, bh, out, g) → dê, dbh
		nbh, cols := rc(1)
		return b.GatedAggregateBackward(o(0), o(1), p(3), cuda.GatedBufs{Ehat: p(0), Bh: p(1), Src: pr.idx[d.Src], Dst: pr.idx[d.Dst],
			Out: p(2), Den: aux(0)}, d.Src.Len(), nbh, d.Rows, cols)
	case ops.OpEdgeSum: // (e, hs, ht)
		m, cols := rc(0)
		rows, _ := rc(1)
		if r2, _ := rc(2); r2 != rows {
			return fmt.Errorf("edge sum: hs has %d rows, ht %d", rows, r2)
		}
		return b.EdgeSum(out, p(0), p(1), p(2), pr.idx[d.Src], pr.idx[d.Dst], m, rows, cols)
	case ops.OpEdgeSumGrad: // (g) → g summed along src, along dst
		m, cols := rc(0)
		if err := b.ScatterAdd(o(0), p(0), pr.idx[d.Src], 0, m, d.Rows, cols); err != nil {
			return err
		}
		return b.ScatterAdd(o(1), p(0), pr.idx[d.Dst], 0, m, d.Rows, cols)
	case ops.OpGaussian: // (u, μ, 1/σ)
		m, pd := rc(0)
		kk, _ := rc(1)
		return b.GaussianWeights(out, p(0), p(1), p(2), m, kk, pd)
	case ops.OpGaussianGrad: // (u, μ, 1/σ, w, g) → du, dμ, d(1/σ)
		m, pd := rc(0)
		kk, _ := rc(1)
		return b.GaussianWeightsBackward(o(0), o(1), o(2), p(0), p(1), p(2), p(3), p(4), m, kk, pd)
	case ops.OpKernelMix: // (x [M, K·d], w [M, K])
		m, kk := rc(1)
		_, cols := shape(pl, st.Outs[0])
		return b.KernelMix(out, p(0), p(1), m, kk, cols)
	case kernelMixGrad: // X: (g, w), W: (x, g, w) → dx, dw
		gx, gw := st.Ins[0], st.Ins[1]
		if gx == nil || gw == nil {
			return fmt.Errorf("kernel mix gradient: both gradients are needed together")
		}
		m, kk := shape(pl, gx[1])
		_, cols := shape(pl, gx[0])
		return b.KernelMixBackward(o(0), o(1), t.ptr(pr, gw[0]), t.ptr(pr, gx[1]), t.ptr(pr, gx[0]), m, kk, cols)
	case ops.OpHeadDot: // (q, k) [M, d]
		m, cols := rc(0)
		_, h := shape(pl, st.Outs[0])
		return b.HeadDot(out, p(0), p(1), m, h, cols)
	case ops.OpHeadScale: // (x [M, d], w [M, H])
		m, cols := rc(0)
		_, h := rc(1)
		return b.HeadScale(out, p(0), p(1), m, h, cols)
	case ops.OpMatMul: // (x [M, a], w [a, b])
		m, a := rc(0)
		_, bb := rc(1)
		return b.MatMul(out, p(0), p(1), m, a, bb)
	case ops.OpMatMulGradX: // (g [M, b], w [a, b]) → g·wᵀ
		m, bb := rc(0)
		a, _ := rc(1)
		return b.MatMulBackward(out, 0, 0, p(1), p(0), m, a, bb)
	case ops.OpMatMulGradW: // (x [M, a], g [M, b]) → xᵀ·g
		m, a := rc(0)
		_, bb := rc(1)
		return b.MatMulBackward(0, out, p(0), 0, p(1), m, a, bb)
	case ops.OpAddBias:
		rows, cols := rc(0)
		return b.AddBias(out, p(0), p(1), rows, cols)
	case ops.OpColSum:
		rows, cols := rc(0)
		return b.ColSum(out, p(0), rows, cols)
	case ops.OpAdd:
		return b.Add(out, p(0), p(1), n)
	case ops.OpRelu:
		return b.Relu(out, p(0), n)
	case ops.OpReluGrad: // (y, g)
		return b.ReluBackward(out, p(0), p(1), n)
	case ops.OpDropout, ops.OpDropoutGrad:
		s := d.Drop
		if !s.Training || s.Rate == 0 {
			return b.Copy(out, p(0), n)
		}
		return b.Dropout(out, p(0), n, s.Rate, s.StepSeed())
	case ops.OpMaskedL1: // (pred, y, w)
		return b.MaskedL1(out, p(0), p(1), p(2), pl.Vals[in[0]].Elems)
	case ops.OpMaskedL1Grad: // (pred, y, w, g)
		return b.MaskedL1Backward(out, p(0), p(1), p(2), p(3), n)
	case ops.OpWeightedCE: // (z)
		r, cl := rc(0)
		return b.WeightedCE(out, p(0), pr.idx[d.Index], pr.idxW[d.Index], r, cl)
	case ops.OpWeightedCEGrad: // (z, g)
		r, cl := rc(0)
		return b.WeightedCEBackward(out, p(0), pr.idx[d.Index], pr.idxW[d.Index], p(1), r, cl)
	case "+", "-", "⊙", "÷":
		op := cuda.ScalarDiv
		switch st.Kind {
		case "+":
			op = cuda.ScalarAdd
		case "-":
			op = cuda.ScalarSub
		case "⊙":
			op = cuda.ScalarMul
		}
		ea, eb := pl.Vals[in[0]].Elems, pl.Vals[in[1]].Elems
		switch {
		case ea == eb:
			switch op {
			case cuda.ScalarAdd:
				return b.Add(out, p(0), p(1), n)
			case cuda.ScalarSub:
				return b.Sub(out, p(0), p(1), n)
			case cuda.ScalarMul:
				return b.Mul(out, p(0), p(1), n)
			}
			return b.Div(out, p(0), p(1), n)
		case eb == 1:
			return b.ScalarOp(out, p(0), p(1), n, op, false)
		case ea == 1:
			return b.ScalarOp(out, p(1), p(0), n, op, true)
		}
		return fmt.Errorf("operands of %d and %d elements", ea, eb)
	case "tanh":
		return b.Tanh(out, p(0), n)
	case "sigmoid":
		return b.Sigmoid(out, p(0), n)
	case "exp":
		return b.Exp(out, p(0), n)
	case "abs":
		return b.Abs(out, p(0), n)
	}
	return fmt.Errorf("no device kernel for %s", st.Kind)
}

// hostFloat32 returns a float32 tensor's values or an error naming it.
func hostFloat32(name string, t *tensor.Dense) ([]float32, error) {
	if t.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("gpu: %s is %v, want float32", name, t.Dtype())
	}
	return t.Float32s(), nil
}
