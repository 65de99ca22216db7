package cuda

// GPU op tests: every op, forward and backward, against its CPU twin, the nn op (or gorgonia op)
// run by a Gorgonia tape machine on the same float32 inputs; gradients are gorgonia.Grad of
// Σ y ⊙ R for a random R, which is the upstream gradient the GPU backward launcher gets.
// Outputs are poisoned with NaN before each launch, so an element a kernel fails to write
// fails the comparison. Sizes include 1, sizes that are not multiples of the block size,
// padding entries (-1), empty segments and isolated nodes.
//
// Each test computes its CPU reference first (so that part is exercised on every machine)
// and then skips with the probe report where no GPU is found; the top-level test then reports
// SKIP, not PASS. REWIREGNN_REQUIRE_GPU=1 (cuda.EnvRequireGPU) turns that skip into a failure,
// for GPU machines. Run: go test ./cuda -run GPU -v

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/cuda/kernels"
	"github.com/rewiregnn/rewiregnn/gpuopt"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/ops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

var (
	gpuOnce  sync.Once
	gpuDev   *Device
	gpuK     *Kernels
	gpuErr   error
	gpuNoHW  bool
	skipOnce sync.Once
)

// EnvTestDevice picks the device of the TestGPU tests: "gpu" (a GPU or fail), "emu" (the
// emulated GPU even where a GPU exists), or unset: the GPU where one is found, else the
// emulated GPU (OpenEmulator), else SKIP (no C++ compiler; a failure under
// REWIREGNN_REQUIRE_EMU=1).
const EnvTestDevice = "REWIREGNN_TEST_DEVICE"

// EnvTestArch, where set, is the virtual architecture the TestGPU tests compile the kernels
// for on a GPU (gpuopt.Options.Arch, gpu.arch of a run): scripts/gpu-check.sh's check of a
// V100's PTX (70) on a newer GPU. A test switch: a run sets gpu.arch.
const EnvTestArch = "REWIREGNN_TEST_CUDA_ARCH"

// testOptions are the GPU options of the test device: the defaults, with EnvTestArch.
func testOptions() (gpuopt.Options, error) {
	o := gpuopt.Default()
	if v := strings.TrimSpace(os.Getenv(EnvTestArch)); v != "" {
		arch, err := strconv.Atoi(strings.TrimPrefix(v, "compute_"))
		if err != nil {
			return o, fmt.Errorf("%s=%q: want a virtual architecture such as 70", EnvTestArch, v)
		}
		o.Arch = arch
	}
	return o, nil
}

// probeGPU opens the test device and its kernels once per test binary.
func probeGPU() {
	gpuOnce.Do(func() {
		mode := os.Getenv(EnvTestDevice)
		if mode != "emu" {
			o, err := testOptions()
			if err != nil {
				gpuErr = err
				return
			}
			gpuDev, gpuErr = OpenWith(0, o)
			if gpuErr == nil {
				gpuK, gpuErr = gpuDev.Kernels()
				return
			}
			if !cudalib.ErrNoDevice(gpuErr) || RequireGPU() || mode == "gpu" {
				return // a GPU that does not work, or one was required
			}
		}
		o, err := emuTestOptions()
		if err != nil {
			gpuErr = err
			return
		}
		gpuDev, gpuErr = OpenEmulator(o)
		if gpuErr != nil {
			gpuNoHW = emu.Skip() != nil // no compiler (and none required): skip, not fail
			return
		}
		gpuK, gpuErr = gpuDev.Kernels()
	})
}

// emulated reports whether the test device is the emulator.
func emulated() bool { probeGPU(); return gpuDev != nil && gpuDev.emu != nil }

// sameOnEmu compares two device results that the emulated GPU computes alike bit for bit (its
// schedule and cuBLAS are deterministic) and a GPU only within float32 summation error (cuBLAS
// may choose another algorithm or order): sameBits32 on the emulator, near within reduce on a GPU.
func sameOnEmu(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if emulated() {
		sameBits32(t, what, got, want)
	} else {
		near(t, what, got, want, reduce)
	}
}

// gpu returns the test device (a GPU, or the emulated GPU), or skips (neither a GPU nor a C++
// compiler) or fails (a GPU or emulator that does not work, or one that was required).
func gpu(t *testing.T) (*Device, *Kernels) {
	t.Helper()
	probeGPU()
	if gpuErr != nil {
		if gpuNoHW {
			skipOnce.Do(func() { t.Logf("device probe report:\n%v", gpuErr) })
			first, _, _ := strings.Cut(gpuErr.Error(), "\n")
			t.Skipf("no GPU and no emulator, device part skipped (CPU reference computed): %s", first)
		}
		t.Fatalf("device set-up failed: %v", gpuErr)
	}
	return gpuDev, gpuK
}

// skipWithoutGPU, deferred at the top of every TestGPU*, marks the whole test SKIP (not PASS)
// when no device was found: its subtests have computed their CPU references and skipped the
// device part. A test that failed stays failed.
func skipWithoutGPU(t *testing.T) {
	probeGPU()
	if !t.Failed() && gpuErr != nil && gpuNoHW {
		t.Skip("no GPU and no emulator: only the CPU references ran")
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && emulated() && flag.Lookup("test.run").Value.String() == "" && os.Getenv(envMutant) == "" {
		if missing := gpuDev.emu.NotLaunched(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: the op tests never launched these kernels on the emulated GPU: %s\n", strings.Join(missing, ", "))
			code = 1
		} else {
			fmt.Printf("emulated GPU: the op tests launched every one of the %d kernels\n", len(kernels.Sigs))
		}
	}
	if gpuDev != nil {
		if err := gpuDev.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing the test GPU:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// ---- the CPU twin: a float32 Gorgonia graph ----

type twin struct {
	t   *testing.T
	g   *gorgonia.ExprGraph
	rng *rand.Rand
	// forwardFirst reads y from a forward-only run before the full run: Gorgonia's gradients
	// of sigmoid, tanh and exp reuse y's buffer in place and leave y overwritten. Only for
	// graphs without state (a second forward pass would update batch norm's statistics again).
	forwardFirst bool
}

func newTwin(t *testing.T, seed uint64) *twin {
	return &twin{t: t, g: gorgonia.NewGraph(), rng: rand.New(rand.NewPCG(seed, seed*7+1))}
}

func (tw *twin) randn(n int) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(tw.rng.NormFloat64())
	}
	return xs
}

func (tw *twin) mat(name string, data []float32, rows, cols int) *gorgonia.Node {
	v := tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(append([]float32(nil), data...)))
	return gorgonia.NewMatrix(tw.g, tensor.Float32, gorgonia.WithShape(rows, cols), gorgonia.WithValue(v), gorgonia.WithName(name))
}

func (tw *twin) vec(name string, data []float32) *gorgonia.Node {
	v := tensor.New(tensor.WithShape(len(data)), tensor.WithBacking(append([]float32(nil), data...)))
	return gorgonia.NewVector(tw.g, tensor.Float32, gorgonia.WithShape(len(data)), gorgonia.WithValue(v), gorgonia.WithName(name))
}

func (tw *twin) ok(n *gorgonia.Node, err error) *gorgonia.Node {
	tw.t.Helper()
	if err != nil {
		tw.t.Fatal(err)
	}
	return n
}

// run evaluates y and the gradients of Σ y ⊙ dy with respect to wrt.
func (tw *twin) run(y *gorgonia.Node, dy []float32, wrt ...*gorgonia.Node) ([]float32, [][]float32) {
	tw.t.Helper()
	s := y.Shape()
	var r *gorgonia.Node
	if len(s) == 1 {
		r = tw.vec("R", dy)
	} else {
		r = tw.mat("R", dy, s[0], s[1])
	}
	loss := tw.ok(gorgonia.Sum(tw.ok(gorgonia.HadamardProd(y, r))))
	return tw.runLoss(y, loss, wrt...)
}

// runLoss evaluates y and the gradients of the scalar loss.
func (tw *twin) runLoss(y, loss *gorgonia.Node, wrt ...*gorgonia.Node) ([]float32, [][]float32) {
	tw.t.Helper()
	var grads gorgonia.Nodes
	if len(wrt) > 0 {
		var err error
		if grads, err = gorgonia.Grad(loss, wrt...); err != nil {
			tw.t.Fatalf("CPU twin gradient: %v", err)
		}
	}
	var out []float32
	if tw.forwardFirst {
		fwd := gorgonia.NewTapeMachine(tw.g.SubgraphRoots(y))
		defer fwd.Close()
		if err := fwd.RunAll(); err != nil {
			tw.t.Fatalf("CPU twin forward: %v", err)
		}
		out = values(tw.t, y)
	}
	vm := gorgonia.NewTapeMachine(tw.g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		tw.t.Fatalf("CPU twin: %v", err)
	}
	if out == nil {
		out = values(tw.t, y)
	}
	gs := make([][]float32, len(grads))
	for i, gn := range grads {
		gs[i] = values(tw.t, gn)
	}
	return out, gs
}

func values(t *testing.T, n *gorgonia.Node) []float32 {
	t.Helper()
	switch v := n.Value().Data().(type) {
	case []float32:
		return append([]float32(nil), v...)
	case float32:
		return []float32{v}
	}
	t.Fatalf("%v holds %T, want float32", n, n.Value().Data())
	return nil
}

// ---- random inputs ----

// size is one test shape: n rows in (edges, gathered rows), rows out (nodes), d features.
type size struct{ n, rows, d int }

// sizes covers 1, sizes that are not multiples of 32 or 256, and rows > n (isolated nodes).
// The last makes every grid-stride and warp loop of the emulated GPU (1 SM: 32 blocks) take
// several passes and the column reductions split their rows into chunks (colReduceGeometry).
var sizes = []size{{1, 1, 1}, {31, 7, 33}, {257, 100, 70}, {1000, 300, 17}, {2600, 2100, 40}}

// randIndex draws n entries in [0, used) with about a tenth -1 (padding); rows ≥ used, so
// rows used..rows-1 never appear (isolated nodes, empty segments).
func randIndex(rng *rand.Rand, n, used int) []int32 {
	ix := make([]int32, n)
	for i := range ix {
		if rng.IntN(10) == 0 || used == 0 {
			ix[i] = -1
			continue
		}
		ix[i] = int32(rng.IntN(used))
	}
	return ix
}

func usedRows(rows int) int { return max(1, rows*3/4) }

func f64s(xs []float32) []float64 {
	out := make([]float64, len(xs))
	for i, v := range xs {
		out[i] = float64(v)
	}
	return out
}

// ---- device helpers ----

type dev struct {
	t *testing.T
	d *Device
}

func (g dev) up(xs []float32) DevPtr {
	g.t.Helper()
	p, err := g.d.Alloc(4 * max(len(xs), 1))
	if err != nil {
		g.t.Fatal(err)
	}
	if err := CopyToDevice(g.d, p, xs); err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { g.d.Free(p) })
	return p
}

func (g dev) upI(xs []int32) DevPtr {
	g.t.Helper()
	p, err := g.d.Alloc(4 * max(len(xs), 1))
	if err != nil {
		g.t.Fatal(err)
	}
	if err := CopyToDevice(g.d, p, xs); err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { g.d.Free(p) })
	return p
}

// poison returns a buffer of n elements filled with NaN.
func (g dev) poison(n int) DevPtr {
	g.t.Helper()
	p, err := g.d.Alloc(4 * max(n, 1))
	if err != nil {
		g.t.Fatal(err)
	}
	if err := g.d.Fill(p, max(n, 1), float32(math.NaN())); err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { g.d.Free(p) })
	return p
}

// scalars uploads a step's scalars: Adam's of update step of a, and the dropout mix.
func (g dev) scalars(a Adam, step int, mix uint64) DevPtr {
	g.t.Helper()
	s := StepScalars{Mix: mix}
	if err := s.AdamScalars(a, step); err != nil {
		g.t.Fatal(err)
	}
	w := s.Words()
	p := g.poison(StepScalarWords)
	if err := CopyToDevice(g.d, p, w[:]); err != nil {
		g.t.Fatal(err)
	}
	return p
}

func (g dev) down(p DevPtr, n int) []float32 {
	g.t.Helper()
	out := make([]float32, n)
	if err := CopyFromDevice(g.d, out, p); err != nil {
		g.t.Fatal(err)
	}
	return out
}

// tol is a comparison tolerance: |got − want| ≤ abs·max(1, max|want|) + rel·|want|.
type tol struct{ rel, abs float64 }

var (
	exact  = tol{1e-6, 1e-7} // copies, products of two numbers, sums of a few
	reduce = tol{1e-4, 1e-5} // float32 sums over many terms, exp/log, atomics in any order
)

// near compares a GPU result with its CPU twin; NaN (an unwritten, poisoned element) fails.
func near(t *testing.T, what string, got, want []float32, tl tol) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 1.0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(float64(w)))
	}
	worst, wi := 0.0, -1
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(g) || math.IsInf(g, 0) {
			t.Fatalf("%s[%d] = %v (an element the kernel did not write?), want %v", what, i, g, w)
		}
		lim := tl.abs*scale + tl.rel*math.Abs(w)
		if r := math.Abs(g-w) / lim; r > worst {
			worst, wi = r, i
		}
	}
	if worst > 1 {
		t.Fatalf("%s[%d] = %v, want %v (%.1f× the tolerance rel %g, abs %g·%g)", what, wi, got[wi], want[wi], worst, tl.rel, tl.abs, scale)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ---- the ops ----

func TestGPUGatherScatter(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes {
		for _, weighted := range []bool{false, true} {
			t.Run(fmt.Sprintf("n%d_rows%d_d%d_w%v", sz.n, sz.rows, sz.d, weighted), func(t *testing.T) {
				tw := newTwin(t, uint64(10+i))
				idx := randIndex(tw.rng, sz.n, usedRows(sz.rows))
				var w []float32
				if weighted {
					w = tw.randn(sz.n)
				}
				ix := &ops.Index{Name: "ix", Idx: idx}
				if w != nil {
					ix.W = f64s(w)
				}
				xg := tw.randn(sz.rows * sz.d)
				dyg := tw.randn(sz.n * sz.d)
				x := tw.mat("x", xg, sz.rows, sz.d)
				y := tw.ok(ops.Gather(x, ix))
				gout, ggr := tw.run(y, dyg, x)

				tw2 := newTwin(t, uint64(20+i))
				xs := tw2.randn(sz.n * sz.d)
				dys := tw2.randn(sz.rows * sz.d)
				x2 := tw2.mat("x", xs, sz.n, sz.d)
				y2 := tw2.ok(ops.ScatterAdd(x2, ix, sz.rows))
				sout, sgr := tw2.run(y2, dys, x2)

				d, k := gpu(t)
				g := dev{t, d}
				di, dw := g.upI(idx), DevPtr(0)
				if w != nil {
					dw = g.up(w)
				}
				out := g.poison(sz.n * sz.d)
				must(t, k.Gather(out, g.up(xg), di, dw, sz.n, sz.rows, sz.d))
				near(t, "gather", g.down(out, sz.n*sz.d), gout, exact)
				dx := g.poison(sz.rows * sz.d)
				must(t, k.ScatterAdd(dx, g.up(dyg), di, dw, sz.n, sz.rows, sz.d))
				near(t, "gather backward (scatter-add)", g.down(dx, sz.rows*sz.d), ggr[0], reduce)

				out2 := g.poison(sz.rows * sz.d)
				must(t, k.ScatterAdd(out2, g.up(xs), di, dw, sz.n, sz.rows, sz.d))
				near(t, "scatter-add", g.down(out2, sz.rows*sz.d), sout, reduce)
				dx2 := g.poison(sz.n * sz.d)
				must(t, k.Gather(dx2, g.up(dys), di, dw, sz.n, sz.rows, sz.d))
				near(t, "scatter-add backward (gather)", g.down(dx2, sz.n*sz.d), sgr[0], exact)
			})
		}
	}
}

func TestGPUSegmentSoftmax(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes {
		for _, h := range []int{1, 3} {
			t.Run(fmt.Sprintf("m%d_nodes%d_h%d", sz.n, sz.rows, h), func(t *testing.T) {
				tw := newTwin(t, uint64(30+i))
				seg := randIndex(tw.rng, sz.n, usedRows(sz.rows))
				sv := tw.randn(sz.n * h)
				for j := range sv {
					sv[j] *= 4 // scores spread enough for the max subtraction to matter
				}
				dy := tw.randn(sz.n * h)
				s := tw.mat("s", sv, sz.n, h)
				y := tw.ok(ops.SegmentSoftmax(s, &ops.Index{Name: "dst", Idx: seg}, sz.rows))
				want, grads := tw.run(y, dy, s)

				d, k := gpu(t)
				g := dev{t, d}
				ds := g.upI(seg)
				yd := g.poison(sz.n * h)
				must(t, k.SegmentSoftmax(yd, g.up(sv), ds, sz.n, h, sz.rows))
				near(t, "segment softmax", g.down(yd, sz.n*h), want, reduce)
				dx := g.poison(sz.n * h)
				must(t, k.SegmentSoftmaxBackward(dx, yd, g.up(dy), ds, sz.n, h, sz.rows))
				near(t, "segment softmax backward", g.down(dx, sz.n*h), grads[0], reduce)
			})
		}
	}
}

func randKeep(rng *rand.Rand, rows int) ([]bool, []int32) {
	keep := make([]bool, rows)
	ki := make([]int32, rows)
	for r := range keep {
		keep[r] = r < 2 || rng.IntN(5) != 0 // at least 2 kept rows, about a fifth padding
		if keep[r] {
			ki[r] = 1
		}
	}
	return keep, ki
}

func TestGPUBatchNorm(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes[1:] {
		for _, training := range []bool{true, false} {
			t.Run(fmt.Sprintf("rows%d_d%d_train%v", sz.rows, sz.d, training), func(t *testing.T) {
				tw := newTwin(t, uint64(40+i))
				keep, ki := randKeep(tw.rng, sz.rows)
				xv, gv, bv, dy := tw.randn(sz.rows*sz.d), tw.randn(sz.d), tw.randn(sz.d), tw.randn(sz.rows*sz.d)
				st := ops.NewBNState("bn", sz.d)
				st.Training = training
				rm, rv := make([]float32, sz.d), make([]float32, sz.d)
				for c := range rm {
					rm[c] = float32(tw.rng.NormFloat64())
					rv[c] = float32(0.5 + tw.rng.Float64())
					st.RunMean[c], st.RunVar[c] = float64(rm[c]), float64(rv[c])
				}
				x, gamma, beta := tw.mat("x", xv, sz.rows, sz.d), tw.vec("gamma", gv), tw.vec("beta", bv)
				y := tw.ok(ops.BatchNorm(x, gamma, beta, st, &ops.Mask{Name: "m", Keep: keep}))
				want, grads := tw.run(y, dy, x, gamma, beta)

				d, k := gpu(t)
				g := dev{t, d}
				b := BatchNormBufs{X: g.up(xv), Gamma: g.up(gv), Beta: g.up(bv), Keep: g.upI(ki),
					RunMean: g.up(rm), RunVar: g.up(rv), Out: g.poison(sz.rows * sz.d),
					Mean: g.poison(sz.d), InvStd: g.poison(sz.d)}
				must(t, k.BatchNorm(b, sz.rows, sz.d, training))
				near(t, "batch norm", g.down(b.Out, sz.rows*sz.d), want, reduce)
				near(t, "running mean", g.down(b.RunMean, sz.d), f32s(st.RunMean), reduce)
				near(t, "running var", g.down(b.RunVar, sz.d), f32s(st.RunVar), reduce)
				dx, dg, db := g.poison(sz.rows*sz.d), g.poison(sz.d), g.poison(sz.d)
				must(t, k.BatchNormBackward(dx, dg, db, g.up(dy), b, sz.rows, sz.d, training))
				near(t, "batch norm dx", g.down(dx, sz.rows*sz.d), grads[0], reduce)
				near(t, "batch norm dγ", g.down(dg, sz.d), grads[1], reduce)
				near(t, "batch norm dβ", g.down(db, sz.d), grads[2], reduce)
			})
		}
	}
}

// TestGPUBatchNormRelu checks ops.BatchNormRelu (res + ReLU(BN(x))) as the executor runs it:
// BatchNormRelu (the ReLU and the residual in the normalising pass), and BatchNormReluBackward
// (the residual's gradient is the output gradient itself).
func TestGPUBatchNormRelu(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes[1:] {
		for _, withRes := range []bool{false, true} {
			t.Run(fmt.Sprintf("rows%d_d%d_res%v", sz.rows, sz.d, withRes), func(t *testing.T) {
				tw := newTwin(t, uint64(180+i))
				keep, ki := randKeep(tw.rng, sz.rows)
				n := sz.rows * sz.d
				xv, gv, bv, rv, dy := tw.randn(n), tw.randn(sz.d), tw.randn(sz.d), tw.randn(n), tw.randn(n)
				st := ops.NewBNState("bn", sz.d)
				x, gamma, beta := tw.mat("x", xv, sz.rows, sz.d), tw.vec("gamma", gv), tw.vec("beta", bv)
				var res *gorgonia.Node
				wrt := []*gorgonia.Node{x, gamma, beta}
				if withRes {
					res = tw.mat("res", rv, sz.rows, sz.d)
					wrt = append(wrt, res)
				}
				y := tw.ok(ops.BatchNormRelu(x, gamma, beta, st, &ops.Mask{Name: "m", Keep: keep}, res))
				want, grads := tw.run(y, dy, wrt...)

				d, k := gpu(t)
				g := dev{t, d}
				ones := make([]float32, sz.d)
				for c := range ones {
					ones[c] = 1
				}
				b := BatchNormBufs{X: g.up(xv), Gamma: g.up(gv), Beta: g.up(bv), Keep: g.upI(ki),
					RunMean: g.up(make([]float32, sz.d)), RunVar: g.up(ones), Out: g.poison(n),
					Mean: g.poison(sz.d), InvStd: g.poison(sz.d)}
				if withRes {
					b.Res = g.up(rv)
				}
				must(t, k.BatchNormRelu(b, sz.rows, sz.d, true))
				near(t, "batch norm ReLU", g.down(b.Out, n), want, reduce)
				dx, dg, db := g.poison(n), g.poison(sz.d), g.poison(sz.d)
				must(t, k.BatchNormReluBackward(dx, dg, db, g.up(dy), b, sz.rows, sz.d, true))
				near(t, "batch norm ReLU dx", g.down(dx, n), grads[0], reduce)
				near(t, "batch norm ReLU dγ", g.down(dg, sz.d), grads[1], reduce)
				near(t, "batch norm ReLU dβ", g.down(db, sz.d), grads[2], reduce)
				if withRes {
					near(t, "batch norm ReLU dres (the output gradient)", dy, grads[3], exact)
				}
			})
		}
	}
}

// TestGPUEdgeSum checks EdgeSum against ops.EdgeSum, and its gradients (the output gradient for
// e; EdgeSumBackward, the ScatterAdds along src and dst for hs and ht in one pass, and the two
// ScatterAdds it replaces).
func TestGPUEdgeSum(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes {
		t.Run(fmt.Sprintf("m%d_rows%d_d%d", sz.n, sz.rows, sz.d), func(t *testing.T) {
			tw := newTwin(t, uint64(190+i))
			src := &ops.Index{Name: "src", Idx: randIndex(tw.rng, sz.n, usedRows(sz.rows))}
			dst := &ops.Index{Name: "dst", Idx: randIndex(tw.rng, sz.n, usedRows(sz.rows))}
			ev, hv, tv, dy := tw.randn(sz.n*sz.d), tw.randn(sz.rows*sz.d), tw.randn(sz.rows*sz.d), tw.randn(sz.n*sz.d)
			e, hs, ht := tw.mat("e", ev, sz.n, sz.d), tw.mat("hs", hv, sz.rows, sz.d), tw.mat("ht", tv, sz.rows, sz.d)
			y := tw.ok(ops.EdgeSum(e, hs, ht, src, dst))
			want, grads := tw.run(y, dy, e, hs, ht)

			d, k := gpu(t)
			g := dev{t, d}
			ds, dd := g.upI(src.Idx), g.upI(dst.Idx)
			out := g.poison(sz.n * sz.d)
			must(t, k.EdgeSum(out, g.up(ev), g.up(hv), g.up(tv), ds, dd, sz.n, sz.rows, sz.d))
			near(t, "edge sum", g.down(out, sz.n*sz.d), want, exact)
			near(t, "edge sum de (the output gradient)", dy, grads[0], exact)
			gdy := g.up(dy)
			dhs, dht := g.poison(sz.rows*sz.d), g.poison(sz.rows*sz.d)
			must(t, k.ScatterAdd(dhs, gdy, ds, 0, sz.n, sz.rows, sz.d))
			must(t, k.ScatterAdd(dht, gdy, dd, 0, sz.n, sz.rows, sz.d))
			near(t, "edge sum dhs", g.down(dhs, sz.rows*sz.d), grads[1], reduce)
			near(t, "edge sum dht", g.down(dht, sz.rows*sz.d), grads[2], reduce)
			dhs, dht = g.poison(sz.rows*sz.d), g.poison(sz.rows*sz.d)
			must(t, k.EdgeSumBackward(dhs, dht, gdy, ds, dd, sz.n, sz.rows, sz.d))
			near(t, "edge sum backward dhs", g.down(dhs, sz.rows*sz.d), grads[1], reduce)
			near(t, "edge sum backward dht", g.down(dht, sz.rows*sz.d), grads[2], reduce)
		})
	}
}

func f32s(xs []float64) []float32 {
	out := make([]float32, len(xs))
	for i, v := range xs {
		out[i] = float32(v)
	}
	return out
}

func TestGPULayerNorm(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes {
		t.Run(fmt.Sprintf("rows%d_d%d", sz.rows, sz.d), func(t *testing.T) {
			tw := newTwin(t, uint64(50+i))
			keep, ki := randKeep(tw.rng, sz.rows)
			xv, gv, bv, dy := tw.randn(sz.rows*sz.d), tw.randn(sz.d), tw.randn(sz.d), tw.randn(sz.rows*sz.d)
			x, gamma, beta := tw.mat("x", xv, sz.rows, sz.d), tw.vec("gamma", gv), tw.vec("beta", bv)
			y := tw.ok(ops.LayerNorm(x, gamma, beta, &ops.Mask{Name: "m", Keep: keep}))
			want, grads := tw.run(y, dy, x, gamma, beta)

			d, k := gpu(t)
			g := dev{t, d}
			b := LayerNormBufs{X: g.up(xv), Gamma: g.up(gv), Beta: g.up(bv), Keep: g.upI(ki),
				Out: g.poison(sz.rows * sz.d), Xhat: g.poison(sz.rows * sz.d), InvStd: g.poison(sz.rows)}
			must(t, k.LayerNorm(b, sz.rows, sz.d))
			near(t, "layer norm", g.down(b.Out, sz.rows*sz.d), want, reduce)
			dx, dg, db := g.poison(sz.rows*sz.d), g.poison(sz.d), g.poison(sz.d)
			must(t, k.LayerNormBackward(dx, dg, db, g.up(dy), b, sz.rows, sz.d))
			near(t, "layer norm dx", g.down(dx, sz.rows*sz.d), grads[0], reduce)
			near(t, "layer norm dγ", g.down(dg, sz.d), grads[1], reduce)
			near(t, "layer norm dβ", g.down(db, sz.d), grads[2], reduce)
		})
	}
}

func TestGPUGatedAggregate(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes {
		t.Run(fmt.Sprintf("m%d_nodes%d_d%d", sz.n, sz.rows, sz.d), func(t *testing.T) {
			tw := newTwin(t, uint64(60+i))
			src := randIndex(tw.rng, sz.n, sz.rows)
			dst := randIndex(tw.rng, sz.n, usedRows(sz.rows))
			ev, bv, dy := tw.randn(sz.n*sz.d), tw.randn(sz.rows*sz.d), tw.randn(sz.rows*sz.d)
			e, bh := tw.mat("ehat", ev, sz.n, sz.d), tw.mat("bh", bv, sz.rows, sz.d)
			y := tw.ok(ops.GatedAggregate(e, bh, &ops.Index{Name: "src", Idx: src}, &ops.Index{Name: "dst", Idx: dst}, sz.rows))
			want, grads := tw.run(y, dy, e, bh)

			d, k := gpu(t)
			g := dev{t, d}
			b := GatedBufs{Ehat: g.up(ev), Bh: g.up(bv), Src: g.upI(src), Dst: g.upI(dst),
				Out: g.poison(sz.rows * sz.d), Den: g.poison(sz.rows * sz.d)}
			must(t, k.GatedAggregate(b, sz.n, sz.rows, sz.rows, sz.d))
			near(t, "gated aggregate", g.down(b.Out, sz.rows*sz.d), want, reduce)
			de, dbh := g.poison(sz.n*sz.d), g.poison(sz.rows*sz.d)
			must(t, k.GatedAggregateBackward(de, dbh, g.up(dy), b, sz.n, sz.rows, sz.rows, sz.d))
			near(t, "gated aggregate dê", g.down(de, sz.n*sz.d), grads[0], reduce)
			near(t, "gated aggregate dbh", g.down(dbh, sz.rows*sz.d), grads[1], reduce)
		})
	}
}

func TestGPUGaussianWeights(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes {
		kk, p := 1+sz.d%5, 2+i%2
		t.Run(fmt.Sprintf("m%d_k%d_p%d", sz.n, kk, p), func(t *testing.T) {
			tw := newTwin(t, uint64(70+i))
			uv, mv, iv, dy := tw.randn(sz.n*p), tw.randn(kk*p), tw.randn(kk*p), tw.randn(sz.n*kk)
			u, mu, is := tw.mat("u", uv, sz.n, p), tw.mat("mu", mv, kk, p), tw.mat("is", iv, kk, p)
			y := tw.ok(ops.GaussianWeights(u, mu, is))
			want, grads := tw.run(y, dy, u, mu, is)

			d, k := gpu(t)
			g := dev{t, d}
			du, dm, ui, w := g.up(uv), g.up(mv), g.up(iv), g.poison(sz.n*kk)
			must(t, k.GaussianWeights(w, du, dm, ui, sz.n, kk, p))
			near(t, "gaussian weights", g.down(w, sz.n*kk), want, reduce)
			gu, gm, gi := g.poison(sz.n*p), g.poison(kk*p), g.poison(kk*p)
			must(t, k.GaussianWeightsBackward(gu, gm, gi, du, dm, ui, w, g.up(dy), sz.n, kk, p))
			near(t, "gaussian weights du", g.down(gu, sz.n*p), grads[0], reduce)
			near(t, "gaussian weights dμ", g.down(gm, kk*p), grads[1], reduce)
			near(t, "gaussian weights dσ⁻¹", g.down(gi, kk*p), grads[2], reduce)
		})
	}
}

func TestGPUKernelMix(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes {
		kk := 1 + i
		t.Run(fmt.Sprintf("m%d_k%d_d%d", sz.n, kk, sz.d), func(t *testing.T) {
			tw := newTwin(t, uint64(80+i))
			xv, wv, dy := tw.randn(sz.n*kk*sz.d), tw.randn(sz.n*kk), tw.randn(sz.n*sz.d)
			x, w := tw.mat("x", xv, sz.n, kk*sz.d), tw.mat("w", wv, sz.n, kk)
			y := tw.ok(ops.KernelMix(x, w))
			want, grads := tw.run(y, dy, x, w)

			d, k := gpu(t)
			g := dev{t, d}
			dx, dw, out := g.up(xv), g.up(wv), g.poison(sz.n*sz.d)
			must(t, k.KernelMix(out, dx, dw, sz.n, kk, sz.d))
			near(t, "kernel mix", g.down(out, sz.n*sz.d), want, reduce)
			gx, gw := g.poison(sz.n*kk*sz.d), g.poison(sz.n*kk)
			must(t, k.KernelMixBackward(gx, gw, dx, dw, g.up(dy), sz.n, kk, sz.d))
			near(t, "kernel mix dx", g.down(gx, sz.n*kk*sz.d), grads[0], exact)
			near(t, "kernel mix dw", g.down(gw, sz.n*kk), grads[1], reduce)
			// dx alone, the weights an input (PNA's degree scalers): no x, no dw
			gx = g.poison(sz.n * kk * sz.d)
			must(t, k.KernelMixBackward(gx, 0, 0, dw, g.up(dy), sz.n, kk, sz.d))
			near(t, "kernel mix dx alone", g.down(gx, sz.n*kk*sz.d), grads[0], exact)
		})
	}
}

// headSizes are the head tests' cases (m rows, h heads, d features): the last has 40 features
// per head, so head_dot's lanes take two passes over a head, and 600 (row, head) pairs, more
// than the 256 warps of the emulated GPU's grid.
var headSizes = []struct{ m, h, d int }{{1, 1, 2}, {31, 3, 21}, {257, 2, 16}, {1000, 4, 36}, {300, 2, 80}}

func TestGPUHeads(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, hs := range headSizes {
		h, dd, sz := hs.h, hs.d, size{n: hs.m}
		t.Run(fmt.Sprintf("m%d_h%d_d%d", sz.n, h, dd), func(t *testing.T) {
			tw := newTwin(t, uint64(90+i))
			qv, kv, dyd := tw.randn(sz.n*dd), tw.randn(sz.n*dd), tw.randn(sz.n*h)
			q, kn := tw.mat("q", qv, sz.n, dd), tw.mat("k", kv, sz.n, dd)
			y := tw.ok(ops.HeadDot(q, kn, h))
			wantDot, gDot := tw.run(y, dyd, q, kn)

			tw2 := newTwin(t, uint64(95+i))
			xv, sv, dys := tw2.randn(sz.n*dd), tw2.randn(sz.n*h), tw2.randn(sz.n*dd)
			x, s := tw2.mat("x", xv, sz.n, dd), tw2.mat("s", sv, sz.n, h)
			y2 := tw2.ok(ops.HeadScale(x, s))
			wantScale, gScale := tw2.run(y2, dys, x, s)

			d, k := gpu(t)
			g := dev{t, d}
			dq, dk, out := g.up(qv), g.up(kv), g.poison(sz.n*h)
			must(t, k.HeadDot(out, dq, dk, sz.n, h, dd))
			near(t, "head dot", g.down(out, sz.n*h), wantDot, reduce)
			gy := g.up(dyd)
			gq, gk := g.poison(sz.n*dd), g.poison(sz.n*dd)
			must(t, k.HeadScale(gq, dk, gy, sz.n, h, dd))
			must(t, k.HeadScale(gk, dq, gy, sz.n, h, dd))
			near(t, "head dot dq", g.down(gq, sz.n*dd), gDot[0], exact)
			near(t, "head dot dk", g.down(gk, sz.n*dd), gDot[1], exact)

			dx, ds, out2 := g.up(xv), g.up(sv), g.poison(sz.n*dd)
			must(t, k.HeadScale(out2, dx, ds, sz.n, h, dd))
			near(t, "head scale", g.down(out2, sz.n*dd), wantScale, exact)
			gyy := g.up(dys)
			gx, gs := g.poison(sz.n*dd), g.poison(sz.n*h)
			must(t, k.HeadScale(gx, gyy, ds, sz.n, h, dd))
			must(t, k.HeadDot(gs, dx, gyy, sz.n, h, dd))
			near(t, "head scale dx", g.down(gx, sz.n*dd), gScale[0], exact)
			near(t, "head scale ds", g.down(gs, sz.n*h), gScale[1], reduce)
		})
	}
}

func TestGPUMatMul(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes {
		a, b := sz.d, 1+(sz.d*7)%40
		t.Run(fmt.Sprintf("m%d_a%d_b%d", sz.n, a, b), func(t *testing.T) {
			tw := newTwin(t, uint64(100+i))
			xv, wv, dy := tw.randn(sz.n*a), tw.randn(a*b), tw.randn(sz.n*b)
			x, w := tw.mat("x", xv, sz.n, a), tw.mat("W", wv, a, b)
			y := tw.ok(ops.MatMul(x, w))
			want, grads := tw.run(y, dy, x, w)

			d, k := gpu(t)
			g := dev{t, d}
			dx, dw, out := g.up(xv), g.up(wv), g.poison(sz.n*b)
			must(t, k.MatMul(out, dx, dw, sz.n, a, b))
			near(t, "matmul", g.down(out, sz.n*b), want, reduce)
			gx, gw := g.poison(sz.n*a), g.poison(a*b)
			must(t, k.MatMulBackward(gx, gw, dx, dw, g.up(dy), sz.n, a, b))
			near(t, "matmul dx", g.down(gx, sz.n*a), grads[0], reduce)
			near(t, "matmul dW", g.down(gw, a*b), grads[1], reduce)
		})
	}
}

func TestGPUBiasColSumAdd(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range sizes {
		t.Run(fmt.Sprintf("rows%d_d%d", sz.n, sz.d), func(t *testing.T) {
			tw := newTwin(t, uint64(110+i))
			xv, bv, dy := tw.randn(sz.n*sz.d), tw.randn(sz.d), tw.randn(sz.n*sz.d)
			x, b := tw.mat("x", xv, sz.n, sz.d), tw.vec("b", bv)
			y := tw.ok(ops.AddBias(x, b))
			wantBias, gBias := tw.run(y, dy, x, b)

			tw2 := newTwin(t, uint64(115+i))
			x2v, dcs := tw2.randn(sz.n*sz.d), tw2.randn(sz.d)
			x2 := tw2.mat("x", x2v, sz.n, sz.d)
			y2 := tw2.ok(ops.ColSum(x2))
			wantCS, gCS := tw2.run(y2, dcs, x2)

			tw3 := newTwin(t, uint64(118+i))
			av, bv3, dadd := tw3.randn(sz.n*sz.d), tw3.randn(sz.n*sz.d), tw3.randn(sz.n*sz.d)
			an, bn := tw3.mat("a", av, sz.n, sz.d), tw3.mat("b", bv3, sz.n, sz.d)
			y3 := tw3.ok(ops.Add(an, bn))
			wantAdd, gAdd := tw3.run(y3, dadd, an, bn)

			d, k := gpu(t)
			g := dev{t, d}
			n := sz.n * sz.d
			out := g.poison(n)
			must(t, k.AddBias(out, g.up(xv), g.up(bv), sz.n, sz.d))
			near(t, "add bias", g.down(out, n), wantBias, exact)
			near(t, "add bias dx (identity)", dy, gBias[0], exact)
			db := g.poison(sz.d)
			must(t, k.ColSum(db, g.up(dy), sz.n, sz.d))
			near(t, "add bias db (column sum)", g.down(db, sz.d), gBias[1], reduce)

			cs := g.poison(sz.d)
			must(t, k.ColSum(cs, g.up(x2v), sz.n, sz.d))
			near(t, "column sum", g.down(cs, sz.d), wantCS, reduce)
			gx := g.poison(n)
			must(t, k.BroadcastRows(gx, g.up(dcs), sz.n, sz.d))
			near(t, "column sum backward (broadcast)", g.down(gx, n), gCS[0], exact)

			sum := g.poison(n)
			must(t, k.Add(sum, g.up(av), g.up(bv3), n))
			near(t, "add", g.down(sum, n), wantAdd, exact)
			near(t, "add da, db (identity)", dadd, gAdd[0], exact)
		})
	}
}

// TestGPUElementwise checks each unary map and its gradient against the CPU twin (Gorgonia's op
// and gorgonia.Grad), and the twin against the function and derivative written by hand. sqrt
// runs on positive arguments of magnitude 2⁻²² to 2²³, and its results must have the twin's
// bits: sqrtf is correctly rounded, as are the twin's float32 sqrt and both sides' division,
// and its gradient is the twin's own g ÷ (2 ⊙ y) (ew_scalar, then ew_div).
func TestGPUElementwise(t *testing.T) {
	defer skipWithoutGPU(t)
	type unary struct {
		name string
		cpu  func(*gorgonia.Node) (*gorgonia.Node, error)
		fwd  func(k *Kernels, out, x DevPtr, n int) error
		bwd  func(k *Kernels, dx, x, y, g DevPtr, n int) error
		ref  func(x float64) (y, dydx float64) // the function and its derivative, by hand
		// positive: arguments |x| + 0.25 scaled by 2^(j mod 41 − 20); bits: the device's
		// results (forward and backward) have the twin's bits
		positive, bits bool
	}
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	var two DevPtr // the device scalar 2 of sqrt's gradient (uploaded by each subtest)
	ops := []unary{
		{"relu", ops.Relu, (*Kernels).Relu, func(k *Kernels, dx, x, y, g DevPtr, n int) error { return k.ReluBackward(dx, y, g, n) },
			func(x float64) (float64, float64) { return max(x, 0), map[bool]float64{true: 1, false: 0}[x > 0] }, false, false},
		{"gelu", ops.Gelu, (*Kernels).Gelu, func(k *Kernels, dx, x, y, g DevPtr, n int) error { return k.GeluBackward(dx, x, g, n) },
			func(x float64) (float64, float64) {
				const c = 0.7978845608028654 // √(2/π); GELU's tanh form
				t := math.Tanh(c * (x + 0.044715*x*x*x))
				return 0.5 * x * (1 + t), 0.5*(1+t) + 0.5*x*(1-t*t)*c*(1+3*0.044715*x*x)
			}, false, false},
		{"sigmoid", gorgonia.Sigmoid, (*Kernels).Sigmoid, func(k *Kernels, dx, x, y, g DevPtr, n int) error { return k.SigmoidBackward(dx, y, g, n) },
			func(x float64) (float64, float64) { return sig(x), sig(x) * (1 - sig(x)) }, false, false},
		{"tanh", gorgonia.Tanh, (*Kernels).Tanh, func(k *Kernels, dx, x, y, g DevPtr, n int) error { return k.TanhBackward(dx, y, g, n) },
			func(x float64) (float64, float64) { return math.Tanh(x), 1 - math.Tanh(x)*math.Tanh(x) }, false, false},
		{"exp", gorgonia.Exp, (*Kernels).Exp, func(k *Kernels, dx, x, y, g DevPtr, n int) error { return k.Mul(dx, y, g, n) },
			func(x float64) (float64, float64) { return math.Exp(x), math.Exp(x) }, false, false},
		{"abs", gorgonia.Abs, (*Kernels).Abs, func(k *Kernels, dx, x, y, g DevPtr, n int) error { return k.AbsBackward(dx, x, g, n) },
			func(x float64) (float64, float64) { return math.Abs(x), float64(sign(x)) }, false, false},
		{"sqrt", gorgonia.Sqrt, (*Kernels).Sqrt, func(k *Kernels, dx, x, y, g DevPtr, n int) error {
			if err := k.ScalarOp(dx, y, two, n, ScalarMul, true); err != nil { // 2 ⊙ y
				return err
			}
			return k.Div(dx, g, dx, n) // g ÷ (2 ⊙ y)
		}, func(x float64) (float64, float64) { return math.Sqrt(x), 0.5 / math.Sqrt(x) }, true, true},
	}
	for _, op := range ops {
		for i, sz := range sizes {
			t.Run(fmt.Sprintf("%s_%dx%d", op.name, sz.n, sz.d), func(t *testing.T) {
				tw := newTwin(t, uint64(120+i))
				tw.forwardFirst = true
				xv, dy := tw.randn(sz.n*sz.d), tw.randn(sz.n*sz.d)
				if op.positive {
					for j, v := range xv {
						xv[j] = float32(math.Ldexp(0.25+math.Abs(float64(v)), j%41-20))
					}
				}
				x := tw.mat("x", xv, sz.n, sz.d)
				y := tw.ok(op.cpu(x))
				want, grads := tw.run(y, dy, x)
				// The twin itself against the formula: Gorgonia's ops may reuse buffers in
				// place, and a corrupted reference once failed this test on a real GPU.
				hand, handGrad := make([]float32, len(xv)), make([]float32, len(xv))
				for j, v := range xv {
					f, d := op.ref(float64(v))
					hand[j], handGrad[j] = float32(f), float32(d*float64(dy[j]))
				}
				near(t, op.name+" CPU twin", want, hand, reduce)
				near(t, op.name+" CPU twin backward", grads[0], handGrad, reduce)

				d, k := gpu(t)
				g := dev{t, d}
				n := sz.n * sz.d
				two = g.up([]float32{2})
				dx, out := g.up(xv), g.poison(n)
				must(t, op.fwd(k, out, dx, n))
				gx := g.poison(n)
				must(t, op.bwd(k, gx, dx, out, g.up(dy), n))
				if op.bits {
					sameBits32(t, op.name, g.down(out, n), want)
					sameBits32(t, op.name+" backward", g.down(gx, n), grads[0])
				} else {
					near(t, op.name, g.down(out, n), want, reduce)
					near(t, op.name+" backward", g.down(gx, n), grads[0], reduce)
				}
			})
		}
	}
}

// sign is -1, 0 or 1.
func sign(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// TestGPUBinaryScalar checks Sub, Div and ScalarOp (every operator, the scalar on either side)
// against gorgonia's own operators on the CPU.
func TestGPUBinaryScalar(t *testing.T) {
	defer skipWithoutGPU(t)
	type bin struct {
		name string
		cpu  func(a, b *gorgonia.Node) (*gorgonia.Node, error)
		op   int
	}
	ops := []bin{{"add", gorgonia.Add, ScalarAdd}, {"sub", gorgonia.Sub, ScalarSub}, {"mul", gorgonia.HadamardProd, ScalarMul}, {"div", gorgonia.HadamardDiv, ScalarDiv}}
	for _, op := range ops {
		for i, sz := range sizes {
			t.Run(fmt.Sprintf("%s_%dx%d", op.name, sz.n, sz.d), func(t *testing.T) {
				tw := newTwin(t, uint64(170+i))
				n := sz.n * sz.d
				av, bv := tw.randn(n), tw.randn(n)
				for j := range bv {
					bv[j] = 0.5 + float32(math.Abs(float64(bv[j]))) // divisors away from 0
				}
				const sv = float32(1.75)
				want := func(f func(*gorgonia.ExprGraph) (*gorgonia.Node, error)) []float32 {
					g := gorgonia.NewGraph()
					y, err := f(g)
					if err != nil {
						t.Fatal(err)
					}
					vm := gorgonia.NewTapeMachine(g)
					defer vm.Close()
					if err := vm.RunAll(); err != nil {
						t.Fatal(err)
					}
					return values(t, y)
				}
				mat := func(g *gorgonia.ExprGraph, name string, xs []float32) *gorgonia.Node {
					v := tensor.New(tensor.WithShape(sz.n, sz.d), tensor.WithBacking(append([]float32(nil), xs...)))
					return gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(sz.n, sz.d), gorgonia.WithValue(v), gorgonia.WithName(name))
				}
				both := want(func(g *gorgonia.ExprGraph) (*gorgonia.Node, error) { return op.cpu(mat(g, "a", av), mat(g, "b", bv)) })
				right := want(func(g *gorgonia.ExprGraph) (*gorgonia.Node, error) {
					return op.cpu(mat(g, "b", bv), gorgonia.NewConstant(sv))
				})
				left := want(func(g *gorgonia.ExprGraph) (*gorgonia.Node, error) {
					return op.cpu(gorgonia.NewConstant(sv), mat(g, "b", bv))
				})

				d, k := gpu(t)
				g := dev{t, d}
				da, db, ds := g.up(av), g.up(bv), g.up([]float32{sv})
				out := g.poison(n)
				switch op.op {
				case ScalarAdd:
					must(t, k.Add(out, da, db, n))
				case ScalarSub:
					must(t, k.Sub(out, da, db, n))
				case ScalarMul:
					must(t, k.Mul(out, da, db, n))
				default:
					must(t, k.Div(out, da, db, n))
				}
				near(t, op.name, g.down(out, n), both, exact)
				out = g.poison(n)
				must(t, k.ScalarOp(out, db, ds, n, op.op, false))
				near(t, op.name+" tensor∘scalar", g.down(out, n), right, exact)
				out = g.poison(n)
				must(t, k.ScalarOp(out, db, ds, n, op.op, true))
				near(t, op.name+" scalar∘tensor", g.down(out, n), left, exact)
			})
		}
	}
}

// scalarTimes returns c·loss, so the loss's upstream gradient is c.
func (tw *twin) scalarTimes(loss *gorgonia.Node, c float32) *gorgonia.Node {
	cn := gorgonia.NewScalar(tw.g, tensor.Float32, gorgonia.WithValue(c), gorgonia.WithName("c"))
	return tw.ok(gorgonia.Mul(loss, cn))
}

func TestGPUMaskedL1(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, n := range []int{1, 31, 257, 1000} {
		t.Run(fmt.Sprintf("n%d", n), func(t *testing.T) {
			tw := newTwin(t, uint64(130+i))
			pv, yv := tw.randn(n), tw.randn(n)
			wv := make([]float32, n)
			for j := range wv {
				if j%4 != 3 { // every fourth graph is padding
					wv[j] = 1 / float32(n)
				}
			}
			if n > 2 {
				pv[1] = yv[1] // sign(0) = 0
			}
			c := float32(tw.rng.NormFloat64())
			p, y, w := tw.mat("p", pv, n, 1), tw.mat("y", yv, n, 1), tw.mat("w", wv, n, 1)
			loss := tw.ok(ops.MaskedL1(p, y, w))
			want, grads := tw.runLoss(loss, tw.scalarTimes(loss, c), p)

			d, k := gpu(t)
			g := dev{t, d}
			dp, dyy, dw, out := g.up(pv), g.up(yv), g.up(wv), g.poison(1)
			must(t, k.MaskedL1(out, dp, dyy, dw, n))
			near(t, "masked L1", g.down(out, 1), want, reduce)
			gp := g.poison(n)
			must(t, k.MaskedL1Backward(gp, dp, dyy, dw, g.up([]float32{c}), n))
			near(t, "masked L1 backward", g.down(gp, n), grads[0], exact)
		})
	}
}

// TestGPUMaskedBCE: the binary cross-entropy with logits and its gradient against the CPU
// twin (kern.MaskedBCE through ops.MaskedBCE), with logits up to ±60 (where the naive form
// overflows), targets 0, 1 and in between, and zero weights on padding rows and missing labels.
func TestGPUMaskedBCE(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range []struct{ rows, cols int }{{1, 1}, {31, 1}, {64, 10}, {100, 11}} {
		t.Run(fmt.Sprintf("%dx%d", sz.rows, sz.cols), func(t *testing.T) {
			tw := newTwin(t, uint64(150+i))
			n := sz.rows * sz.cols
			zv, yv, wv := tw.randn(n), make([]float32, n), make([]float32, n)
			for j := range zv {
				switch j % 5 {
				case 0:
					yv[j] = 1
				case 1:
					yv[j] = 0.25
				}
				if j%9 == 4 {
					zv[j] *= 60
				}
				if (j/sz.cols)%4 != 3 && j%7 != 5 { // every fourth row is padding; some labels are missing
					wv[j] = 1 / float32(n)
				}
			}
			c := float32(tw.rng.NormFloat64())
			z, y, w := tw.mat("z", zv, sz.rows, sz.cols), tw.mat("y", yv, sz.rows, sz.cols), tw.mat("w", wv, sz.rows, sz.cols)
			loss := tw.ok(ops.MaskedBCE(z, y, w))
			want, grads := tw.runLoss(loss, tw.scalarTimes(loss, c), z)

			d, k := gpu(t)
			g := dev{t, d}
			dz, dyy, dw, out := g.up(zv), g.up(yv), g.up(wv), g.poison(1)
			must(t, k.MaskedBCE(out, dz, dyy, dw, n))
			near(t, "masked BCE", g.down(out, 1), want, reduce)
			gz := g.poison(n)
			must(t, k.MaskedBCEBackward(gz, dz, dyy, dw, g.up([]float32{c}), n))
			near(t, "masked BCE backward", g.down(gz, n), grads[0], exact)
		})
	}
}

func TestGPUWeightedCE(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, sz := range []struct{ r, c int }{{1, 2}, {31, 3}, {257, 10}, {1000, 40}} {
		for _, classWeights := range []bool{false, true} {
			t.Run(fmt.Sprintf("r%d_c%d_sbm%v", sz.r, sz.c, classWeights), func(t *testing.T) {
				tw := newTwin(t, uint64(140+i))
				zv := tw.randn(sz.r * sz.c)
				labels := make([]int32, sz.r)
				for j := range labels {
					labels[j] = int32(tw.rng.IntN(sz.c))
					if sz.r > 1 && j%7 == 6 {
						labels[j] = -1
					}
				}
				w := make([]float64, sz.r)
				for j := range w {
					w[j] = 1
				}
				if classWeights {
					if err := ops.SBMClassWeights(labels, sz.c, w); err != nil {
						t.Fatal(err)
					}
				}
				c := float32(tw.rng.NormFloat64())
				z := tw.mat("z", zv, sz.r, sz.c)
				loss := tw.ok(ops.WeightedCE(z, &ops.Index{Name: "labels", Idx: labels, W: w}))
				want, grads := tw.runLoss(loss, tw.scalarTimes(loss, c), z)

				d, k := gpu(t)
				g := dev{t, d}
				dz, dl, dw, out := g.up(zv), g.upI(labels), g.up(f32s(w)), g.poison(1)
				must(t, k.WeightedCE(out, dz, dl, dw, sz.r, sz.c))
				near(t, "weighted cross-entropy", g.down(out, 1), want, reduce)
				gz := g.poison(sz.r * sz.c)
				must(t, k.WeightedCEBackward(gz, dz, dl, dw, g.up([]float32{c}), sz.r, sz.c))
				near(t, "weighted cross-entropy backward", g.down(gz, sz.r*sz.c), grads[0], reduce)
			})
		}
	}
}

func TestGPUAdam(t *testing.T) {
	defer skipWithoutGPU(t)
	for i, n := range []int{1, 31, 1000} {
		t.Run(fmt.Sprintf("n%d", n), func(t *testing.T) {
			tw := newTwin(t, uint64(150+i))
			params, err := nn.NewParams(tensor.Float32, 1)
			if err != nil {
				t.Fatal(err)
			}
			x0 := tw.randn(n)
			pt, err := params.Get("w", func(_ *rand.Rand, xs []float64) { copy(xs, f64s(x0)) }, n)
			if err != nil {
				t.Fatal(err)
			}
			opt := nn.NewAdam(1e-3)
			const steps = 3
			grads := make([][]float32, steps)
			var cpuDeltas [][]float32
			for s := range grads {
				grads[s] = tw.randn(n)
				before := append([]float32(nil), pt.Float32s()...)
				gt := tensor.New(tensor.WithShape(n), tensor.WithBacking(append([]float32(nil), grads[s]...)))
				if err := opt.Step(params, []string{"w"}, []gorgonia.Value{gt}); err != nil {
					t.Fatal(err)
				}
				delta := make([]float32, n)
				for j := range delta {
					delta[j] = pt.Float32s()[j] - before[j]
				}
				cpuDeltas = append(cpuDeltas, delta)
			}

			d, k := gpu(t)
			g := dev{t, d}
			x := g.up(x0)
			zeros := make([]float32, n)
			m, v := g.up(zeros), g.up(zeros)
			prev := x0
			for s := range grads {
				must(t, k.AdamStep(adamOf(nn.NewAdam(1e-3)), g.scalars(adamOf(nn.NewAdam(1e-3)), s+1, 0), x, m, v, g.up(grads[s]), n))
				now := g.down(x, n)
				delta := make([]float32, n)
				for j := range delta {
					delta[j] = now[j] - prev[j]
				}
				prev = now
				// The step is ~lr; subtracting two float32 parameters of size ~1 leaves ~1e-4
				// relative precision in it.
				near(t, fmt.Sprintf("adam step %d", s+1), delta, cpuDeltas[s], tol{1e-3, 1e-4 * 1e-3})
			}
		})
	}
}

func TestGPUDropout(t *testing.T) {
	defer skipWithoutGPU(t)
	d, k := gpu(t)
	g := dev{t, d}
	for _, n := range []int{1, 257, 100003} {
		for _, p := range []float64{0, 0.3} {
			rng := rand.New(rand.NewPCG(uint64(n), 9))
			xv := make([]float32, n)
			for i := range xv {
				xv[i] = float32(rng.NormFloat64())
			}
			base, mix := rng.Uint64(), rng.Uint64()
			seed := base ^ mix
			want := make([]float32, n)
			for i := range want {
				if ops.DropKeep(seed, int(i), p) {
					want[i] = xv[i] * float32(1/(1-p))
				}
			}
			out := g.poison(n)
			must(t, k.Dropout(out, g.up(xv), n, p, base, g.scalars(Adam{}, 1, mix)))
			near(t, fmt.Sprintf("dropout n=%d p=%v", n, p), g.down(out, n), want, exact)
		}
	}
}

// TestGPUEmptyInputs runs every launcher that takes edges or rows with zero of them: no
// error, and outputs that the op defines (zeros for scatters and aggregations) are written.
func TestGPUEmptyInputs(t *testing.T) {
	defer skipWithoutGPU(t)
	d, k := gpu(t)
	g := dev{t, d}
	const rows, dd = 5, 4
	out := g.poison(rows * dd)
	must(t, k.ScatterAdd(out, g.poison(1), g.poison(1), 0, 0, rows, dd))
	near(t, "scatter-add of no rows", g.down(out, rows*dd), make([]float32, rows*dd), exact)
	b := GatedBufs{Ehat: g.poison(1), Bh: g.poison(rows * dd), Src: g.poison(1), Dst: g.poison(1),
		Out: g.poison(rows * dd), Den: g.poison(rows * dd)}
	must(t, k.GatedAggregate(b, 0, rows, rows, dd))
	near(t, "gated aggregate of no edges", g.down(b.Out, rows*dd), make([]float32, rows*dd), exact)
	must(t, k.SegmentSoftmax(g.poison(1), g.poison(1), g.poison(1), 0, 2, rows))
	must(t, k.Gather(g.poison(1), g.poison(1), g.poison(1), 0, 0, 0, dd))
	must(t, k.MatMul(g.poison(1), g.poison(1), g.poison(6), 0, 3, 2)) // m = 0: no rows, but w [3, 2] is whole
	mm := g.poison(6)
	must(t, k.MatMul(mm, g.poison(1), g.poison(1), 3, 0, 2))
	near(t, "matmul with an empty inner dimension", g.down(mm, 6), make([]float32, 6), exact)
	must(t, d.Sync())
}

// TestGPUBadArguments checks that launchers refuse nil and too-small buffers and impossible
// sizes with errors, before anything reaches the GPU.
func TestGPUBadArguments(t *testing.T) {
	defer skipWithoutGPU(t)
	d, k := gpu(t)
	g := dev{t, d}
	small := g.poison(4)
	for name, err := range map[string]error{
		"nil output":    k.Gather(0, small, small, 0, 2, 2, 2),
		"short buffer":  k.Gather(small, small, small, 0, 100, 2, 2),
		"negative size": k.Relu(small, small, -1),
		"heads":         k.HeadDot(small, small, small, 1, 3, 4),
		"adam step 0":   (&StepScalars{}).AdamScalars(adamOf(nn.NewAdam(1e-3)), 0),
		"adam scalars":  k.AdamStep(adamOf(nn.NewAdam(1e-3)), g.poison(2), small, small, small, small, 4),
		"dropout p = 1": k.Dropout(small, small, 4, 1, 0, g.poison(StepScalarWords)),
	} {
		if name == "adam scalars" && !emulated() {
			// A GPU allocation holds at least 512 bytes, more than the step scalars need: a
			// buffer of 2 words is not short there. The emulated GPU's sizes are exact.
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	must(t, d.Sync()) // and the context is still healthy
}

// TestGPUDevice covers the allocator's reuse, copies both ways, events and device properties.
func TestGPUDevice(t *testing.T) {
	defer skipWithoutGPU(t)
	d, _ := gpu(t)
	t.Logf("%v", d)
	p, err := d.Alloc(1000)
	must(t, err)
	must(t, d.Free(p))
	again := 900 // same size class: the cached block comes back
	if d.emu != nil {
		again = 1000 // the emulator's classes are exact sizes (guard pages)
	}
	q, err := d.Alloc(again)
	must(t, err)
	if q != p {
		t.Errorf("allocator did not reuse a cached block: %#x then %#x", p, q)
	}
	if err := d.Free(q); err != nil {
		t.Fatal(err)
	}
	if err := d.Free(q); err == nil {
		t.Error("double free accepted")
	}
	live, cached := d.MemStats()
	t.Logf("allocator: %d bytes live, %d cached", live, cached)
	must(t, d.Trim())
	if _, c := d.MemStats(); c != 0 {
		t.Errorf("%d bytes cached after Trim", c)
	}
	xs := []int32{1, -1, 7, 1 << 30}
	b, err := d.Alloc(16)
	must(t, err)
	defer d.Free(b)
	must(t, CopyToDevice(d, b, xs))
	back := make([]int32, 4)
	must(t, CopyFromDevice(d, back, b))
	for i := range xs {
		if back[i] != xs[i] {
			t.Fatalf("round trip: %v, want %v", back, xs)
		}
	}
	start, err := d.Record()
	must(t, err)
	must(t, d.Fill(b, 4, 1))
	end, err := d.Record()
	must(t, err)
	ms, err := end.Since(start)
	must(t, err)
	if ms < 0 {
		t.Errorf("elapsed %v ms", ms)
	}
	must(t, start.Destroy())
	must(t, end.Destroy())
	free, total, err := d.MemInfo()
	must(t, err)
	t.Logf("memory: %.1f of %.1f GiB free", float64(free)/(1<<30), float64(total)/(1<<30))
}

// TestGPUGoroutines runs launches from many goroutines (each may land on any OS thread): the
// context handling must make every one of them work.
func TestGPUGoroutines(t *testing.T) {
	defer skipWithoutGPU(t)
	d, k := gpu(t)
	const n = 1000
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			xs := make([]float32, n)
			for i := range xs {
				xs[i] = float32(i - w)
			}
			x, err := d.Alloc(4 * n)
			if err != nil {
				errs <- err
				return
			}
			defer d.Free(x)
			y, err := d.Alloc(4 * n)
			if err != nil {
				errs <- err
				return
			}
			defer d.Free(y)
			for rep := 0; rep < 20; rep++ {
				if err := CopyToDevice(d, x, xs); err != nil {
					errs <- err
					return
				}
				if err := k.Relu(y, x, n); err != nil {
					errs <- err
					return
				}
				got := make([]float32, n)
				if err := CopyFromDevice(d, got, y); err != nil {
					errs <- err
					return
				}
				for i, v := range got {
					if v != max(xs[i], 0) {
						errs <- fmt.Errorf("goroutine %d: relu[%d] = %v", w, i, v)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestGPUProfile: a profile counts and names every operation queued while it runs, and its
// times add up (the operations' sum lies within the span, the span within the wall time).
func TestGPUProfile(t *testing.T) {
	defer skipWithoutGPU(t)
	d, k := gpu(t)
	g := dev{t, d}
	const n = 1 << 20
	x, y := g.up(make([]float32, n)), g.poison(n)
	w, out := g.up(make([]float32, 64*64)), g.poison(n)
	must(t, d.StartProfile())
	must(t, k.Relu(y, x, n))
	must(t, k.Relu(y, x, n))
	must(t, k.MatMul(out, y, w, n/64, 64, 64))
	rep, err := d.StopProfile()
	must(t, err)
	t.Log(rep)
	if rep.Ops != 3 || len(rep.ByName) != 2 || rep.ByName[0].Count+rep.ByName[1].Count != 3 {
		t.Fatalf("profile: %d operations %+v, want 2 relu and 1 sgemm", rep.Ops, rep.ByName)
	}
	if !(rep.BusyMs > 0 && rep.BusyMs <= rep.SpanMs*1.01+0.01 && rep.SpanMs <= rep.WallMs+0.01) {
		t.Fatalf("profile times do not nest: %v", rep)
	}
	if _, err := d.StopProfile(); err == nil {
		t.Fatal("a second StopProfile did not fail")
	}
}

// adamOf is the device form of the CPU optimiser's hyper-parameters.
func adamOf(a *nn.Adam) Adam { return Adam{LR: a.LR, Beta1: a.Beta1, Beta2: a.Beta2, Eps: a.Eps} }
