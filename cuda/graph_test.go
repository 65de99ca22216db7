package cuda

// CUDA graph tests: a captured sequence replays to the bits of the same operations run eagerly,
// Counts sees a replay as one host call and Nodes() device operations, what a capture cannot
// hold is refused without breaking the capture, and (on the emulated GPU) a replay that reads
// a freed buffer fails clearly. On a GPU they use the test GPU; elsewhere an emulated GPU of
// their own on the deterministic schedule, so float atomics (none here, but the product and
// the column sums are checked bit for bit) add in one order. Run: go test ./cuda -run GPUGraph

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/rewiregnn/rewiregnn/cuda/emu"
)

// graphDevice returns the test GPU, or a new deterministic emulated GPU closed with the test;
// it skips or fails as the op tests do where neither can be opened.
func graphDevice(t *testing.T) (*Device, *Kernels) {
	t.Helper()
	d, k := gpu(t)
	if d.emu == nil {
		return d, k
	}
	d, err := OpenEmulator(emu.Options{Deterministic: true})
	if err != nil {
		t.Fatalf("deterministic emulated GPU: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("closing the emulated GPU: %v", err)
		}
	})
	k, err = d.Kernels()
	must(t, err)
	return d, k
}

// Shapes of the graph tests' step: a product [gm, ga]·[ga, gb], and column sums over gTall
// rows (above 1024: the chunked reduction, whose scratch the graph must hold).
const (
	gm, ga, gb   = 37, 16, 24
	gTall, gCols = 2100, 3
)

// graphBufs are the buffers of one copy of the step: inputs, intermediates and outputs.
type graphBufs struct {
	x, w, bias, y, tall   DevPtr // inputs
	acc, h, hb, r, s, sum DevPtr // intermediates
	out, colOut           DevPtr // outputs
}

func newGraphBufs(g dev) graphBufs {
	n := gm * gb
	return graphBufs{
		x: g.poison(gm * ga), w: g.poison(ga * gb), bias: g.poison(gb), y: g.poison(n), tall: g.poison(gTall * gCols),
		acc: g.poison(n), h: g.poison(n), hb: g.poison(n), r: g.poison(n), s: g.poison(n), sum: g.poison(n),
		out: g.poison(n), colOut: g.poison(gCols),
	}
}

// graphInputs are one set of input data.
type graphInputs struct{ x, w, bias, y, tall []float32 }

func newGraphInputs(rng *rand.Rand) graphInputs {
	return graphInputs{x: randSlice(rng, gm*ga), w: randSlice(rng, ga*gb), bias: randSlice(rng, gb), y: randSlice(rng, gm*gb), tall: randSlice(rng, gTall*gCols)}
}

// upload copies the inputs into b's input buffers (outside any capture).
func (in graphInputs) upload(t *testing.T, d *Device, b graphBufs) {
	t.Helper()
	for _, c := range []struct {
		p  DevPtr
		xs []float32
	}{{b.x, in.x}, {b.w, in.w}, {b.bias, in.bias}, {b.y, in.y}, {b.tall, in.tall}} {
		must(t, CopyToDevice(d, c.p, c.xs))
	}
}

// graphStep queues the step: a fill, a matrix product, bias, ReLU, two additions, a device
// copy and a chunked column sum (8 operations).
func graphStep(d *Device, k *Kernels, b graphBufs) error {
	n := gm * gb
	for _, f := range []func() error{
		func() error { return d.Fill(b.acc, n, 0.5) },
		func() error { return k.MatMul(b.h, b.x, b.w, gm, ga, gb) },
		func() error { return k.AddBias(b.hb, b.h, b.bias, gm, gb) },
		func() error { return k.Relu(b.r, b.hb, n) },
		func() error { return k.Add(b.s, b.r, b.y, n) },
		func() error { return k.Add(b.sum, b.s, b.acc, n) },
		func() error { return d.Copy(b.out, b.sum, n) },
		func() error { return k.ColSum(b.colOut, b.tall, gTall, gCols) },
	} {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// captureStep captures graphStep on b.
func captureStep(t *testing.T, d *Device, k *Kernels, b graphBufs) *Graph {
	t.Helper()
	must(t, d.BeginCapture())
	if err := graphStep(d, k, b); err != nil {
		_, _ = d.EndCapture()
		t.Fatalf("capturing the step: %v", err)
	}
	g, err := d.EndCapture()
	must(t, err)
	t.Cleanup(func() { _ = g.Destroy() })
	return g
}

// TestGPUGraphReplay captures the step once and, for three sets of inputs uploaded into the
// captured input buffers before each Launch, checks the replay's outputs against the same
// step run eagerly on buffers of its own, bit for bit. The outputs are poisoned before each
// replay, so an operation the replay skipped shows. It also checks that the column sum's
// scratch, freed to the cache during the capture, is held by the graph until Destroy.
func TestGPUGraphReplay(t *testing.T) {
	defer skipWithoutGPU(t)
	d, k := graphDevice(t)
	if d.blas.lib.SetWorkspace != nil && d.blas.ws == 0 {
		t.Errorf("cuBLAS (%s) has cublasSetWorkspace, but the handle has no workspace", d.blas.lib.Path)
	}
	g := dev{t, d}
	cb, eb := newGraphBufs(g), newGraphBufs(g)
	graph := captureStep(t, d, k, cb)
	if graph.Nodes() != 8 {
		t.Errorf("graph of %d operations, want 8 (a fill, a product, 5 kernels, a copy and the column sum)", graph.Nodes())
	}
	if len(graph.held) == 0 {
		t.Error("the graph holds no blocks: the column sum's scratch was left in the cache")
	}
	for _, p := range graph.held {
		if slices.Contains(d.alloc.free[d.alloc.size[p]], p) {
			t.Errorf("block %#x held by the graph is also in the cache", uint64(p))
		}
	}
	n := gm * gb
	rng := rand.New(rand.NewPCG(7, 8))
	for round := 0; round < 3; round++ {
		in := newGraphInputs(rng)
		in.upload(t, d, cb)
		must(t, d.Fill(cb.out, n, float32(math.NaN())))
		must(t, d.Fill(cb.colOut, gCols, float32(math.NaN())))
		must(t, graph.Launch())
		in.upload(t, d, eb)
		must(t, graphStep(d, k, eb))
		sameBits32(t, "replayed out", g.down(cb.out, n), g.down(eb.out, n))
		sameBits32(t, "replayed column sums", g.down(cb.colOut, gCols), g.down(eb.colOut, gCols))
		if round == 0 {
			near(t, "out against the CPU", g.down(cb.out, n), cpuGraphStep(in), reduce)
		}
	}
	held := graph.held
	must(t, graph.Destroy())
	for _, p := range held {
		if !slices.Contains(d.alloc.free[d.alloc.size[p]], p) {
			t.Errorf("block %#x held by the graph is not back in the cache after Destroy", uint64(p))
		}
	}
	if err := graph.Launch(); err == nil || !strings.Contains(err.Error(), "destroyed") {
		t.Errorf("launch of a destroyed graph: %v", err)
	}
	if err := graph.Destroy(); err == nil {
		t.Error("a second Destroy did not fail")
	}
}

// cpuGraphStep is graphStep's out on the CPU: relu(x·w + bias) + y + 0.5.
func cpuGraphStep(in graphInputs) []float32 {
	out := make([]float32, gm*gb)
	for i := 0; i < gm; i++ {
		for j := 0; j < gb; j++ {
			var s float64
			for l := 0; l < ga; l++ {
				s += float64(in.x[i*ga+l]) * float64(in.w[l*gb+j])
			}
			v := max(float32(s)+in.bias[j], 0)
			out[i*gb+j] = v + in.y[i*gb+j] + 0.5
		}
	}
	return out
}

// TestGPUGraphCounts: capturing counts nothing, a Launch counts 1 host call and Nodes() device
// operations, and Nodes() is what the same step counts eagerly; a profile sees a launch as one
// operation, "graph".
func TestGPUGraphCounts(t *testing.T) {
	defer skipWithoutGPU(t)
	d, k := graphDevice(t)
	g := dev{t, d}
	b := newGraphBufs(g)
	newGraphInputs(rand.New(rand.NewPCG(1, 1))).upload(t, d, b)
	c0 := d.Counts()
	must(t, graphStep(d, k, b))
	eager := d.Counts().Sub(c0)
	c1 := d.Counts()
	graph := captureStep(t, d, k, b)
	if got := d.Counts().Sub(c1); got != (Counts{}) {
		t.Errorf("capture counted %+v, want nothing", got)
	}
	if int64(graph.Nodes()) != eager.DeviceOps || eager.HostCalls != eager.DeviceOps {
		t.Errorf("graph of %d operations; the step eagerly: %+v", graph.Nodes(), eager)
	}
	for i := 1; i <= 2; i++ {
		c := d.Counts()
		must(t, graph.Launch())
		if got, want := d.Counts().Sub(c), (Counts{HostCalls: 1, DeviceOps: int64(graph.Nodes())}); got != want {
			t.Errorf("launch %d counted %+v, want %+v", i, got, want)
		}
	}
	must(t, d.StartProfile())
	must(t, graph.Launch())
	rep, err := d.StopProfile()
	must(t, err)
	if rep.Ops != 1 || len(rep.ByName) != 1 || rep.ByName[0].Name != "graph" {
		t.Errorf("profile of a launch: %d operations %+v, want one, \"graph\"", rep.Ops, rep.ByName)
	}
	t.Logf("step: %d host calls eagerly, 1 as a graph of %d operations", eager.HostCalls, graph.Nodes())
}

// TestGPUGraphRefusals: during a capture, uploads, downloads, Sync, Trim, Close, event records,
// profiles, a second BeginCapture and graph launches fail with an error naming them, and the
// capture goes on: EndCapture returns a graph of the operations queued around them, which
// works. Allocation and MemInfo work during a capture. EndCapture without BeginCapture, and
// BeginCapture while a profile runs, fail.
func TestGPUGraphRefusals(t *testing.T) {
	defer skipWithoutGPU(t)
	d, k := graphDevice(t)
	g := dev{t, d}
	const n = 300
	xs := randSlice(rand.New(rand.NewPCG(3, 4)), n)
	x, y, z := g.up(xs), g.poison(n), g.poison(n)
	if _, err := d.EndCapture(); err == nil || !strings.Contains(err.Error(), "without BeginCapture") {
		t.Errorf("EndCapture without BeginCapture: %v", err)
	}
	must(t, d.StartProfile())
	if err := d.BeginCapture(); err == nil || !strings.Contains(err.Error(), "profile") {
		t.Errorf("BeginCapture during a profile: %v", err)
	}
	_, err := d.StopProfile()
	must(t, err)

	other := captureStep(t, d, k, newGraphBufs(g)) // a graph to try to launch during the capture
	must(t, d.BeginCapture())
	must(t, k.Relu(y, x, n))
	back := make([]float32, n)
	refused := []struct {
		what string
		f    func() error
	}{
		{"upload", func() error { return CopyToDevice(d, x, xs) }},
		{"download", func() error { return CopyFromDevice(d, back, x) }},
		{"sync", d.Sync},
		{"trim", d.Trim},
		{"close", d.Close},
		{"event record", func() error { _, err := d.Record(); return err }},
		{"profile", d.StartProfile},
		{"BeginCapture", d.BeginCapture},
		{"graph launch", other.Launch},
	}
	for _, r := range refused {
		err := r.f()
		if err == nil || !strings.Contains(err.Error(), r.what+" while the stream is being captured") {
			t.Errorf("%s during a capture: %v, want a refusal naming it", r.what, err)
		}
	}
	p, err := d.Alloc(4 * n) // allocation goes on: a scratch block, freed again
	must(t, err)
	must(t, d.Free(p))
	if _, _, err := d.MemInfo(); err != nil {
		t.Errorf("MemInfo during a capture: %v", err)
	}
	must(t, k.Relu(z, y, n))
	graph, err := d.EndCapture()
	must(t, err)
	defer graph.Destroy()
	if graph.Nodes() != 2 {
		t.Errorf("graph of %d operations, want the 2 ReLUs", graph.Nodes())
	}
	if !slices.Contains(graph.held, p) {
		t.Errorf("block %#x, freed during the capture, is not held by the graph", uint64(p))
	}
	must(t, d.Sync()) // the device works again, not closed
	want := make([]float32, n)
	for i, v := range xs {
		want[i] = max(v, 0)
	}
	for round := 0; round < 2; round++ {
		must(t, d.Fill(z, n, float32(math.NaN())))
		must(t, graph.Launch())
		sameBits32(t, "ReLU replayed", g.down(z, n), want)
		xs = randSlice(rand.New(rand.NewPCG(5, uint64(round))), n)
		for i, v := range xs {
			want[i] = max(v, 0)
		}
		must(t, CopyToDevice(d, x, xs))
	}
}

// TestGPUGraphFreedBuffer: a graph replayed after one of its buffers was freed and the memory
// handed back to the driver (Trim) fails, naming the node and the address, and the device
// goes on working. On a GPU such a replay reads freed memory (an illegal address that poisons
// the context, or silently someone else's data), so only the emulated GPU, which checks every
// pointer argument against its live buffers at each replay, runs it.
func TestGPUGraphFreedBuffer(t *testing.T) {
	defer skipWithoutGPU(t)
	d, k := graphDevice(t)
	if d.emu == nil {
		t.Skip("on a GPU a replay that reads freed memory faults and poisons the context")
	}
	g := dev{t, d}
	const n = 100
	x, err := d.Alloc(4 * n)
	must(t, err)
	must(t, d.Fill(x, n, 1))
	y := g.poison(n)
	must(t, d.BeginCapture())
	must(t, k.Relu(y, x, n))
	graph, err := d.EndCapture()
	must(t, err)
	defer graph.Destroy()
	must(t, graph.Launch())
	must(t, d.Free(x))
	must(t, graph.Launch()) // freed to the cache only: still device memory (the documented hazard)
	must(t, d.Trim())
	err = graph.Launch()
	if err == nil {
		t.Fatal("a graph whose input was freed and trimmed replayed without error")
	}
	for _, s := range []string{"graph node 1 of 1 (ew_relu)", "in no allocated buffer"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("replay error %q lacks %q", err, s)
		}
	}
	t.Logf("replay after free and trim: %v", err)
	must(t, d.Sync())
	got := g.down(y, n)
	if got[0] != 1 {
		t.Errorf("y[0] = %v after the replays, want 1", got[0])
	}
}

// TestGPUGraphEmulatorCapture checks the emulated driver itself, below the Device's refusals:
// as on a GPU, a host copy during a capture fails and invalidates it, a matrix product without
// a cuBLAS workspace cannot be captured, and ending a capture twice fails.
func TestGPUGraphEmulatorCapture(t *testing.T) {
	defer skipWithoutGPU(t)
	d, k := graphDevice(t)
	if d.emu == nil {
		t.Skip("the emulated driver's own checks")
	}
	g := dev{t, d}
	x := g.up([]float32{1, 2, 3, 4})
	drv := d.drv
	must(t, drv.Check("cuStreamBeginCapture", drv.StreamBeginCapture(d.stream, 2)))
	v := []float32{5}
	if r := drv.MemcpyHtoDAsync(uint64(x), unsafe.Pointer(&v[0]), 4, d.stream); r != 900 {
		t.Errorf("host copy during a capture: CUresult %d, want 900 (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)", r)
	}
	var graph uintptr
	err := drv.Check("cuStreamEndCapture", drv.StreamEndCapture(d.stream, unsafe.Pointer(&graph)))
	if err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED") || graph != 0 {
		t.Errorf("ending an invalidated capture: %v, graph %d", err, graph)
	}
	if err := drv.Check("cuStreamEndCapture", drv.StreamEndCapture(d.stream, unsafe.Pointer(&graph))); err == nil {
		t.Error("cuStreamEndCapture without a capture succeeded")
	}

	ws := d.blas.ws
	if r := d.blas.lib.SetWorkspace(d.blas.h, 0, 0); r != 0 {
		t.Fatalf("cublasSetWorkspace(0, 0): status %d", r)
	}
	defer d.blas.lib.SetWorkspace(d.blas.h, ws, uintptr(blasWorkspaceBytes(d.CC)))
	out := g.poison(4)
	must(t, d.BeginCapture())
	err = k.MatMul(out, x, x, 2, 2, 2)
	_, endErr := d.EndCapture()
	must(t, endErr)
	if err == nil || !strings.Contains(err.Error(), "status 15") {
		t.Errorf("a product captured without a cuBLAS workspace: %v, want status 15 (CUBLAS_STATUS_NOT_SUPPORTED)", err)
	}
}
