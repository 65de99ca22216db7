package data

import (
	"math"
	"sort"
)

// SLIC superpixels for 2-D images, following the algorithm as scikit-image (0.16, the version
// of Knyazev et al.'s extraction scripts) runs it with its defaults: a regular grid of seeds,
// seed colours starting at zero, colour scaled by 1/compactness, spatial distance weighted by
// 1/step², a search window of ±2·step, always max_iter = 10 iterations, then connected
// components enforced with min_size = ⌊0.5·pixels/n⌋ and max_size = ⌊3·pixels/n⌋ (components
// are cut into pieces of at most max_size pixels; pieces smaller than min_size join a
// neighbouring one). This file is an independent Go implementation of that procedure.

// slicImage is a float image: H×W pixels with C values each, pixel-major.
type slicImage struct {
	h, w, c int
	v       []float64
}

// regularGrid returns, for an array of the given shape and n points, the start and step of the
// seed grid along each axis (scikit-image's regular_grid).
func regularGrid(shape []int, n int) (starts, steps []int) {
	nd := len(shape)
	starts, steps = make([]int, nd), make([]int, nd)
	space := 1.0
	for _, s := range shape {
		space *= float64(s)
	}
	if space <= float64(n) {
		for i := range steps {
			steps[i] = 1
		}
		return starts, steps
	}
	order := make([]int, nd) // axis indices sorted by size
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return shape[order[a]] < shape[order[b]] })
	sorted := make([]float64, nd)
	for i, a := range order {
		sorted[i] = float64(shape[a])
	}
	st := make([]float64, nd)
	for i := range st {
		st[i] = math.Pow(space/float64(n), 1/float64(nd))
	}
	anyBelow := false
	for i := range st {
		if sorted[i] < st[i] {
			anyBelow = true
		}
	}
	if anyBelow {
		for dim := 0; dim < nd; dim++ {
			st[dim] = sorted[dim]
			rest := 1.0
			for _, s := range sorted[dim+1:] {
				rest *= s
			}
			for j := dim + 1; j < nd; j++ {
				st[j] = math.Pow(rest/float64(n), 1/float64(nd-dim-1))
			}
			ok := true
			for j := range st {
				if sorted[j] < st[j] {
					ok = false
				}
			}
			if ok {
				break
			}
		}
	}
	for i, a := range order {
		starts[a] = int(math.Floor(st[i] / 2))
		steps[a] = int(math.RoundToEven(st[i]))
		if steps[a] < 1 {
			steps[a] = 1
		}
	}
	return starts, steps
}

// slicer runs SLIC on one image for a decreasing number of requested segments, reusing the
// clustering when the seed grid does not change (only the connectivity step depends on n then).
type slicer struct {
	im          *slicImage
	compactness float64
	grid        [6]int
	nearest     []int32
}

// segment returns a label per pixel for n requested segments, numbered 0..k−1 in raster order
// of first appearance, and k.
func (s *slicer) segment(n int) ([]int32, int) {
	h, w := s.im.h, s.im.w
	starts, steps := regularGrid([]int{1, h, w}, n)
	grid := [6]int{starts[0], starts[1], starts[2], steps[0], steps[1], steps[2]}
	if s.nearest == nil || grid != s.grid {
		s.nearest = slicCluster(s.im, starts, steps, s.compactness)
		s.grid = grid
	}
	size := float64(h*w) / float64(n)
	return enforceConnectivity(s.nearest, h, w, int(0.5*size), int(3*size))
}

// slic segments im into about n superpixels (see slicer.segment).
func slic(im *slicImage, n int, compactness float64) ([]int32, int) {
	s := slicer{im: im, compactness: compactness}
	return s.segment(n)
}

// slicCluster runs the iterative clustering from the seed grid (starts, steps) and returns the
// nearest seed of every pixel.
func slicCluster(im *slicImage, starts, steps []int, compactness float64) []int32 {
	const maxIter = 10
	h, w, nc := im.h, im.w, im.c
	shape := []int{1, h, w}
	// seeds: (y, x, colour…), colour starting at zero
	nf := 2 + nc
	var seg []float64
	for y := starts[1]; y < h; y += steps[1] {
		for x := starts[2]; x < w; x += steps[2] {
			row := make([]float64, nf)
			row[0], row[1] = float64(y), float64(x)
			seg = append(seg, row...)
		}
	}
	k := len(seg) / nf
	step := float64(max(steps[0], steps[1], steps[2]))
	ratio := 1 / compactness
	img := make([]float64, len(im.v))
	for i, v := range im.v {
		img[i] = v * ratio
	}
	// the Cython kernel recomputes the grid steps for the actual number of seeds
	_, wsteps := regularGrid(shape, k)
	sy, sx := wsteps[1], wsteps[2]
	spatial := 1 / (step * step)
	nearest := make([]int32, h*w)
	dist := make([]float64, h*w)
	count := make([]int, k)
	alive := make([]bool, k)
	for i := range alive {
		alive[i] = true
	}
	for iter := 0; iter < maxIter; iter++ {
		for i := range dist {
			dist[i] = math.MaxFloat64
		}
		for s := 0; s < k; s++ {
			if !alive[s] {
				continue
			}
			c := seg[s*nf : (s+1)*nf]
			cy, cx := c[0], c[1]
			y0, y1 := int(math.Max(cy-2*float64(sy), 0)), int(math.Min(cy+2*float64(sy)+1, float64(h)))
			x0, x1 := int(math.Max(cx-2*float64(sx), 0)), int(math.Min(cx+2*float64(sx)+1, float64(w)))
			for y := y0; y < y1; y++ {
				dy := (cy - float64(y)) * (cy - float64(y))
				for x := x0; x < x1; x++ {
					dx := (cx - float64(x)) * (cx - float64(x))
					d := (dy + dx) * spatial
					p := (y*w + x) * nc
					for ch := 0; ch < nc; ch++ {
						e := img[p+ch] - c[2+ch]
						d += e * e
					}
					if dist[y*w+x] > d {
						nearest[y*w+x] = int32(s)
						dist[y*w+x] = d
					}
				}
			}
		}
		// recompute centres (a seed that lost all its pixels dies, as with numpy's 0/0 = NaN)
		clear(count)
		for s := 0; s < k; s++ {
			if alive[s] {
				clear(seg[s*nf : (s+1)*nf])
			}
		}
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				s := int(nearest[y*w+x])
				count[s]++
				c := seg[s*nf : (s+1)*nf]
				c[0] += float64(y)
				c[1] += float64(x)
				p := (y*w + x) * nc
				for ch := 0; ch < nc; ch++ {
					c[2+ch] += img[p+ch]
				}
			}
		}
		for s := 0; s < k; s++ {
			if count[s] == 0 {
				alive[s] = false
				continue
			}
			for j := 0; j < nf; j++ {
				seg[s*nf+j] /= float64(count[s])
			}
		}
	}
	return nearest
}

// enforceConnectivity relabels the segmentation into connected pieces (4-neighbourhood) in
// raster order: a breadth-first search grows each piece up to maxSize pixels; a piece smaller
// than minSize takes the label of the last already-labelled neighbour it touched (0 if none).
func enforceConnectivity(labels []int32, h, w, minSize, maxSize int) ([]int32, int) {
	out := make([]int32, h*w)
	for i := range out {
		out[i] = -1
	}
	maxSize = max(maxSize, 1)
	queue := make([]int, 0, maxSize)
	next := int32(0)
	dy := [4]int{0, 0, 1, -1}
	dx := [4]int{1, -1, 0, 0}
	for start := range labels {
		if out[start] >= 0 {
			continue
		}
		label := labels[start]
		adjacent := int32(0)
		out[start] = next
		queue = append(queue[:0], start)
		for visited := 0; visited < len(queue) && len(queue) < maxSize; visited++ {
			y, x := queue[visited]/w, queue[visited]%w
			for i := 0; i < 4; i++ {
				yy, xx := y+dy[i], x+dx[i]
				if yy < 0 || yy >= h || xx < 0 || xx >= w {
					continue
				}
				q := yy*w + xx
				if labels[q] == label && out[q] == -1 {
					out[q] = next
					queue = append(queue, q)
					if len(queue) >= maxSize {
						break
					}
				} else if out[q] >= 0 && out[q] != next {
					adjacent = out[q]
				}
			}
		}
		if len(queue) < minSize {
			for _, q := range queue {
				out[q] = adjacent
			}
		} else {
			next++
		}
	}
	return out, int(next)
}

// rgbToLab converts sRGB values in [0, 1] to CIE Lab (D65, 2° observer), as scikit-image's
// rgb2lab, which SLIC applies to 3-channel images.
func rgbToLab(r, g, b float64) (float64, float64, float64) {
	lin := func(c float64) float64 {
		if c > 0.04045 {
			return math.Pow((c+0.055)/1.055, 2.4)
		}
		return c / 12.92
	}
	r, g, b = lin(r), lin(g), lin(b)
	x := (0.412453*r + 0.357580*g + 0.180423*b) / 0.95047
	y := 0.212671*r + 0.715160*g + 0.072169*b
	z := (0.019334*r + 0.119193*g + 0.950227*b) / 1.08883
	f := func(t float64) float64 {
		if t > 0.008856 {
			return math.Cbrt(t)
		}
		return 7.787*t + 16.0/116
	}
	fx, fy, fz := f(x), f(y), f(z)
	return 116*fy - 16, 500 * (fx - fy), 200 * (fy - fz)
}
