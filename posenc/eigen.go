package posenc

import (
	"errors"
	"math"
)

// This file finds the k smallest eigenpairs of a small dense symmetric matrix in O(n³/1.5 + k·n²):
// a Householder reduction to tridiagonal form, all eigenvalues of the tridiagonal matrix by the
// implicit QL method without vectors, then eigenvectors for the k smallest by inverse iteration
// on the tridiagonal matrix (re-orthogonalised within clusters of close eigenvalues), mapped
// back through the Householder reflectors. A full decomposition costs several times more, and
// the encodings need only q+1 of n eigenvectors.

var errNoConvergence = errors.New("eigen: no convergence")

// eigenWork is the reusable workspace of smallestEigen.
type eigenWork struct {
	d, f, h, vals       []float64
	p                   []float64
	diag, up1, up2, mul []float64
	swap                []bool
	x                   []float64
}

// smallestEigen overwrites the n×n symmetric matrix a (row-major; only the lower triangle is
// read) and returns its k smallest
// eigenvalues in ascending order, with orthonormal eigenvectors in vecs (k rows of n).
func (w *eigenWork) smallestEigen(a []float64, n, k int, vals, vecs []float64) error {
	if n == 0 || k == 0 {
		return nil
	}
	w.d, w.f, w.h = fit(w.d, n), fit(w.f, n), fit(w.h, n)
	w.p = fit(w.p, n)
	tridiagonalize(a, n, w.d, w.f, w.h, w.p)
	norm := tridiagNorm(w.d, w.f[:n-1])
	w.vals = fit(w.vals, n)
	copy(w.vals, w.d)
	w.x = fit(w.x, n)
	off := w.x // scratch: the QL iteration destroys the off-diagonal
	copy(off, w.f[:n-1])
	off[n-1] = 0
	if err := qlEigenvalues(w.vals, off); err != nil {
		return err
	}
	insertionSort(w.vals)
	copy(vals, w.vals[:k])
	if err := w.inverseIteration(n, k, vals, vecs, norm); err != nil {
		return err
	}
	for j := 0; j < k; j++ {
		backTransform(a, n, w.h, vecs[j*n:(j+1)*n])
	}
	return nil
}

// tridiagonalize reduces the symmetric n×n matrix a (only its lower triangle is read) to
// tridiagonal form T = Qᵀ a Q by
// Householder reflections H_i (i = n-1 … 1, each acting on indices 0..i-1), working from the
// last row up. On return d is T's diagonal, f[i] couples i and i+1, and row i of a holds the
// reflector vector u_i in its first i entries, with h[i] = uᵀu/2 (0: no reflection), so that
// H_i = I − u uᵀ/h[i] and Q = H_{n-1} ⋯ H_1. p is scratch of length n.
func tridiagonalize(a []float64, n int, d, f, h, p []float64) {
	for i := n - 1; i >= 1; i-- {
		l := i - 1
		u := a[i*n : i*n+i]
		h[i] = 0
		scale := 0.0
		for _, x := range u {
			scale += math.Abs(x)
		}
		if l == 0 || scale == 0 {
			f[l] = u[l]
			d[i] = a[i*n+i]
			continue
		}
		sigma := 0.0
		for j := range u {
			u[j] /= scale
			sigma += u[j] * u[j]
		}
		x := u[l]
		g := math.Sqrt(sigma)
		if x >= 0 {
			g = -g
		}
		f[l] = scale * g
		hh := sigma - x*g
		u[l] = x - g
		h[i] = hh
		// p = A u / hh over the leading i×i block, reading only its lower triangle (each
		// entry serves row j and, mirrored, row c); K = uᵀp / (2 hh); q = p − K u.
		pp := p[:i]
		clear(pp)
		for j := 0; j < i; j++ {
			row := a[j*n : j*n+j+1]
			uj := u[j]
			s := row[j] * uj
			for c, v := range row[:j] {
				s += v * u[c]
				pp[c] += v * uj
			}
			pp[j] += s
		}
		kk := 0.0
		for j := range pp {
			pp[j] /= hh
			kk += u[j] * pp[j]
		}
		kk /= 2 * hh
		for j := range pp {
			pp[j] -= kk * u[j]
		}
		// A ← A − q uᵀ − u qᵀ on the lower triangle of the leading block.
		for j := 0; j < i; j++ {
			row := a[j*n : j*n+j+1]
			qj, uj := pp[j], u[j]
			for c := range row {
				row[c] -= qj*u[c] + uj*pp[c]
			}
		}
		d[i] = a[i*n+i]
	}
	d[0] = a[0]
	f[n-1] = 0
}

// backTransform maps an eigenvector y of T to one of the original matrix: y ← H_{n-1}⋯H_1 y.
func backTransform(a []float64, n int, h, y []float64) {
	for i := 1; i < n; i++ {
		if h[i] == 0 {
			continue
		}
		u := a[i*n : i*n+i]
		s := 0.0
		for j, v := range u {
			s += v * y[j]
		}
		s /= h[i]
		for j, v := range u {
			y[j] -= s * v
		}
	}
}

// tridiagNorm is the largest absolute row sum of the tridiagonal matrix (d, f).
func tridiagNorm(d, f []float64) float64 {
	norm := 0.0
	for i := range d {
		s := math.Abs(d[i])
		if i > 0 {
			s += math.Abs(f[i-1])
		}
		if i < len(f) {
			s += math.Abs(f[i])
		}
		norm = math.Max(norm, s)
	}
	return norm
}

// qlEigenvalues replaces d with the eigenvalues of the symmetric tridiagonal matrix with
// diagonal d and off-diagonal e (e[i] couples i and i+1; e is destroyed) by the implicit QL
// method with Wilkinson shifts.
func qlEigenvalues(d, e []float64) error {
	n := len(d)
	for l := 0; l < n; l++ {
		for iter := 0; ; iter++ {
			m := l
			for ; m < n-1; m++ {
				dd := math.Abs(d[m]) + math.Abs(d[m+1])
				if math.Abs(e[m]) <= 0x1p-53*dd {
					break
				}
			}
			if m == l {
				break
			}
			if iter == 60 {
				return errNoConvergence
			}
			g := (d[l+1] - d[l]) / (2 * e[l])
			r := math.Sqrt(g*g + 1) // entries are O(1): no overflow, so no need for Hypot's scaling
			g = d[m] - d[l] + e[l]/(g+math.Copysign(r, g))
			s, c, p := 1.0, 1.0, 0.0
			i := m - 1
			for ; i >= l; i-- {
				ff, b := s*e[i], c*e[i]
				r = math.Sqrt(ff*ff + g*g)
				e[i+1] = r
				if r == 0 {
					d[i+1] -= p
					e[m] = 0
					break
				}
				inv := 1 / r // one division on the critical path instead of two
				s, c = ff*inv, g*inv
				g = d[i+1] - p
				r = (d[i]-g)*s + 2*c*b
				p = s * r
				d[i+1] = g + p
				g = c*r - b
			}
			if r == 0 && i >= l {
				continue
			}
			d[l] -= p
			e[l] = g
			e[m] = 0
		}
	}
	return nil
}

func insertionSort(x []float64) {
	for i := 1; i < len(x); i++ {
		v := x[i]
		j := i - 1
		for ; j >= 0 && x[j] > v; j-- {
			x[j+1] = x[j]
		}
		x[j+1] = v
	}
}

// inverseIteration finds unit eigenvectors of the tridiagonal (d, f) for the eigenvalues vals,
// writing them as rows of vecs. Eigenvalues closer than 1e-3·norm form a cluster: their shifts
// are separated slightly and each new vector is orthogonalised against the cluster's earlier
// ones, so repeated eigenvalues get an orthonormal basis of their eigenspace.
func (w *eigenWork) inverseIteration(n, k int, vals, vecs []float64, norm float64) error {
	if norm == 0 { // the zero matrix: any orthonormal basis will do
		clear(vecs[:k*n])
		for j := 0; j < k; j++ {
			vecs[j*n+j] = 1
		}
		return nil
	}
	w.diag, w.up1, w.up2, w.mul = fit(w.diag, n), fit(w.up1, n), fit(w.up2, n), fit(w.mul, n)
	if cap(w.swap) < n {
		w.swap = make([]bool, n)
	}
	w.swap = w.swap[:n]
	eps := 0x1p-52
	clusterTol := 1e-3 * norm
	pivotFloor := eps * norm
	clusterStart := 0
	shift := 0.0
	for j := 0; j < k; j++ {
		lambda := vals[j]
		if j > 0 && lambda-vals[j-1] < clusterTol {
			// Same cluster: keep the shifts apart by at least a few ulps of the norm.
			if lambda-shift < 10*eps*norm {
				lambda = shift + 10*eps*norm
			}
		} else {
			clusterStart = j
		}
		shift = lambda
		w.factor(w.d[:n], w.f[:n], lambda, pivotFloor)
		x := vecs[j*n : (j+1)*n]
		seed := uint64(j)*0x9E3779B97F4A7C15 + 1
		for i := range x { // a fixed pseudo-random start, the same on every run
			seed = seed*6364136223846793005 + 1442695040888963407
			x[i] = float64(int64(seed>>11)%2001-1000) / 1000
		}
		tol := 64 * float64(n) * eps * norm
		converged := false
		for iter := 0; iter < 6 && !converged; iter++ {
			orthogonalize(vecs, n, clusterStart, j)
			normalize(x)
			w.solve(x)
			orthogonalize(vecs, n, clusterStart, j)
			normalize(x)
			converged = residual(w.d[:n], w.f[:n], vals[j], x) <= tol
		}
		if !converged {
			return errNoConvergence
		}
	}
	return nil
}

// factor computes the LU factorisation with partial pivoting of T − λI.
func (w *eigenWork) factor(d, f []float64, lambda, floor float64) {
	n := len(d)
	a0, a1 := d[0]-lambda, 0.0 // the active row: entries at columns i and i+1
	if n > 1 {
		a1 = f[0]
	}
	for i := 0; i < n-1; i++ {
		sub, nd := f[i], d[i+1]-lambda
		nf := 0.0
		if i+1 < n-1 {
			nf = f[i+1]
		}
		if math.Abs(a0) >= math.Abs(sub) {
			if a0 == 0 {
				a0 = floor
			}
			w.swap[i] = false
			w.diag[i], w.up1[i], w.up2[i] = a0, a1, 0
			m := sub / a0
			w.mul[i] = m
			a0, a1 = nd-m*a1, nf
		} else {
			w.swap[i] = true
			w.diag[i], w.up1[i], w.up2[i] = sub, nd, nf
			m := a0 / sub
			w.mul[i] = m
			a0, a1 = a1-m*nd, -m*nf
		}
	}
	if math.Abs(a0) < floor {
		a0 = math.Copysign(floor, a0)
		if a0 == 0 {
			a0 = floor
		}
	}
	w.diag[n-1] = a0
}

// solve overwrites b with (T − λI)⁻¹ b using the factorisation of factor.
func (w *eigenWork) solve(b []float64) {
	n := len(b)
	for i := 0; i < n-1; i++ {
		if w.swap[i] {
			b[i], b[i+1] = b[i+1], b[i]
		}
		b[i+1] -= w.mul[i] * b[i]
	}
	for i := n - 1; i >= 0; i-- {
		s := b[i]
		if i+1 < n {
			s -= w.up1[i] * b[i+1]
		}
		if i+2 < n {
			s -= w.up2[i] * b[i+2]
		}
		b[i] = s / w.diag[i]
	}
}

// orthogonalize removes from row j of vecs its components along rows from..j-1.
func orthogonalize(vecs []float64, n, from, j int) {
	x := vecs[j*n : (j+1)*n]
	for i := from; i < j; i++ {
		v := vecs[i*n : (i+1)*n]
		s := 0.0
		for c := range x {
			s += x[c] * v[c]
		}
		for c := range x {
			x[c] -= s * v[c]
		}
	}
}

// normalize scales x to unit length and returns its length before.
func normalize(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	s = math.Sqrt(s)
	if s == 0 {
		return 0
	}
	inv := 1 / s
	for i := range x {
		x[i] *= inv
	}
	return s
}

// residual returns ‖T x − λ x‖∞ for the tridiagonal (d, f).
func residual(d, f []float64, lambda float64, x []float64) float64 {
	n := len(x)
	worst := 0.0
	for i := 0; i < n; i++ {
		s := (d[i] - lambda) * x[i]
		if i > 0 {
			s += f[i-1] * x[i-1]
		}
		if i+1 < n {
			s += f[i] * x[i+1]
		}
		worst = math.Max(worst, math.Abs(s))
	}
	return worst
}

func fit(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}
