package data

import (
	"fmt"
	"math"
	"slices"
)

// SuperpixelOptions says how images become superpixel graphs (Knyazev et al.'s extraction as
// used by benchmarking-gnns; docs/protocol.md §"MNIST and CIFAR10").
type SuperpixelOptions struct {
	MaxNodes    int     // at most this many superpixels (75 MNIST, 150 CIFAR-10)
	Compactness float64 // SLIC compactness (0.25 MNIST, 10 CIFAR-10)
	QueryExtra  int     // SLIC is first asked for MaxNodes+QueryExtra segments (20 MNIST, 50 CIFAR-10), one fewer each time until ≤ MaxNodes come out
	K           int     // out-degree of the kNN graph (8)
	Limit       int     // if > 0, only the first Limit images of the split (for tests and quick runs)
}

// MNISTSuperpixels returns the MNIST recipe: ≤ 75 superpixels, compactness 0.25.
func MNISTSuperpixels() SuperpixelOptions {
	return SuperpixelOptions{MaxNodes: 75, Compactness: 0.25, QueryExtra: 20, K: 8}
}

// CIFAR10Superpixels returns the CIFAR-10 recipe: ≤ 150 superpixels, compactness 10 (colour in
// CIE Lab).
func CIFAR10Superpixels() SuperpixelOptions {
	return SuperpixelOptions{MaxNodes: 150, Compactness: 10, QueryExtra: 50, K: 8}
}

func (o *SuperpixelOptions) validate() error {
	if o.MaxNodes < 1 || o.Compactness <= 0 || o.QueryExtra < 0 || o.K < 1 {
		return fmt.Errorf("superpixels: invalid options %+v", *o)
	}
	return nil
}

// Superpixels segments image i of im and returns, per superpixel, its mean value of every
// channel in [0, 1] and its centroid (row, column) divided by the image side, and the number
// of superpixels. The features are in node order, 2+Channels values per node.
func Superpixels(im *Images, i int, o SuperpixelOptions) ([]float32, int, error) {
	if err := o.validate(); err != nil {
		return nil, 0, err
	}
	h, w, nc := im.Rows, im.Cols, im.Channels
	px := im.Image(i)
	// pixel-major float image in [0, 1]; colour images go to Lab for SLIC
	raw := make([]float64, h*w*nc)
	for ch := 0; ch < nc; ch++ {
		for p := 0; p < h*w; p++ {
			raw[p*nc+ch] = float64(px[ch*h*w+p]) / 255
		}
	}
	sl := &slicImage{h: h, w: w, c: nc, v: raw}
	if nc == 3 {
		lab := make([]float64, len(raw))
		for p := 0; p < h*w; p++ {
			lab[3*p], lab[3*p+1], lab[3*p+2] = rgbToLab(raw[3*p], raw[3*p+1], raw[3*p+2])
		}
		sl.v = lab
	}
	var labels []int32
	k := o.MaxNodes + 1
	sc := slicer{im: sl, compactness: o.Compactness}
	for query := o.MaxNodes + o.QueryExtra; k > o.MaxNodes; query-- {
		if query < 1 {
			return nil, 0, fmt.Errorf("superpixels: image %d: no segmentation with at most %d superpixels", i, o.MaxNodes)
		}
		labels, k = sc.segment(query)
	}
	if k < 1 {
		return nil, 0, fmt.Errorf("superpixels: image %d: empty segmentation", i)
	}
	dim := nc + 2
	sum := make([]float64, k*dim)
	cnt := make([]float64, k)
	for p, l := range labels {
		row := sum[int(l)*dim : (int(l)+1)*dim]
		for ch := 0; ch < nc; ch++ {
			row[ch] += raw[p*nc+ch]
		}
		row[nc] += float64(p / w)
		row[nc+1] += float64(p % w)
		cnt[l]++
	}
	feat := make([]float32, k*dim)
	for s := 0; s < k; s++ {
		for j := 0; j < dim; j++ {
			v := sum[s*dim+j] / cnt[s]
			if j == nc {
				v /= float64(h)
			} else if j == nc+1 {
				v /= float64(w)
			}
			feat[s*dim+j] = float32(v)
		}
	}
	return feat, k, nil
}

// KNNGraph builds the superpixel graph of docs/protocol.md §"MNIST and CIFAR10" from n node
// coordinates (x[2i], x[2i+1]):
// K_ij = exp(−(‖x_i−x_j‖/σ_i)²) with σ_i the mean distance from i to its k nearest other nodes,
// A = ½(K + Kᵀ) with zero diagonal, and directed edges from each node to the k nodes of largest
// A_ij (ties to the lower index), edge feature A_ij. A graph with at most k+1 nodes is complete
// (no self-loops). bgnn takes "8 of the 9 largest" per row through a partial sort whose choice
// is implementation-defined; this takes the 8 largest.
func KNNGraph(coord []float64, n, k int) (src, dst []int32, weight []float32) {
	d := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			dx, dy := coord[2*i]-coord[2*j], coord[2*i+1]-coord[2*j+1]
			d[i*n+j] = math.Sqrt(dx*dx + dy*dy)
		}
	}
	sigma := make([]float64, n)
	row := make([]float64, n)
	for i := 0; i < n; i++ {
		if n <= k { // numpy's partition fails; bgnn uses σ = 1 (irrelevant: complete graph)
			sigma[i] = 1 + 1e-8
			continue
		}
		copy(row, d[i*n:(i+1)*n])
		slices.Sort(row)
		s := 0.0
		for _, v := range row[:k+1] { // includes the zero self-distance
			s += v
		}
		sigma[i] = s/float64(k) + 1e-8
	}
	a := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			ki := math.Exp(-math.Pow(d[i*n+j]/sigma[i], 2))
			kj := math.Exp(-math.Pow(d[j*n+i]/sigma[j], 2))
			a[i*n+j] = 0.5 * (ki + kj)
		}
	}
	idx := make([]int, 0, n)
	for i := 0; i < n; i++ {
		idx = idx[:0]
		for j := 0; j < n; j++ {
			if j != i {
				idx = append(idx, j)
			}
		}
		if n > k+1 {
			r := a[i*n : (i+1)*n]
			slices.SortStableFunc(idx, func(p, q int) int {
				switch {
				case r[p] > r[q]:
					return -1
				case r[p] < r[q]:
					return 1
				}
				return 0
			})
			idx = idx[:k]
			slices.Sort(idx)
		}
		for _, j := range idx {
			src = append(src, int32(i))
			dst = append(dst, int32(j))
			weight = append(weight, float32(a[i*n+j]))
		}
	}
	return src, dst, weight
}

// SuperpixelGraphs turns images into graphs in parallel: node features are the mean channel
// values and the centroid (row, column)/side (Float, Channels+2 per node), edges the directed kNN
// graph with one float feature, and Label the image class.
func SuperpixelGraphs(im *Images, o SuperpixelOptions) ([]*Graph, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	count := im.Count
	if o.Limit > 0 {
		count = min(count, o.Limit)
	}
	gs := make([]*Graph, count)
	errs := make([]error, count)
	nc := im.Channels
	parallelFor(count, func(i int) {
		feat, n, err := Superpixels(im, i, o)
		if err != nil {
			errs[i] = err
			return
		}
		dim := nc + 2
		coord := make([]float64, 2*n)
		for s := 0; s < n; s++ {
			coord[2*s] = float64(feat[s*dim+nc])
			coord[2*s+1] = float64(feat[s*dim+nc+1])
		}
		src, dst, wt := KNNGraph(coord, n, o.K)
		gs[i] = &Graph{N: n, Src: src, Dst: dst,
			Node:  Features{FloatDim: dim, Float: feat},
			Edge:  Features{FloatDim: 1, Float: wt},
			Label: int32(im.Labels[i])}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return gs, nil
}

// LoadMNIST returns one split of the MNIST superpixel dataset built from the idx files in
// dir/mnist.
func LoadMNIST(dir, split string, o SuperpixelOptions) ([]*Graph, error) {
	im, err := LoadMNISTImages(dir, split)
	if err != nil {
		return nil, err
	}
	return SuperpixelGraphs(im, o)
}

// LoadCIFAR10 returns one split of the CIFAR-10 superpixel dataset built from the binary batch
// files in dir/cifar10.
func LoadCIFAR10(dir, split string, o SuperpixelOptions) ([]*Graph, error) {
	im, err := LoadCIFAR10Images(dir, split)
	if err != nil {
		return nil, err
	}
	return SuperpixelGraphs(im, o)
}
