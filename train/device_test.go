package train

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/cuda"
	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/gpu"
	"github.com/rewiregnn/rewiregnn/gpuexec"
	"github.com/rewiregnn/rewiregnn/gpuopt"
	"github.com/rewiregnn/rewiregnn/internal/tfread"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// withProbe makes cuda and auto runs of the test find the given device (or error).
func withProbe(t *testing.T, p gpu.Prober) {
	t.Helper()
	old := probeGPU
	probeGPU = p
	t.Cleanup(func() { probeGPU = old })
}

// emulated opens a new emulated GPU for each run (the trainer closes it), in its deterministic
// schedule: float atomics add in a fixed order, so an interrupted and resumed run can equal an
// uninterrupted one bit for bit.
func emulated(o gpuopt.Options) (gpuexec.Backend, error) {
	return gpuexec.OpenEmulatedWith(emu.Options{Deterministic: true}, o)
}

// needEmu skips a test where the emulated GPU cannot be built (no C++ compiler), unless
// REWIREGNN_REQUIRE_EMU=1 asks for it.
func needEmu(t *testing.T) {
	t.Helper()
	if err := emu.Skip(); err != nil {
		t.Skip(err)
	}
}

// TestDeviceSelection: -device cuda without a GPU fails before any data is loaded, naming what
// was probed; auto falls back to the CPU and says so; cuda on an (emulated) GPU records the
// device in result.json.
func TestDeviceSelection(t *testing.T) {
	none := &cudalib.ProbeError{Lib: "libcuda", Reason: "no usable NVIDIA driver library", Attempts: []cudalib.Attempt{{Path: "/usr/lib64/libcuda.so.1", Result: "not found"}}}
	withProbe(t, func(gpuopt.Options) (gpuexec.Backend, error) { return nil, none })
	c := nm2(t, "train.max_epochs=1", "device=cuda", "dataset.name=zinc", "dataset.dir=/nonexistent")
	_, err := trainRun(t, c, 41, false, nil)
	if err == nil || !strings.Contains(err.Error(), "device cuda: no usable GPU") || !strings.Contains(err.Error(), "/usr/lib64/libcuda.so.1: not found") {
		t.Fatalf("device cuda without a GPU: %v", err)
	}

	c = nm2(t, "train.max_epochs=1", "device=auto")
	var log bytes.Buffer
	res, err := Train(context.Background(), Options{Run: c, Seed: 41, Dir: c.Dir(41), Workers: 1, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "device auto: no usable GPU") || !strings.HasPrefix(res.Device, "cpu") {
		t.Fatalf("device auto without a GPU: device %q, log:\n%s", res.Device, log.String())
	}
	if res.GPU != nil {
		t.Errorf("a CPU run records GPU options: %+v", res.GPU)
	}

	needEmu(t)
	withProbe(t, emulated)
	c = nm2(t, "train.max_epochs=1", "device=cuda", "gpu.edge_folds=gate,scatter", "gpu.cuda_graphs=false", "gpu.batched_products=false")
	if res, err = trainRun(t, c, 41, false, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Device, "emulated GPU") {
		t.Fatalf("device cuda on the emulated GPU: result.json says %q", res.Device)
	}
	checkGPURecord(t, c, res)
}

// checkGPURecord checks that result.json and the TensorBoard hparams of run c record the GPU
// options it was configured with.
func checkGPURecord(t *testing.T, c *config.Run, res *runfiles.Result) {
	t.Helper()
	back, err := runfiles.ReadResult(filepath.Join(c.Dir(41), runfiles.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	want := runfiles.GPUOptions{Precision: c.Train.Precision, EdgeFolds: c.GPU.EdgeFolds, BatchedProducts: c.GPU.BatchedProducts,
		CUDAGraphs: c.GPU.CUDAGraphs, NarrowGradW: c.GPU.NarrowGradW, KernelDefines: c.GPU.KernelDefines, Arch: c.GPU.Arch}
	if back.GPU == nil || res.GPU == nil || back.GPU.Kernels == "" {
		t.Fatalf("result.json records no GPU options (or no kernels): %+v", back.GPU)
	}
	got := *back.GPU
	got.Kernels = ""
	if got != want {
		t.Errorf("result.json's gpu %+v, want %+v", got, want)
	}
	b, err := tfread.ReadRun(c.Dir(41))
	if err != nil {
		t.Fatal(err)
	}
	_, start := endFigures(t, b)
	if start == nil {
		t.Fatal("no hparams")
	}
	for k, v := range map[string]any{config.KeyEdgeFolds: want.EdgeFolds, config.KeyCUDAGraphs: want.CUDAGraphs,
		config.KeyBatchedProducts: want.BatchedProducts, config.KeyPrecision: want.Precision} {
		if start.HParams[k] != v {
			t.Errorf("hparams %s = %v, want %v", k, start.HParams[k], v)
		}
	}
}

// TestDeviceRunTracksCPU trains NeighborsMatch for a few epochs on the CPU and through the
// GPU executor (on the emulated GPU): every epoch's losses and metrics agree closely.
func TestDeviceRunTracksCPU(t *testing.T) {
	needEmu(t)
	withProbe(t, emulated)
	runTracksCPU(t, 1e-3)
}

// TestGPURunTracksCPU is TestDeviceRunTracksCPU on the GPU; it skips where none is found
// (REWIREGNN_REQUIRE_GPU=1 makes that a failure).
func TestGPURunTracksCPU(t *testing.T) {
	b, err := gpu.ProbeCUDA(gpuopt.Default())
	if err != nil {
		if cudalib.ErrNoDevice(err) && !cuda.RequireGPU() {
			first, _, _ := strings.Cut(err.Error(), "\n")
			t.Skipf("no GPU found, skipped (the same run was checked on the emulated GPU): %s", first)
		}
		t.Fatalf("GPU set-up failed: %v", err)
	}
	b.(*gpuexec.CUDA).Close()
	withProbe(t, gpu.ProbeCUDA)
	runTracksCPU(t, 5e-3)
}

// runTracksCPU trains the same run on the CPU and with device=cuda and compares every epoch.
func runTracksCPU(t *testing.T, rel float64) {
	sets := []string{"train.batch_size=16", "train.max_epochs=4", "model.dropout=0.1"}
	cpuRun, devRun := nm2(t, append(sets, "device=cpu")...), nm2(t, append(sets, "device=cuda")...)
	if _, err := trainRun(t, cpuRun, 35, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := trainRun(t, devRun, 35, false, nil); err != nil {
		t.Fatal(err)
	}
	ec, err := runfiles.ReadMetrics(filepath.Join(cpuRun.Dir(35), runfiles.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	ed, err := runfiles.ReadMetrics(filepath.Join(devRun.Dir(35), runfiles.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ec) != len(ed) {
		t.Fatalf("%d epochs on the CPU, %d on the device", len(ec), len(ed))
	}
	for i := range ec {
		c, d := ec[i], ed[i]
		t.Logf("epoch %d: train loss %.6f / %.6f, val loss %.6f / %.6f, test %s %.2f / %.2f (CPU / device)",
			i, c.TrainLoss, d.TrainLoss, c.ValLoss, d.ValLoss, runfiles.MetricAccuracy, c.TestMetric, d.TestMetric)
		for _, p := range [][2]float64{{c.TrainLoss, d.TrainLoss}, {c.ValLoss, d.ValLoss}} {
			if math.Abs(p[0]-p[1]) > rel*math.Abs(p[0])+1e-5 {
				t.Fatalf("epoch %d: losses %v on the CPU, %v on the device", i, p[0], p[1])
			}
		}
		if math.Abs(c.TestMetric-d.TestMetric) > 5 || math.Abs(c.TrainMetric-d.TrainMetric) > 5 {
			t.Fatalf("epoch %d: accuracies %.2f/%.2f on the CPU, %.2f/%.2f on the device", i, c.TrainMetric, c.TestMetric, d.TrainMetric, d.TestMetric)
		}
	}
}

// TestDeviceResumeIsExact interrupts a run on the (emulated) GPU inside an epoch, resumes it
// and checks it against an uninterrupted one bit for bit: the checkpoint carries the device's
// parameters, Adam moments and running statistics. The step launched ahead of the interruption
// is finished and counted first: the checkpoint is one batch later than on the CPU.
func TestDeviceResumeIsExact(t *testing.T) {
	needEmu(t)
	withProbe(t, emulated)
	resumeIsExact(t, []string{"device=cuda", "train.batch_size=8", "train.max_epochs=4", "dataset.encoding=lp", "dataset.q=3", "model.dropout=0.1"}, 1, 4, 1)
}
