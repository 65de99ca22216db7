package nn

// Element-wise loops over equal-length slices (the first slice's length; the others must be at
// least as long). In float32 on amd64 with AVX2/FMA they run on vec_amd64.s, otherwise as the
// plain loops here, which define them.

func f32(x any) ([]float32, bool) {
	v, ok := x.([]float32)
	return v, ok && haveKernel
}

// addTo: dst += a.
func addTo[T Float](dst, a []T) {
	if d, ok := f32(dst); ok {
		vAddTo(d, any(a[:len(dst)]).([]float32))
		return
	}
	a = a[:len(dst)]
	for i := range dst {
		dst[i] += a[i]
	}
}

// add2: dst = a + b.
func add2[T Float](dst, a, b []T) {
	if d, ok := f32(dst); ok {
		vAdd2(d, any(a[:len(dst)]).([]float32), any(b[:len(dst)]).([]float32))
		return
	}
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

// add3: dst = a + b + c.
func add3[T Float](dst, a, b, c []T) {
	if d, ok := f32(dst); ok {
		vAdd3(d, any(a[:len(dst)]).([]float32), any(b[:len(dst)]).([]float32), any(c[:len(dst)]).([]float32))
		return
	}
	a, b, c = a[:len(dst)], b[:len(dst)], c[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i] + c[i]
	}
}

// reluInto: dst = max(x, 0).
func reluInto[T Float](dst, x []T) {
	if d, ok := f32(dst); ok {
		vRelu(d, any(x[:len(dst)]).([]float32))
		return
	}
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = max(x[i], 0)
	}
}

// reluGradInto: dst = g where y > 0, else 0.
func reluGradInto[T Float](dst, y, g []T) {
	if d, ok := f32(dst); ok {
		vReluGrad(d, any(y[:len(dst)]).([]float32), any(g[:len(dst)]).([]float32))
		return
	}
	y, g = y[:len(dst)], g[:len(dst)]
	for i := range dst {
		if y[i] > 0 {
			dst[i] = g[i]
		} else {
			dst[i] = 0
		}
	}
}

// gatedFwdRow: num += h ⊙ b, den += h.
func gatedFwdRow[T Float](num, den, h, b []T) {
	if d, ok := f32(num); ok {
		vGatedFwd(d, any(den[:len(num)]).([]float32), any(h[:len(num)]).([]float32), any(b[:len(num)]).([]float32))
		return
	}
	den, h, b = den[:len(num)], h[:len(num)], b[:len(num)]
	for i, v := range h {
		num[i] += v * b[i]
		den[i] += v
	}
}

// gatedBwdRow: with q = h ⊙ g, db += q and de = q ⊙ (1 − h) ⊙ (b − o).
func gatedBwdRow[T Float](de, db, h, g, b, o []T) {
	if d, ok := f32(de); ok {
		n := len(de)
		vGatedBwd(d, any(db[:n]).([]float32), any(h[:n]).([]float32), any(g[:n]).([]float32), any(b[:n]).([]float32), any(o[:n]).([]float32))
		return
	}
	db, h, g, b, o = db[:len(de)], h[:len(de)], g[:len(de)], b[:len(de)], o[:len(de)]
	for i, v := range h {
		q := v * g[i]
		db[i] += q
		de[i] = q * (1 - v) * (b[i] - o[i])
	}
}

// statsRow: with v = x − k, s1 += v and s2 += v ⊙ v.
func statsRow[T Float](s1, s2, x, k []T) {
	if d, ok := f32(s1); ok {
		vStats(d, any(s2[:len(s1)]).([]float32), any(x[:len(s1)]).([]float32), any(k[:len(s1)]).([]float32))
		return
	}
	s2, x, k = s2[:len(s1)], x[:len(s1)], k[:len(s1)]
	for i := range s1 {
		v := x[i] - k[i]
		s1[i] += v
		s2[i] += v * v
	}
}

// stats2Row: s1 += dy, s2 += dy ⊙ (x − mu).
func stats2Row[T Float](s1, s2, dy, x, mu []T) {
	if d, ok := f32(s1); ok {
		n := len(s1)
		vStats2(d, any(s2[:n]).([]float32), any(dy[:n]).([]float32), any(x[:n]).([]float32), any(mu[:n]).([]float32))
		return
	}
	s2, dy, x, mu = s2[:len(s1)], dy[:len(s1)], x[:len(s1)], mu[:len(s1)]
	for i := range s1 {
		s1[i] += dy[i]
		s2[i] += dy[i] * (x[i] - mu[i])
	}
}

// affineRow: dst = (x − mu) ⊙ p + q.
func affineRow[T Float](dst, x, mu, p, q []T) {
	if d, ok := f32(dst); ok {
		n := len(dst)
		vAffine(d, any(x[:n]).([]float32), any(mu[:n]).([]float32), any(p[:n]).([]float32), any(q[:n]).([]float32))
		return
	}
	x, mu, p, q = x[:len(dst)], mu[:len(dst)], p[:len(dst)], q[:len(dst)]
	for i := range dst {
		dst[i] = (x[i]-mu[i])*p[i] + q[i]
	}
}

// bnBackRow: dst = a ⊙ dy + b ⊙ (x − mu) + c.
func bnBackRow[T Float](dst, dy, x, mu, a, b, c []T) {
	if d, ok := f32(dst); ok {
		n := len(dst)
		vBNBack(d, any(dy[:n]).([]float32), any(x[:n]).([]float32), any(mu[:n]).([]float32), any(a[:n]).([]float32), any(b[:n]).([]float32), any(c[:n]).([]float32))
		return
	}
	dy, x, mu, a, b, c = dy[:len(dst)], x[:len(dst)], mu[:len(dst)], a[:len(dst)], b[:len(dst)], c[:len(dst)]
	for i := range dst {
		dst[i] = a[i]*dy[i] + b[i]*(x[i]-mu[i]) + c[i]
	}
}

// affineReluRow: dst = max((x − mu) ⊙ p + q, 0).
func affineReluRow[T Float](dst, x, mu, p, q []T) {
	if d, ok := f32(dst); ok {
		n := len(dst)
		vAffineRelu(d, any(x[:n]).([]float32), any(mu[:n]).([]float32), any(p[:n]).([]float32), any(q[:n]).([]float32))
		return
	}
	x, mu, p, q = x[:len(dst)], mu[:len(dst)], p[:len(dst)], q[:len(dst)]
	for i := range dst {
		dst[i] = max((x[i]-mu[i])*p[i]+q[i], 0)
	}
}

// affineReluAddRow: dst = r + max((x − mu) ⊙ p + q, 0).
func affineReluAddRow[T Float](dst, x, mu, p, q, r []T) {
	if d, ok := f32(dst); ok {
		n := len(dst)
		vAffineReluAdd(d, any(x[:n]).([]float32), any(mu[:n]).([]float32), any(p[:n]).([]float32), any(q[:n]).([]float32), any(r[:n]).([]float32))
		return
	}
	x, mu, p, q, r = x[:len(dst)], mu[:len(dst)], p[:len(dst)], q[:len(dst)], r[:len(dst)]
	for i := range dst {
		dst[i] = r[i] + max((x[i]-mu[i])*p[i]+q[i], 0)
	}
}

// statsReluRow: with u = g where (x − mu) ⊙ p + q > 0 (else 0), s1 += u and s2 += u ⊙ (x − mu).
func statsReluRow[T Float](s1, s2, g, x, mu, p, q []T) {
	if d, ok := f32(s1); ok {
		n := len(s1)
		vStatsRelu(d, any(s2[:n]).([]float32), any(g[:n]).([]float32), any(x[:n]).([]float32), any(mu[:n]).([]float32), any(p[:n]).([]float32), any(q[:n]).([]float32))
		return
	}
	s2, g, x, mu, p, q = s2[:len(s1)], g[:len(s1)], x[:len(s1)], mu[:len(s1)], p[:len(s1)], q[:len(s1)]
	for i := range s1 {
		if v := x[i] - mu[i]; v*p[i]+q[i] > 0 {
			s1[i] += g[i]
			s2[i] += g[i] * v
		}
	}
}

// bnBackReluRow: with u as in statsReluRow, dst = a ⊙ u + b ⊙ (x − mu) + c.
func bnBackReluRow[T Float](dst, g, x, mu, p, q, a, b, c []T) {
	if d, ok := f32(dst); ok {
		n := len(dst)
		vBNBackRelu(d, any(g[:n]).([]float32), any(x[:n]).([]float32), any(mu[:n]).([]float32), any(p[:n]).([]float32), any(q[:n]).([]float32),
			any(a[:n]).([]float32), any(b[:n]).([]float32), any(c[:n]).([]float32))
		return
	}
	g, x, mu, p, q = g[:len(dst)], x[:len(dst)], mu[:len(dst)], p[:len(dst)], q[:len(dst)]
	a, b, c = a[:len(dst)], b[:len(dst)], c[:len(dst)]
	for i := range dst {
		v := x[i] - mu[i]
		u := g[i]
		if !(v*p[i]+q[i] > 0) {
			u = 0
		}
		dst[i] = a[i]*u + b[i]*v + c[i]
	}
}
