package kern

import "math"

// Element-wise loops over equal-length slices (the first slice's length; the others must be at
// least as long). In float32 on amd64 with AVX2/FMA they run on vec_amd64.s, otherwise as the
// plain loops here, which define them.

// f32 returns x as []float32 if it is one and the assembly loops are available.
func f32(x any) ([]float32, bool) {
	v, ok := x.([]float32)
	return v, ok && haveKernel
}

// s32 returns x's first len(d) values as []float32 (T is float32 wherever it is called).
func s32[T Float](x []T, d []float32) []float32 { return any(x[:len(d)]).([]float32) }

// AddTo: dst += a.
func AddTo[T Float](dst, a []T) {
	if d, ok := f32(dst); ok {
		vAddTo(d, s32(a, d))
		return
	}
	for i, v := range a[:len(dst)] {
		dst[i] += v
	}
}

// ScaleTo: dst = c·x.
func ScaleTo[T Float](dst, x []T, c T) {
	if d, ok := f32(dst); ok {
		vScale(d, s32(x, d), float32(c))
		return
	}
	for i, v := range x[:len(dst)] {
		dst[i] = c * v
	}
}

// AxpyTo: dst += c·x, each product rounded before the sum (no FMA).
func AxpyTo[T Float](dst, x []T, c T) {
	if d, ok := f32(dst); ok {
		vAxpy(d, s32(x, d), float32(c))
		return
	}
	for i, v := range x[:len(dst)] {
		dst[i] += T(c * v)
	}
}

// SumRows adds to o the rows 0 … n−1 of g, each as AddTo(o, row) would, one after the other;
// row r is g[r·stride : r·stride+len(o)]. Where the CPU has AVX-512 (tailK) the sums stay in
// registers across the rows (vSumRows), the same values bit for bit.
func SumRows[T Float](o, g []T, n, stride int) {
	if n <= 0 {
		return
	}
	if d, ok := f32(o); ok && tailK && len(o) > 0 {
		_ = g[(n-1)*stride+len(o)-1] // the rows are in g
		vSumRows(d, any(g).([]float32), nil, n, stride)
		return
	}
	for r := 0; r < n; r++ {
		AddTo(o, g[r*stride:r*stride+len(o)])
	}
}

// SumRowsAt is SumRows over the rows idx[0], idx[1], … (each ≥ 0) of g, in that order.
func SumRowsAt[T Float](o, g []T, idx []int32, stride int) {
	if len(idx) == 0 {
		return
	}
	if d, ok := f32(o); ok && tailK && len(o) > 0 {
		last := 0
		for _, r := range idx {
			last = max(last, int(r))
		}
		_ = g[last*stride+len(o)-1] // the rows are in g
		vSumRows(d, any(g).([]float32), idx, 0, stride)
		return
	}
	for _, r := range idx {
		AddTo(o, g[int(r)*stride:int(r)*stride+len(o)])
	}
}

// Add2: dst = a + b.
func Add2[T Float](dst, a, b []T) {
	if d, ok := f32(dst); ok {
		vAdd2(d, s32(a, d), s32(b, d))
		return
	}
	b = b[:len(dst)]
	for i, v := range a[:len(dst)] {
		dst[i] = v + b[i]
	}
}

// Add3: dst = a + b + c.
func Add3[T Float](dst, a, b, c []T) {
	if d, ok := f32(dst); ok {
		vAdd3(d, s32(a, d), s32(b, d), s32(c, d))
		return
	}
	b, c = b[:len(dst)], c[:len(dst)]
	for i, v := range a[:len(dst)] {
		dst[i] = v + b[i] + c[i]
	}
}

// Relu: dst = max(x, 0).
func Relu[T Float](dst, x []T) {
	if d, ok := f32(dst); ok {
		vRelu(d, s32(x, d))
		return
	}
	for i, v := range x[:len(dst)] {
		dst[i] = max(v, 0)
	}
}

// ReluGrad: dst = g where y > 0, else 0. dst may be g (each g[i] is read before dst[i] is
// written).
func ReluGrad[T Float](dst, y, g []T) {
	if d, ok := f32(dst); ok {
		vReluGrad(d, s32(y, d), s32(g, d))
		return
	}
	g = g[:len(dst)]
	for i, v := range y[:len(dst)] {
		if v > 0 {
			dst[i] = g[i]
		} else {
			dst[i] = 0
		}
	}
}

// GatedFwdSigRow: η = σ(e), eta = η, num += η ⊙ b, den += η.
func GatedFwdSigRow[T Float](eta, num, den, e, b []T) {
	if d, ok := f32(eta); ok {
		sig := vGatedFwdSig
		if tailK {
			sig = vGatedFwdSig16
		}
		sig(d, s32(num, d), s32(den, d), s32(e, d), s32(b, d))
		return
	}
	num, den, b = num[:len(eta)], den[:len(eta)], b[:len(eta)]
	for i, v := range e[:len(eta)] {
		h := T(1 / (1 + math.Exp(-float64(v))))
		eta[i] = h
		num[i] += h * b[i]
		den[i] += h
	}
}

// GatedEtaRow sets eta = σ(e) exactly as GatedFwdSigRow computes it (the same kernel, so a
// backward pass recomputing η gets the forward's values bit for bit); tmp holds 2·len(eta)
// values of scratch.
func GatedEtaRow[T Float](eta, e, tmp []T) {
	n := len(eta)
	clear(tmp[:2*n])
	GatedFwdSigRow(eta, tmp[:n], tmp[n:2*n], e, tmp[n:2*n])
}

// GatedBwdRow: with q = h ⊙ g, db += q and de = q ⊙ (1 − h) ⊙ (b − o).
func GatedBwdRow[T Float](de, db, h, g, b, o []T) {
	if d, ok := f32(de); ok {
		vGatedBwd(d, s32(db, d), s32(h, d), s32(g, d), s32(b, d), s32(o, d))
		return
	}
	db, g, b, o = db[:len(de)], g[:len(de)], b[:len(de)], o[:len(de)]
	for i, v := range h[:len(de)] {
		q := v * g[i]
		db[i] += q
		de[i] = q * (1 - v) * (b[i] - o[i])
	}
}

// StatsRow: with v = x − k, s1 += v and s2 += v ⊙ v.
func StatsRow[T Float](s1, s2, x, k []T) {
	if d, ok := f32(s1); ok {
		vStats(d, s32(s2, d), s32(x, d), s32(k, d))
		return
	}
	s2, k = s2[:len(s1)], k[:len(s1)]
	for i, xv := range x[:len(s1)] {
		v := xv - k[i]
		s1[i] += v
		s2[i] += v * v
	}
}

// Stats2Row: s1 += dy, s2 += dy ⊙ (x − mu).
func Stats2Row[T Float](s1, s2, dy, x, mu []T) {
	if d, ok := f32(s1); ok {
		vStats2(d, s32(s2, d), s32(dy, d), s32(x, d), s32(mu, d))
		return
	}
	s2, x, mu = s2[:len(s1)], x[:len(s1)], mu[:len(s1)]
	for i, g := range dy[:len(s1)] {
		s1[i] += g
		s2[i] += g * (x[i] - mu[i])
	}
}

// AffineRow: dst = (x − mu) ⊙ p + q.
func AffineRow[T Float](dst, x, mu, p, q []T) {
	if d, ok := f32(dst); ok {
		vAffine(d, s32(x, d), s32(mu, d), s32(p, d), s32(q, d))
		return
	}
	mu, p, q = mu[:len(dst)], p[:len(dst)], q[:len(dst)]
	for i, v := range x[:len(dst)] {
		dst[i] = (v-mu[i])*p[i] + q[i]
	}
}

// BNBackRow: dst = a ⊙ dy + b ⊙ (x − mu) + c.
func BNBackRow[T Float](dst, dy, x, mu, a, b, c []T) {
	if d, ok := f32(dst); ok {
		vBNBack(d, s32(dy, d), s32(x, d), s32(mu, d), s32(a, d), s32(b, d), s32(c, d))
		return
	}
	x, mu, a, b, c = x[:len(dst)], mu[:len(dst)], a[:len(dst)], b[:len(dst)], c[:len(dst)]
	for i, g := range dy[:len(dst)] {
		dst[i] = a[i]*g + b[i]*(x[i]-mu[i]) + c[i]
	}
}

// AffineReluRow: dst = max((x − mu) ⊙ p + q, 0).
func AffineReluRow[T Float](dst, x, mu, p, q []T) {
	if d, ok := f32(dst); ok {
		vAffineRelu(d, s32(x, d), s32(mu, d), s32(p, d), s32(q, d))
		return
	}
	mu, p, q = mu[:len(dst)], p[:len(dst)], q[:len(dst)]
	for i, v := range x[:len(dst)] {
		dst[i] = max((v-mu[i])*p[i]+q[i], 0)
	}
}

// AffineReluAddRow: dst = r + max((x − mu) ⊙ p + q, 0).
func AffineReluAddRow[T Float](dst, x, mu, p, q, r []T) {
	if d, ok := f32(dst); ok {
		vAffineReluAdd(d, s32(x, d), s32(mu, d), s32(p, d), s32(q, d), s32(r, d))
		return
	}
	mu, p, q, r = mu[:len(dst)], p[:len(dst)], q[:len(dst)], r[:len(dst)]
	for i, v := range x[:len(dst)] {
		dst[i] = r[i] + max((v-mu[i])*p[i]+q[i], 0)
	}
}

// StatsReluRow: with u = g where (x − mu) ⊙ p + q > 0 (else 0), s1 += u and s2 += u ⊙ (x − mu).
func StatsReluRow[T Float](s1, s2, g, x, mu, p, q []T) {
	if d, ok := f32(s1); ok {
		vStatsRelu(d, s32(s2, d), s32(g, d), s32(x, d), s32(mu, d), s32(p, d), s32(q, d))
		return
	}
	s2, g, mu, p, q = s2[:len(s1)], g[:len(s1)], mu[:len(s1)], p[:len(s1)], q[:len(s1)]
	for i, xv := range x[:len(s1)] {
		if v := xv - mu[i]; v*p[i]+q[i] > 0 {
			s1[i] += g[i]
			s2[i] += g[i] * v
		}
	}
}

// StatsRows is StatsRow(s1, s2, row r of x, k) for each kept row r < len(keep), in order; row r
// is x[r·stride:], len(s1) values. Where the CPU has AVX-512 (tailK) the sums stay in registers
// across the rows (vStatsRows), the same values bit for bit.
func StatsRows[T Float](s1, s2, x, k []T, keep []bool, stride int) {
	if d, ok := f32(s1); ok && tailK && len(d) > 0 && len(keep) > 0 {
		n := len(d)
		_, _, _ = s2[n-1], k[n-1], x[(len(keep)-1)*stride+n-1] // what the kernel reads
		vStatsRows(d, s32(s2, d), any(x).([]float32), s32(k, d), keep, len(keep), stride)
		return
	}
	for r, kept := range keep {
		if kept {
			StatsRow(s1, s2, x[r*stride:], k)
		}
	}
}

// Stats2Rows is Stats2Row(s1, s2, row r of dy, row r of x, mu) for each kept row r, in order
// (rows as in StatsRows; vStats2Rows on AVX-512).
func Stats2Rows[T Float](s1, s2, dy, x, mu []T, keep []bool, stride int) {
	if d, ok := f32(s1); ok && tailK && len(d) > 0 && len(keep) > 0 {
		n, last := len(d), (len(keep)-1)*stride+len(d)-1
		_, _, _, _ = s2[n-1], mu[n-1], dy[last], x[last]
		vStats2Rows(d, s32(s2, d), any(dy).([]float32), any(x).([]float32), s32(mu, d), keep, len(keep), stride)
		return
	}
	for r, kept := range keep {
		if kept {
			Stats2Row(s1, s2, dy[r*stride:], x[r*stride:], mu)
		}
	}
}

// StatsReluRows is StatsReluRow(s1, s2, row r of g, row r of x, mu, p, q) for each kept row r, in
// order (rows as in StatsRows; vStatsReluRows on AVX-512).
func StatsReluRows[T Float](s1, s2, g, x, mu, p, q []T, keep []bool, stride int) {
	if d, ok := f32(s1); ok && tailK && len(d) > 0 && len(keep) > 0 {
		n, last := len(d), (len(keep)-1)*stride+len(d)-1
		_, _, _, _, _, _ = s2[n-1], mu[n-1], p[n-1], q[n-1], g[last], x[last]
		vStatsReluRows(d, s32(s2, d), any(g).([]float32), any(x).([]float32), s32(mu, d), s32(p, d), s32(q, d), keep, len(keep), stride)
		return
	}
	for r, kept := range keep {
		if kept {
			StatsReluRow(s1, s2, g[r*stride:], x[r*stride:], mu, p, q)
		}
	}
}

// BNBackReluRow: with u as in StatsReluRow, dst = a ⊙ u + b ⊙ (x − mu) + c.
func BNBackReluRow[T Float](dst, g, x, mu, p, q, a, b, c []T) {
	if d, ok := f32(dst); ok {
		vBNBackRelu(d, s32(g, d), s32(x, d), s32(mu, d), s32(p, d), s32(q, d), s32(a, d), s32(b, d), s32(c, d))
		return
	}
	g, mu, p, q = g[:len(dst)], mu[:len(dst)], p[:len(dst)], q[:len(dst)]
	a, b, c = a[:len(dst)], b[:len(dst)], c[:len(dst)]
	for i, xv := range x[:len(dst)] {
		v, u := xv-mu[i], g[i]
		if !(v*p[i]+q[i] > 0) {
			u = 0
		}
		dst[i] = a[i]*u + b[i]*v + c[i]
	}
}
