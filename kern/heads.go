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
		for i := 0; i < m; i++ {
			for j := 0; j < kk; j++ {
				var acc T
				xs := x[i*kk*d+j*d : i*kk*d+(j+1)*d]
				for t, v := range xs {
					acc += v * g[i*d+t]
				}
				dw[i*kk+j] = acc
			}
		}
	}
}
