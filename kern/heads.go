package kern

// The per-row kernels of attention heads and MoNet's kernel mix (ops.HeadDot, ops.HeadScale,
// ops.KernelMix; GPU twins: the launchers of the same names in cuda/ops.go). Every output
// value is one row's own sum in column order, so nothing depends on the number of goroutines.

// HeadDot writes out [m, h] = the per-head dot products of a and b [m, d]: out[i,j] =
// Σ_t a[i,j·w+t]·b[i,j·w+t] with w = d/h, summed in T in column order.
func HeadDot[T Float](out, a, b []T, m, h, d int) {
	w := d / max(h, 1)
	if o, ok := f32(out); ok && headsInRegs(m, h, d) {
		_, _, _ = o[m*h-1], a[m*d-1], b[m*d-1] // what the kernel reads and writes
		var idx [32 * 16]int32                 // idx[t·16+j] = j·w + t: head j's t-th product
		for t := 0; t < w; t++ {
			for j := 0; j < h; j++ {
				idx[t*16+j] = int32(j*w + t)
			}
		}
		k1, k2, k3 := headMasks(h, d)
		vHeadDot(o, any(a).([]float32), any(b).([]float32), idx[:w*16], m, d, h, w, k1, k2, k3)
		return
	}
	for i := 0; i < m; i++ {
		for j := 0; j < h; j++ {
			var acc T
			base := i*d + j*w
			for t := 0; t < w; t++ {
				acc += a[base+t] * b[base+t]
			}
			out[i*h+j] = acc
		}
	}
}

// HeadScale writes out [m, d] = x [m, d] with head block j of row i (columns j·w … (j+1)·w−1,
// w = d/h) multiplied by s[i,j] (s [m, h]).
func HeadScale[T Float](out, x, s []T, m, h, d int) {
	w := d / max(h, 1)
	if o, ok := f32(out); ok && headsInRegs(m, h, d) {
		_, _, _ = o[m*d-1], x[m*d-1], s[m*h-1] // what the kernel reads and writes
		var idx [32]int32                      // idx[c] = c/w: column c's head
		for c := 0; c < d; c++ {
			idx[c] = int32(c / w)
		}
		k1, k2, k3 := headMasks(h, d)
		vHeadScale(o, any(x).([]float32), any(s).([]float32), idx[:], m, d, h, k1, k2, k3)
		return
	}
	for i := 0; i < m; i++ {
		for j := 0; j < h; j++ {
			c := s[i*h+j]
			base := i*d + j*w
			for t := 0; t < w; t++ {
				out[base+t] = c * x[base+t]
			}
		}
	}
}

// headsInRegs: HeadDot and HeadScale run on AVX-512 (tailK) with a row in registers
// (vHeadDot, vHeadScale: two Z registers of 16 columns, one of 16 heads), bit for bit the loops
// above: each product rounded, then added to the head's sum in column order from +0. The
// Transformer on ZINC (d = 30, 6 heads) fits; wider rows take the loops.
func headsInRegs(m, h, d int) bool {
	return tailK && m > 0 && h >= 1 && h <= 16 && d >= h && d <= 32 && d%h == 0
}

// headMasks are the lanes of a row's first 16 columns, of its columns 16 … d−1, and of its h
// heads.
func headMasks(h, d int) (k1, k2, k3 int) {
	return 1<<min(d, 16) - 1, 1<<max(d-16, 0) - 1, 1<<h - 1
}

// KernelMix writes out [m, d] = Σ_j w[i,j]·x[i, j·d : (j+1)·d] for x [m, kk·d] and w [m, kk],
// summed in T over j in order.
func KernelMix[T Float](out, x, w []T, m, kk, d int) {
	kd := kk * d
	clear(out[:m*d])
	for i := 0; i < m; i++ {
		o := out[i*d : (i+1)*d]
		for j := 0; j < kk; j++ {
			AxpyTo(o, x[i*kd+j*d:i*kd+(j+1)*d], w[i*kk+j])
		}
	}
}

// KernelMixBackward writes, from the output gradient g [m, d], dx [m, kk·d] with
// dx[i, j·d+t] = w[i,j]·g[i,t] (reading g and w) and dw [m, kk] with dw[i,j] = Σ_t
// x[i, j·d+t]·g[i,t] (reading x and g). A nil dx or dw is not computed, and the input only it
// reads may then be nil.
func KernelMixBackward[T Float](dx, dw, x, w, g []T, m, kk, d int) {
	if dx != nil {
		for i := 0; i < m; i++ {
			for j := 0; j < kk; j++ {
				ScaleTo(dx[i*kk*d+j*d:i*kk*d+(j+1)*d], g[i*d:(i+1)*d], w[i*kk+j])
			}
		}
	}
	if dw != nil {
		kernelMixDW(dw, x, g, m, kk, d)
	}
}

// kernelMixDW writes dw[p] = Σ_t x[p·d+t]·g[(p/kk)·d+t] for p < m·kk (dw[i,j] of
// KernelMixBackward: x's row p is x[i, j·d : (j+1)·d] for p = i·kk + j), each sum in column order
// from 0, four at a time: the sums are independent, so their chains of additions overlap where
// one at a time waits on each addition (the same values bit for bit).
func kernelMixDW[T Float](dw, x, g []T, m, kk, d int) {
	n := m * kk
	row := func(a []T, p int) []T { return a[p*d : (p+1)*d] }
	p := 0
	for ; p+4 <= n; p += 4 {
		x0, x1, x2, x3 := row(x, p), row(x, p+1), row(x, p+2), row(x, p+3)
		g0, g1, g2, g3 := row(g, p/kk), row(g, (p+1)/kk), row(g, (p+2)/kk), row(g, (p+3)/kk)
		x1, x2, x3, g0, g1, g2, g3 = x1[:len(x0)], x2[:len(x0)], x3[:len(x0)], g0[:len(x0)], g1[:len(x0)], g2[:len(x0)], g3[:len(x0)]
		var a0, a1, a2, a3 T
		for t, v := range x0 {
			a0 += v * g0[t]
			a1 += x1[t] * g1[t]
			a2 += x2[t] * g2[t]
			a3 += x3[t] * g3[t]
		}
		dw[p], dw[p+1], dw[p+2], dw[p+3] = a0, a1, a2, a3
	}
	for ; p < n; p++ {
		xs, gs := row(x, p), row(g, p/kk)
		gs = gs[:len(xs)]
		var acc T
		for t, v := range xs {
			acc += v * gs[t]
		}
		dw[p] = acc
	}
}
