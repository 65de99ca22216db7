// Command gpubench measures training on the GPU: seconds per epoch and peak device memory of
// the GatedGCN 100K on ZINC at r = 1, 4 and 10 (adjacency encoding, with and without the CLS
// node), and on a CIFAR10-sized synthetic superpixel set at r = 1 … 4.
//
//	gpubench                                  # the whole suite on GPU 0
//	gpubench -suite zinc -r 4 -cls true -epochs 3
//	gpubench -suite superpixel -r 1,2 -graphs 45000 -distinct 2048
//	gpubench -device cpu -suite zinc -r 1 -subset 2000   # the CPU trainer, for comparison
//	gpubench -suite zinc -r 1 -cls false -concurrent 1,4,8   # runs sharing the GPU (concurrent.go)
//	gpubench -suite zinc -r 1 -cls false -precision fp32,tf32   # each setting under each precision
//
// An epoch is one pass over the training graphs in batches of -batch (shuffled, through the
// trainer's shape buckets), timed on the wall clock including the host's batch assembly; the
// first epoch also compiles the nets, so it is reported apart and the mean is over the later
// ones. Peak memory is the executor's allocator high-water mark (parameters, Adam's moments,
// batch inputs and activations) and the device's used memory from cuMemGetInfo (all
// processes, the CUDA context and cuBLAS included). Without a GPU it says so and exits with
// status 1 (-device emu runs the suite on the emulated GPU, the real kernels compiled for the
// CPU, slowly, to check the command; it needs a C++ compiler). -precision measures each setting
// under each train.precision listed (fp32, the default; tf32: the matrix products on the TF32
// tensor cores; bf16: GatedGCN's edge sums stored in bf16), the rows saying which; the CPU
// computes in float32 only.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/rewiregnn/rewiregnn/gpuexec"
	"github.com/rewiregnn/rewiregnn/gpuopt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/cuda"
	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/gpu"
	"github.com/rewiregnn/rewiregnn/models"
	"github.com/rewiregnn/rewiregnn/nn"
	"github.com/rewiregnn/rewiregnn/prep"
	"github.com/rewiregnn/rewiregnn/train"
	"gorgonia.org/tensor"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// setting is one benchmark row.
type setting struct {
	Suite string `json:"suite"` // zinc | superpixel
	R     int    `json:"r"`
	CLS   bool   `json:"cls"`
	// Precision is the train.precision the setting trains under (gpu.Precisions): fp32, tf32 or
	// bf16.
	Precision string `json:"precision"`
}

// Row is one measured setting.
type Row struct {
	setting
	Device        string    `json:"device"`
	Params        int       `json:"params"`
	Graphs        int       `json:"graphs"` // training graphs per epoch
	Batches       int       `json:"batches"`
	MeanEdges     float64   `json:"mean_edges"` // per graph, after rewiring
	PrepSeconds   float64   `json:"preprocess_seconds"`
	FirstEpoch    float64   `json:"first_epoch_seconds"`
	EpochSeconds  float64   `json:"seconds_per_epoch"` // mean over the epochs after the first (the first if only one)
	Epochs        []float64 `json:"epochs_seconds"`
	PeakAllocMiB  float64   `json:"peak_alloc_mib"`  // allocator high-water mark
	DeviceUsedMiB float64   `json:"device_used_mib"` // cuMemGetInfo total − free after the run
	DeviceMiB     float64   `json:"device_total_mib"`
	Error         string    `json:"error,omitempty"`
	// CUDAGraphs: the training steps were replayed as captured graphs (gpuexec.Exec.Graphs;
	// off with -cuda-graphs=false, or where the device could not capture: GraphsOff says why).
	CUDAGraphs bool   `json:"cuda_graphs"`
	GraphsOff  string `json:"graphs_off,omitempty"`
	// EdgeFolds: all of GatedGCN's edge folds were on (gpuopt.Folds: the edge backward pass
	// folded into the gated aggregation's gradient, the gated aggregation into the edge sum);
	// EdgeFoldsOff names those -edge-folds left off.
	EdgeFolds    bool   `json:"edge_folds"`
	EdgeFoldsOff string `json:"edge_folds_off,omitempty"`
	// NarrowGradW: the narrow products' weight gradients ran on the project's own kernels
	// instead of cuBLAS (-narrow-gradw: cuda.Kernels.NarrowGradW).
	NarrowGradW bool `json:"narrow_gradw,omitempty"`
	// GPU are the GPU options the setting ran with (gpuopt.Options.Pairs), as a run's
	// result.json records them; absent on the CPU.
	GPU map[string]string `json:"gpu,omitempty"`
	// Profile: -profile N steps with every GPU operation timed (cuda.ProfileReport).
	Profile *cuda.ProfileReport `json:"profile,omitempty"`
	// Eval: -eval N graphs evaluated after the timed epochs, batch by batch and in large batches.
	Eval *EvalTiming `json:"eval,omitempty"`
}

// EvalTiming is one evaluation of the same graphs (ZINC's validation split, or synthetic
// superpixel graphs) in the protocol's batches of -batch graphs, each run on its own (as the
// CPU evaluates), and in large batches of up to -eval-batch graphs whose predictions are cut back
// into the protocol batches (as a GPU run evaluates, train.EvaluateLarge): the wall time of a
// second pass (the first compiles) and the device operations and host calls it queued. The
// losses and metrics of the two agree (LossRel is their losses' relative difference).
type EvalTiming struct {
	Graphs        int     `json:"graphs"`
	Batches       int     `json:"batches"`
	Seconds       float64 `json:"seconds"`
	DeviceOps     int64   `json:"device_ops"`
	HostCalls     int64   `json:"host_calls"`
	LargeBatches  int     `json:"large_batches"`
	LargeSeconds  float64 `json:"large_seconds"`
	LargeOps      int64   `json:"large_device_ops"`
	LargeCalls    int64   `json:"large_host_calls"`
	LossRel       float64 `json:"loss_rel_diff"`
	Metric        string  `json:"metric"`
	PerBatchValue float64 `json:"value"`
	LargeValue    float64 `json:"large_value"`
}

type options struct {
	device, dataDir string
	epochs, batch   int
	subset          int
	graphs          int // superpixel: graphs per epoch
	distinct        int // superpixel: distinct graphs generated (reused to fill an epoch)
	workers         int
	export          string // folder for the first epoch's batches (see export.go); "" for none
	profile         int    // steps to profile after the timed epochs (0: none)
	prebuilt        bool   // time the steps over batches built before the epoch's clock starts
	eval            int    // graphs to evaluate after the timed epochs (0: none)
	evalBatch       int    // graphs per large evaluation batch
	seed            uint64
	gpu             gpuopt.Options // the GPU options (flags -edge-folds … -arch); each setting sets its precision
}

// gpuFlags are the flags of the GPU options (the config's gpu section, docs/gpu.md
// §"Switches"): the experiment switches a speed comparison turns.
type gpuFlags struct {
	folds, defines            *string
	batched, graphs, narrowGW *bool
	arch                      *int
}

func addGPUFlags(fs *flag.FlagSet) gpuFlags {
	d := gpuopt.Default()
	return gpuFlags{
		folds:    fs.String("edge-folds", d.EdgeFolds.String(), "GatedGCN's edge folds (gpu.edge_folds): all, none, or the folds to make, comma-separated: "+strings.Join(gpuopt.FoldNames, ", ")),
		batched:  fs.Bool("batched-products", d.BatchedProducts, "a batch of products as one cublasSgemmBatched (gpu.batched_products; false: one cublasSgemm each)"),
		graphs:   fs.Bool("cuda-graphs", d.Graphs, "replay captured CUDA graphs (gpu.cuda_graphs; false: every step launch by launch)"),
		narrowGW: fs.Bool("narrow-gradw", d.NarrowGradW, "narrow products' weight gradients on the project's kernels instead of cuBLAS (gpu.narrow_gradw)"),
		defines:  fs.String("kernel-defines", "", "NAME=VALUE,… for every kernel NVRTC compiles (gpu.kernel_defines, e.g. RW_UNROLL=1)"),
		arch:     fs.Int("arch", d.Arch, "the kernels' virtual architecture (gpu.arch, e.g. 70); 0 the GPU's own"),
	}
}

// options reads the flags into GPU options; an error names the flag.
func (f gpuFlags) options() (gpuopt.Options, error) {
	o := gpuopt.Default()
	var err error
	if o.EdgeFolds, err = gpuopt.ParseFolds(*f.folds); err != nil {
		return o, fmt.Errorf("-edge-folds: %w", err)
	}
	if o.KernelDefines, err = gpuopt.ParseDefines(*f.defines); err != nil {
		return o, fmt.Errorf("-kernel-defines: %w", err)
	}
	if err := gpuopt.CheckArch(*f.arch); err != nil {
		return o, fmt.Errorf("-arch: %w", err)
	}
	o.BatchedProducts, o.Graphs, o.NarrowGradW, o.Arch = *f.batched, *f.graphs, *f.narrowGW, *f.arch
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpubench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	suite := fs.String("suite", "all", "zinc, superpixel or all")
	rs := fs.String("r", "", "comma-separated radii (default: 1,4,10 for zinc, 1,2,3,4 for superpixel)")
	cls := fs.String("cls", "both", "with the CLS node: true, false or both (zinc; the superpixel set runs without)")
	o := options{}
	fs.StringVar(&o.device, "device", "cuda", "cuda (GPU 0), cpu (the CPU trainer, for comparison) or emu (the emulated GPU, deterministic schedule; slow, checks the command)")
	fs.IntVar(&o.epochs, "epochs", 2, "epochs per setting (the first includes compiling the nets)")
	fs.IntVar(&o.batch, "batch", 128, "graphs per batch")
	fs.IntVar(&o.subset, "subset", 0, "zinc: use only the first N training graphs (0: all 10000)")
	fs.IntVar(&o.graphs, "graphs", 45000, "superpixel: training graphs per epoch (CIFAR10's training split has 45000)")
	fs.IntVar(&o.distinct, "distinct", 2048, "superpixel: distinct graphs generated and preprocessed, cycled to fill an epoch")
	fs.StringVar(&o.dataDir, "data", "", "benchmark data folder (default: $REWIREGNN_DATA, then ../shared/data)")
	fs.IntVar(&o.workers, "workers", 0, "preprocessing workers (0: all cores)")
	fs.IntVar(&o.profile, "profile", 0, "after the timed epochs, time every GPU operation of this many steps: GPU busy vs span vs wall time, and the time per kernel")
	fs.BoolVar(&o.prebuilt, "prebuilt", false, "build each epoch's batches before timing it, so s/epoch counts the training steps alone (as a loop over ready batches)")
	fs.StringVar(&o.export, "export", "", "write each setting's first-epoch batches under this folder, for scripts/bench/torch_gatedgcn.py (the first epoch's time then includes the export)")
	fs.IntVar(&o.eval, "eval", 0, "after the timed epochs, evaluate this many graphs (zinc: of the validation split, which has 1000; superpixel: of the distinct graphs) batch by batch and in large batches, and report both (the JSON row's eval, and the log)")
	fs.IntVar(&o.evalBatch, "eval-batch", train.DefaultEvalBatch, "with -eval: graphs per large evaluation batch (rounded down to whole batches of -batch)")
	seed := fs.Uint64("seed", 41, "parameter and data seed")
	asJSON := fs.Bool("json", false, "print one JSON object per setting instead of a table")
	precision := fs.String("precision", "fp32", "comma-separated train.precision values to measure each setting under: fp32 (float32 throughout), tf32 (the matrix products on the TF32 tensor cores) and bf16 (GatedGCN's edge sums stored in bf16); tf32 and bf16 on a GPU (or emu) only")
	gflags := addGPUFlags(fs)
	concurrent := fs.String("concurrent", "", "runs sharing the device: for each count K of this list (e.g. 1,4,8; 1 is always measured, first), train K trainers of each setting at once, each on its own device (stream), and report their graphs/s together against K times one trainer's")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.seed = *seed
	var err error
	if o.gpu, err = gflags.options(); err != nil {
		fmt.Fprintln(stderr, "gpubench:", err)
		return 2
	}
	if fs.NArg() > 0 || o.epochs < 1 || o.batch < 1 || o.graphs < 1 || o.distinct < 1 || o.subset < 0 || o.eval < 0 || o.evalBatch < 1 {
		fmt.Fprintln(stderr, "gpubench: bad arguments (see -h)")
		return 2
	}
	settings, err := plan(*suite, *rs, *cls)
	if err != nil {
		fmt.Fprintln(stderr, "gpubench:", err)
		return 2
	}
	if settings, err = withPrecisions(settings, *precision, o.device); err != nil {
		fmt.Fprintln(stderr, "gpubench:", err)
		return 2
	}
	var ks []int
	if *concurrent != "" {
		if ks, err = parseConcurrent(*concurrent); err != nil {
			fmt.Fprintln(stderr, "gpubench:", err)
			return 2
		}
		if o.export != "" || o.profile > 0 {
			fmt.Fprintln(stderr, "gpubench: -concurrent measures throughput alone: drop -export and -profile")
			return 2
		}
	}
	var b gpuexec.Backend
	switch o.device {
	case "cuda":
		c, err := gpuexec.OpenCUDAWith(0, o.gpu)
		if err != nil {
			first, _, _ := strings.Cut(err.Error(), "\n")
			first = strings.TrimSuffix(first, ":")
			if cudalib.ErrNoDevice(err) {
				fmt.Fprintf(stderr, "gpubench: no GPU found, nothing was measured (%s).\nRun go run ./cmd/gpuinfo for every place probed; -device cpu times the CPU trainer instead.\n", first)
			} else {
				fmt.Fprintf(stderr, "gpubench: the GPU does not work, nothing was measured: %v\n", err)
			}
			return 1
		}
		defer c.Close()
		b = c
		fmt.Fprintln(stderr, "gpubench:", c)
	case "emu":
		c, err := gpuexec.OpenEmulatedWith(emu.Options{Deterministic: true}, o.gpu)
		if err != nil {
			fmt.Fprintf(stderr, "gpubench: the emulated GPU does not work, nothing was measured: %v\n", err)
			return 1
		}
		defer c.Close()
		b = c
		fmt.Fprintln(stderr, "gpubench:", c)
	case "cpu":
	default:
		fmt.Fprintf(stderr, "gpubench: -device %q, want cuda, cpu or emu\n", o.device)
		return 2
	}
	if ks != nil {
		return runConcurrent(settings, o, ks, *asJSON, stdout, stderr)
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "%-11s %3s %-5s %-4s %7s %7s %8s %9s %9s %10s %11s %11s\n", "suite", "r", "cls", "prec", "params", "graphs", "edges/g", "prep s", "1st ep s", "s/epoch", "peak MiB", "device MiB")
	}
	failed := false
	for _, s := range settings {
		row := measure(s, o, b, stderr)
		if row.Error != "" {
			failed = true
		}
		if *asJSON {
			j, _ := json.Marshal(row)
			fmt.Fprintln(stdout, string(j))
			continue
		}
		if row.Error != "" {
			fmt.Fprintf(stdout, "%-11s %3d %-5t %-4s error: %s\n", s.Suite, s.R, s.CLS, s.Precision, row.Error)
			continue
		}
		peak, used := fmt.Sprintf("%.1f", row.PeakAllocMiB), fmt.Sprintf("%.1f", row.DeviceUsedMiB)
		if b == nil {
			peak = "-"
		}
		if row.DeviceMiB == 0 {
			used = "-"
		}
		fmt.Fprintf(stdout, "%-11s %3d %-5t %-4s %7d %7d %8.1f %9.1f %9.2f %10.2f %11s %11s\n", s.Suite, s.R, s.CLS, s.Precision, row.Params, row.Graphs,
			row.MeanEdges, row.PrepSeconds, row.FirstEpoch, row.EpochSeconds, peak, used)
	}
	if failed {
		return 1
	}
	return 0
}

// plan expands the flags into settings.
func plan(suite, rs, cls string) ([]setting, error) {
	var suites []string
	switch suite {
	case "all":
		suites = []string{"zinc", "superpixel"}
	case "zinc", "superpixel":
		suites = []string{suite}
	default:
		return nil, fmt.Errorf("-suite %q, want zinc, superpixel or all", suite)
	}
	var clss []bool
	switch cls {
	case "both":
		clss = []bool{false, true}
	case "true", "false":
		clss = []bool{cls == "true"}
	default:
		return nil, fmt.Errorf("-cls %q, want true, false or both", cls)
	}
	var out []setting
	for _, su := range suites {
		radii := map[string][]int{"zinc": {1, 4, 10}, "superpixel": {1, 2, 3, 4}}[su]
		if rs != "" {
			radii = nil
			for _, f := range strings.Split(rs, ",") {
				r, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || r < 1 {
					return nil, fmt.Errorf("-r %q: want radii ≥ 1, comma-separated", rs)
				}
				radii = append(radii, r)
			}
		}
		for _, r := range radii {
			if su == "superpixel" {
				out = append(out, setting{Suite: su, R: r})
				continue
			}
			for _, c := range clss {
				out = append(out, setting{Suite: su, R: r, CLS: c})
			}
		}
	}
	return out, nil
}

// withPrecisions gives each setting once per precision of the comma-separated list (in its
// order, a setting's rows together). The CPU trainer computes in float32 only: anything but
// fp32 is refused for -device cpu.
func withPrecisions(settings []setting, list, device string) ([]setting, error) {
	var precs []string
	for _, f := range strings.Split(list, ",") {
		p := strings.TrimSpace(f)
		if _, err := gpuopt.ParsePrecision(p); err != nil {
			return nil, fmt.Errorf("-precision %q: %q is no train.precision (want %s, comma-separated)", list, p, strings.Join(gpuopt.PrecisionNames(), ", "))
		}
		if device == "cpu" && p != "fp32" {
			return nil, fmt.Errorf("-precision %s with -device cpu: the CPU trainer computes in float32 only (%s needs a GPU: -device cuda, or emu)", p, p)
		}
		if !slices.Contains(precs, p) {
			precs = append(precs, p)
		}
	}
	var out []setting
	for _, s := range settings {
		for _, p := range precs {
			s.Precision = p
			out = append(out, s)
		}
	}
	return out, nil
}

// measure trains one setting for o.epochs epochs and reports its timings and memory.
func measure(s setting, o options, b gpuexec.Backend, logw io.Writer) Row {
	row := Row{setting: s, Device: o.device}
	if b != nil {
		row.Device = b.String()
	}
	fail := func(err error) Row {
		row.Error = err.Error()
		return row
	}
	name := map[string]string{"zinc": "zinc", "superpixel": "cifar10"}[s.Suite]
	cfg, err := config.Load("", []string{"dataset.name=" + name, "dataset.encoding=adj", fmt.Sprintf("dataset.r=%d", s.R),
		fmt.Sprintf("dataset.cls=%t", s.CLS), "model.name=gatedgcn", fmt.Sprintf("train.batch_size=%d", o.batch)})
	if err != nil {
		return fail(err)
	}
	t0 := time.Now()
	gs, spec, err := trainingGraphs(s, cfg, o)
	if err != nil {
		return fail(err)
	}
	row.PrepSeconds = time.Since(t0).Seconds()
	edges := 0
	for _, g := range gs {
		edges += g.NumEdges()
	}
	row.MeanEdges = float64(edges) / float64(len(gs))
	mio, build, params, err := models.FromConfig(cfg, spec)
	if err != nil {
		return fail(err)
	}
	row.Params = params
	p, err := nn.NewParams(tensor.Float32, o.seed)
	if err != nil {
		return fail(err)
	}
	buckets, err := nn.MakeBuckets(gs, o.batch, cfg.Train.Buckets)
	if err != nil {
		return fail(err)
	}
	tr, err := nn.NewTrainer(p, build, buckets, cfg.Train.LR)
	if err != nil {
		return fail(err)
	}
	defer tr.Close()
	if _, err := tr.Net(len(buckets) - 1); err != nil {
		return fail(err)
	}
	var step stepper = cpuStepper{tr}
	graphs := func() (bool, string) { return false, "" }
	var evaluator train.LargeEvaluator = tr
	if b != nil {
		opts := o.gpu.WithPrecision(gpuopt.Precision(s.Precision))
		note, err := gpu.SetBackendPrecision(b, opts.Precision)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(logw, "gpubench: %s r=%d cls=%t: %s\n", s.Suite, s.R, s.CLS, note)
		b.ResetPeak()
		g, err := gpu.NewTrainerWith(tr, b, opts)
		if err != nil {
			return fail(err)
		}
		defer g.Close()
		row.GPU = pairs(opts)
		step = g
		graphs = g.Graphs
		evaluator = g
	}
	epochGraphs := len(gs)
	if s.Suite == "superpixel" {
		epochGraphs = o.graphs
	}
	row.Graphs = epochGraphs
	row.Batches = (epochGraphs + o.batch - 1) / o.batch
	var exp *exporter
	if o.export != "" {
		exp = newExporter(o.export, s, spec)
	}
	rng := rand.New(rand.NewPCG(o.seed, 3))
	fmt.Fprintf(logw, "gpubench: %s r=%d cls=%t: %d distinct graphs, %.1f edges each, %d batches per epoch, %d buckets\n",
		s.Suite, s.R, s.CLS, len(gs), row.MeanEdges, row.Batches, len(buckets))
	for e := 0; e < o.epochs; e++ {
		t0 := time.Now()
		next := batcher(gs, epochOrder(rng, len(gs), epochGraphs), o.batch)
		if o.prebuilt { // the epoch's batches first, then the timed steps alone
			if next, err = prebuild(next); err != nil {
				return fail(err)
			}
			t0 = time.Now()
		}
		var each func(*data.Batch) error
		if exp != nil && e == 0 {
			each = exp.add
		}
		if err := trainBatches(step, next, each); err != nil {
			return fail(fmt.Errorf("epoch %d: %w", e, err))
		}
		secs := time.Since(t0).Seconds()
		if exp != nil && e == 0 {
			if err := exp.write(); err != nil { // counted in the first epoch, which the mean leaves out
				return fail(err)
			}
		}
		row.Epochs = append(row.Epochs, secs)
		fmt.Fprintf(logw, "gpubench: %s r=%d cls=%t: epoch %d %.2fs\n", s.Suite, s.R, s.CLS, e, secs)
	}
	row.CUDAGraphs, row.GraphsOff = graphs() // of the timed epochs (a profile refuses captures)
	row.EdgeFolds, row.EdgeFoldsOff = o.gpu.EdgeFolds.All(), o.gpu.EdgeFolds.Off()
	if c, ok := b.(*gpuexec.CUDA); ok {
		if k, err := c.Dev.Kernels(); err == nil {
			row.NarrowGradW = k.NarrowGradW()
		}
	}
	if c, ok := b.(*gpuexec.CUDA); ok && o.profile > 0 {
		rep, err := profileSteps(c.Dev, step, gs, o)
		if err != nil {
			return fail(err)
		}
		row.Profile = rep
		fmt.Fprintf(logw, "gpubench: %s r=%d cls=%t: profile of %d steps: %v\n", s.Suite, s.R, s.CLS, o.profile, rep)
		for i, op := range rep.ByName {
			if i == 12 {
				break
			}
			fmt.Fprintf(logw, "gpubench:   %-28s %6d × %8.3f ms = %8.2f ms (%4.1f%% of busy)\n", op.Name, op.Count, op.Ms/float64(op.Count), op.Ms, 100*op.Ms/rep.BusyMs)
		}
	}
	if o.eval > 0 {
		ev, err := measureEval(s, cfg, o, gs, evaluator, b, train.MetricFor(mio), mio.Out)
		if err != nil {
			return fail(fmt.Errorf("evaluation: %w", err))
		}
		row.Eval = ev
		fmt.Fprintf(logw, "gpubench: %s r=%d cls=%t: evaluation of %d graphs in %d batches of %d: %.3fs, %d device operations, %d host calls; in %d large batches of up to %d: %.3fs, %d device operations, %d host calls (%s %.5f / %.5f, losses %.1e apart)\n",
			s.Suite, s.R, s.CLS, ev.Graphs, ev.Batches, o.batch, ev.Seconds, ev.DeviceOps, ev.HostCalls, ev.LargeBatches, o.evalBatch,
			ev.LargeSeconds, ev.LargeOps, ev.LargeCalls, ev.Metric, ev.PerBatchValue, ev.LargeValue, ev.LossRel)
	}
	row.FirstEpoch = row.Epochs[0]
	later := row.Epochs
	if len(later) > 1 {
		later = later[1:]
	}
	for _, x := range later {
		row.EpochSeconds += x / float64(len(later))
	}
	if b != nil {
		peak, used, total, ok := b.Memory()
		row.PeakAllocMiB = float64(peak) / (1 << 20)
		if ok {
			row.DeviceUsedMiB, row.DeviceMiB = float64(used)/(1<<20), float64(total)/(1<<20)
		}
	}
	return row
}

// measureEval evaluates o.eval graphs (zinc: the validation split's first; superpixel: the
// distinct training graphs) batch by batch and in large batches, twice each (the first pass
// compiles), and reports the second passes.
func measureEval(s setting, cfg *config.Run, o options, gs []*data.Graph, ev train.LargeEvaluator, b gpuexec.Backend, metric string, classes int) (*EvalTiming, error) {
	if s.Suite == "zinc" {
		var err error
		if gs, err = zincSplit(cfg, o, "val", s); err != nil {
			return nil, err
		}
	}
	gs = gs[:min(o.eval, len(gs))]
	bs, err := train.Batches(gs, o.batch)
	if err != nil {
		return nil, err
	}
	counts := func() cuda.Counts {
		if c, ok := b.(*gpuexec.CUDA); ok {
			return c.Dev.Counts()
		}
		return cuda.Counts{}
	}
	et := &EvalTiming{Graphs: len(gs), Batches: len(bs), Metric: metric}
	per := o.evalBatch / o.batch
	var small, large *train.Meter
	for pass := 0; pass < 2; pass++ {
		c0, t0 := counts(), time.Now()
		if small, err = train.EvaluateBatches(ev, metric, classes, bs); err != nil {
			return nil, err
		}
		et.Seconds = time.Since(t0).Seconds()
		d := counts().Sub(c0)
		et.DeviceOps, et.HostCalls = d.DeviceOps, d.HostCalls
		c0, t0 = counts(), time.Now()
		if large, et.LargeBatches, err = train.EvaluateLarge(ev, metric, classes, gs, o.batch, per); err != nil {
			return nil, err
		}
		et.LargeSeconds = time.Since(t0).Seconds()
		d = counts().Sub(c0)
		et.LargeOps, et.LargeCalls = d.DeviceOps, d.HostCalls
	}
	et.PerBatchValue, et.LargeValue = small.Value(), large.Value()
	if l := small.Loss(); l != 0 {
		et.LossRel = math.Abs(large.Loss()-l) / math.Abs(l)
	}
	return et, nil
}

// trainingGraphs returns the preprocessed training graphs of a setting: ZINC's training split
// from the data folder, or synthetic CIFAR10-sized superpixel graphs.
func trainingGraphs(s setting, cfg *config.Run, o options) ([]*data.Graph, *data.Spec, error) {
	key := prep.Key{Dataset: cfg.Dataset.Name, Split: "train", R: s.R, Encoding: "adj", CLS: s.CLS, SelfLoops: cfg.Dataset.SelfLoops}
	if s.Suite == "superpixel" {
		spec, err := data.OpenSpec("", "cifar10")
		if err != nil {
			return nil, nil, err
		}
		gs, err := prep.Build(SyntheticSuperpixels(o.distinct, o.seed), spec, key, o.workers)
		return gs, spec, err
	}
	dir, err := data.ResolveDataDir(o.dataDir)
	if err != nil {
		return nil, nil, err
	}
	raw, spec, err := data.LoadSplit(dir, "zinc", "train")
	if err != nil {
		return nil, nil, err
	}
	if o.subset > 0 && len(raw) > o.subset {
		raw = raw[:o.subset]
	}
	if len(raw) == 0 {
		return nil, nil, errors.New("zinc: no training graphs")
	}
	gs, err := prep.Build(raw, spec, key, o.workers)
	return gs, spec, err
}

// zincSplit returns ZINC's split preprocessed as the setting's training graphs are.
func zincSplit(cfg *config.Run, o options, split string, s setting) ([]*data.Graph, error) {
	dir, err := data.ResolveDataDir(o.dataDir)
	if err != nil {
		return nil, err
	}
	raw, spec, err := data.LoadSplit(dir, "zinc", split)
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("zinc: no %s graphs", split)
	}
	key := prep.Key{Dataset: cfg.Dataset.Name, Split: split, R: s.R, Encoding: "adj", CLS: s.CLS, SelfLoops: cfg.Dataset.SelfLoops}
	return prep.Build(raw, spec, key, o.workers)
}

// SyntheticSuperpixels returns n graphs shaped like CIFAR-10's superpixel graphs (docs/protocol.md
// §"MNIST and CIFAR10"): 85 to 150 nodes (CIFAR-10 averages about 118, at most 150), each with 5
// float features (mean colour in [0, 1] and the centroid over the image side), the directed
// 8-nearest-neighbour graph of the centroids with its Gaussian edge weights (data.KNNGraph, as the
// real set), and one of 10 labels. Only the sizes and shapes matter for timing; the values are
// random.
func SyntheticSuperpixels(n int, seed uint64) []*data.Graph {
	rng := rand.New(rand.NewPCG(seed, 0x5b))
	gs := make([]*data.Graph, n)
	for i := range gs {
		nodes := 85 + rng.IntN(66)
		coord := make([]float64, 2*nodes)
		feat := make([]float32, 5*nodes)
		for v := 0; v < nodes; v++ {
			coord[2*v], coord[2*v+1] = rng.Float64(), rng.Float64()
			for c := 0; c < 3; c++ {
				feat[5*v+c] = rng.Float32()
			}
			feat[5*v+3], feat[5*v+4] = float32(coord[2*v]), float32(coord[2*v+1])
		}
		src, dst, w := data.KNNGraph(coord, nodes, 8)
		gs[i] = &data.Graph{N: nodes, Src: src, Dst: dst,
			Node:  data.Features{FloatDim: 5, Float: feat},
			Edge:  data.Features{FloatDim: 1, Float: w},
			Label: int32(rng.IntN(10))}
	}
	return gs
}

// profileSteps runs o.profile training steps on batches of the first graphs with every GPU
// operation timed (cuda.Device.StartProfile).
func profileSteps(d *cuda.Device, step stepper, gs []*data.Graph, o options) (*cuda.ProfileReport, error) {
	var bs []*data.Batch
	for i := 0; i < o.profile; i++ {
		batch := make([]*data.Graph, 0, o.batch)
		for j := 0; j < o.batch; j++ {
			batch = append(batch, gs[(i*o.batch+j)%len(gs)])
		}
		bt, err := data.NewBatch(batch)
		if err != nil {
			return nil, err
		}
		bs = append(bs, bt)
	}
	if err := d.StartProfile(); err != nil {
		return nil, err
	}
	if err := trainBatches(step, sliceBatches(bs), nil); err != nil {
		d.StopProfile()
		return nil, fmt.Errorf("profiled steps: %w", err)
	}
	return d.StopProfile()
}

// epochOrder is one epoch's order of n graphs: shuffled passes over them until the epoch has
// its count.
func epochOrder(rng *rand.Rand, n, count int) []int {
	order := make([]int, 0, count+n)
	for len(order) < count {
		order = append(order, rng.Perm(n)...)
	}
	return order[:count]
}

// prebuild assembles every batch of next at once and returns them one per call, so that a
// timed loop over them counts the training steps alone.
func prebuild(next func() (*data.Batch, error)) (func() (*data.Batch, error), error) {
	var bs []*data.Batch
	for bt, err := next(); bt != nil || err != nil; bt, err = next() {
		if err != nil {
			return nil, err
		}
		bs = append(bs, bt)
	}
	return sliceBatches(bs), nil
}

// sliceBatches returns the batches of bs in order, one per call; nil at the end.
func sliceBatches(bs []*data.Batch) func() (*data.Batch, error) {
	return func() (*data.Batch, error) {
		if len(bs) == 0 {
			return nil, nil
		}
		bt := bs[0]
		bs = bs[1:]
		return bt, nil
	}
}

// batcher returns the batches of one epoch in order, one per call; nil at the end.
func batcher(gs []*data.Graph, order []int, size int) func() (*data.Batch, error) {
	lo := 0
	return func() (*data.Batch, error) {
		if lo >= len(order) {
			return nil, nil
		}
		batch := make([]*data.Graph, 0, size)
		for _, i := range order[lo:min(lo+size, len(order))] {
			batch = append(batch, gs[i])
		}
		lo += size
		return data.NewBatch(batch)
	}
}

// pairs are the GPU options as the config's gpu keys write them.
func pairs(o gpuopt.Options) map[string]string {
	m := map[string]string{}
	for _, kv := range o.Pairs() {
		m[kv.Key] = kv.Value
	}
	return m
}
