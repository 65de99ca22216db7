package data

import (
	"reflect"
	"testing"
)

func TestRegularGrid(t *testing.T) {
	// values worked out from scikit-image's regular_grid
	for _, tc := range []struct {
		shape         []int
		n             int
		starts, steps []int
	}{
		{[]int{1, 28, 28}, 95, []int{0, 1, 1}, []int{1, 3, 3}},
		{[]int{1, 32, 32}, 200, []int{0, 1, 1}, []int{1, 2, 2}},
		{[]int{1, 28, 28}, 40, []int{0, 2, 2}, []int{1, 4, 4}},
		{[]int{1, 4, 4}, 100, []int{0, 0, 0}, []int{1, 1, 1}},
	} {
		starts, steps := regularGrid(tc.shape, tc.n)
		if !reflect.DeepEqual(starts, tc.starts) || !reflect.DeepEqual(steps, tc.steps) {
			t.Errorf("regularGrid(%v, %d) = %v, %v; want %v, %v", tc.shape, tc.n, starts, steps, tc.starts, tc.steps)
		}
	}
}

func TestSLICRespectsEdges(t *testing.T) {
	// a bright square on a dark background: no superpixel straddles its border
	const side = 28
	im := &slicImage{h: side, w: side, c: 1, v: make([]float64, side*side)}
	for y := 8; y < 20; y++ {
		for x := 8; x < 20; x++ {
			im.v[y*side+x] = 1
		}
	}
	labels, k := slic(im, 95, 0.25)
	if k < 20 || k > 95 {
		t.Fatalf("%d superpixels", k)
	}
	bright := map[int32]bool{}
	dark := map[int32]bool{}
	seen := make([]bool, k)
	for p, l := range labels {
		if l < 0 || int(l) >= k {
			t.Fatalf("label %d outside 0..%d", l, k-1)
		}
		seen[l] = true
		if im.v[p] > 0 {
			bright[l] = true
		} else {
			dark[l] = true
		}
	}
	for l := range bright {
		if dark[l] {
			t.Errorf("superpixel %d covers both regions", l)
		}
	}
	for l, ok := range seen {
		if !ok {
			t.Errorf("label %d unused", l)
		}
	}
}

func TestEnforceConnectivity(t *testing.T) {
	// label 1 appears in two separate pieces and becomes two superpixels; a single pixel of
	// label 2 is too small and joins its neighbour
	labels := []int32{
		1, 1, 0, 0,
		0, 0, 0, 0,
		0, 0, 2, 0,
		0, 0, 1, 1,
	}
	out, k := enforceConnectivity(labels, 4, 4, 2, 100)
	if k != 3 {
		t.Fatalf("%d pieces, want 3: %v", k, out)
	}
	if out[0] != out[1] || out[14] != out[15] || out[0] == out[14] || out[10] != out[2] {
		t.Errorf("relabelled %v", out)
	}
}

func TestRGBToLab(t *testing.T) {
	for _, tc := range []struct{ r, g, b, L, A, B float64 }{
		{0, 0, 0, 0, 0, 0},
		{1, 1, 1, 100, 0, 0},
		{1, 0, 0, 53.24, 80.09, 67.20},
	} {
		L, A, B := rgbToLab(tc.r, tc.g, tc.b)
		if abs(L-tc.L) > 0.05 || abs(A-tc.A) > 0.05 || abs(B-tc.B) > 0.05 {
			t.Errorf("rgbToLab(%g,%g,%g) = %.2f %.2f %.2f, want %.2f %.2f %.2f", tc.r, tc.g, tc.b, L, A, B, tc.L, tc.A, tc.B)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
