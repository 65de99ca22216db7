package posenc

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/rewiregnn/rewiregnn/data"
	"gonum.org/v1/gonum/mat"
)

// Laplacian computes the spectral node encoding of docs/protocol.md §"Laplacian encoding": the
// eigenvectors of Δ = I − D^-1/2 A D^-1/2 for the q smallest eigenvalues after the first, with A
// symmetrised as max(A, Aᵀ) and degrees clipped below at 1, zero-padded to width q when the graph
// has fewer than q+1 nodes. Each eigenvector's sign is fixed so that its entry of largest magnitude
// (the first one, on ties) is positive. A Laplacian value is a reusable workspace, not safe for
// concurrent use.
type Laplacian struct {
	a, vals, vecs, inv []float64
	work               eigenWork
	fallbacks          int
}

// Fallbacks reports how many graphs needed the full dense eigensolver because the fast path
// did not converge.
func (l *Laplacian) Fallbacks() int { return l.fallbacks }

// Encode writes the encoding of the graph with n nodes and edges src→dst into out (n rows of
// q values).
func (l *Laplacian) Encode(n int, src, dst []int32, q int, out []float32) error {
	if q < 1 {
		return fmt.Errorf("laplacian encoding: q = %d: needs at least one eigenvector", q)
	}
	if err := checkGraph(n, src, dst, q, out); err != nil {
		return fmt.Errorf("laplacian encoding: %w", err)
	}
	clear(out)
	if n == 0 {
		return nil
	}
	k := min(q+1, n)
	l.build(n, src, dst)
	l.vals, l.vecs = fit(l.vals, k), fit(l.vecs, k*n)
	if err := l.work.smallestEigen(l.a, n, k, l.vals, l.vecs); err != nil {
		l.fallbacks++
		l.build(n, src, dst)
		if err := denseSmallest(l.a, n, k, l.vals, l.vecs); err != nil {
			return fmt.Errorf("laplacian encoding: %w", err)
		}
	}
	for j := 1; j < k; j++ {
		v := l.vecs[j*n : (j+1)*n]
		sign := float32(signOfLargest(v))
		for u, x := range v {
			out[u*q+j-1] = sign * float32(x)
		}
	}
	return nil
}

// build fills l.a with the normalised Laplacian.
func (l *Laplacian) build(n int, src, dst []int32) {
	l.a = fit(l.a, n*n)
	a := l.a
	clear(a)
	for m := range src {
		s, d := int(src[m]), int(dst[m])
		a[s*n+d], a[d*n+s] = 1, 1
	}
	l.inv = fit(l.inv, n)
	for u := 0; u < n; u++ {
		deg := 0.0
		for _, x := range a[u*n : (u+1)*n] {
			deg += x
		}
		l.inv[u] = 1 / math.Sqrt(math.Max(deg, 1))
	}
	for u := 0; u < n; u++ {
		row := a[u*n : (u+1)*n]
		iu := l.inv[u]
		for v, x := range row {
			if x != 0 {
				row[v] = -iu * x * l.inv[v]
			}
		}
		row[u]++
	}
}

// signOfLargest returns the sign that makes the entry of largest magnitude positive. Entries
// within a relative 1e-8 of the largest count as ties (symmetric graphs give exact ties up to
// rounding), and the first of them decides, so the choice does not hinge on the last bits.
func signOfLargest(v []float64) float64 {
	best := 0.0
	for _, x := range v {
		if x < 0 {
			x = -x
		}
		if x > best {
			best = x
		}
	}
	tie := best * (1 - 1e-8)
	for _, x := range v {
		if x >= tie {
			return 1
		}
		if -x >= tie {
			return -1
		}
	}
	return 1
}

// denseSmallest is the slow, robust path: a full symmetric eigendecomposition with gonum.
func denseSmallest(a []float64, n, k int, vals, vecs []float64) error {
	var eig mat.EigenSym
	if !eig.Factorize(mat.NewSymDense(n, append([]float64(nil), a...)), true) {
		return fmt.Errorf("dense eigendecomposition failed")
	}
	all := eig.Values(nil) // ascending
	var ev mat.Dense
	eig.VectorsTo(&ev)
	for j := 0; j < k; j++ {
		vals[j] = all[j]
		for i := 0; i < n; i++ {
			vecs[j*n+i] = ev.At(i, j)
		}
	}
	return nil
}

// DrawSigns sets each entry of signs to an independent random sign, +1 or −1 with probability
// ½, consuming one rng.IntN(2) per entry in order: the training-time augmentation of the
// spectral encoding, one sign per column for all nodes of a batch, drawn afresh for every
// training batch (never at evaluation). Training draws them from the run's seeded generator,
// whose state its checkpoints keep, so a run's flips are reproducible and survive a resume.
func DrawSigns(signs []float32, rng *rand.Rand) {
	for j := range signs {
		signs[j] = 1
		if rng.IntN(2) == 0 {
			signs[j] = -1
		}
	}
}

// FlipSigns multiplies every column of the n×q encoding pe by an independent random sign drawn
// as DrawSigns does, the same sign for all nodes, and returns the signs it used.
func FlipSigns(pe []float32, q int, rng *rand.Rand) []float32 {
	signs := make([]float32, q)
	DrawSigns(signs, rng)
	data.ApplySigns(pe, signs)
	return signs
}
