package main

// -concurrent K1,K2,…: runs sharing a GPU. For each K, K trainers of one setting train at once
// in this process, each in its own goroutine on its own device (cuda.Device: its own stream in
// the GPU's one primary context), as train -parallel K runs K seeds. After a warm-up epoch
// (which compiles the nets) the trainers wait for each other, then train the timed epochs
// together on one wall clock: the throughput of K is every trainer's graphs over that clock,
// and its ratio is that throughput over K times the throughput of one trainer alone (K = 1,
// always measured first). A ratio near 1 means the runs hardly slow each other; 1/K means they
// take turns.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/gpu"
	"github.com/rewiregnn/rewiregnn/gpuexec"
	"github.com/rewiregnn/rewiregnn/gpuopt"
	"github.com/rewiregnn/rewiregnn/internal/plural"
	"github.com/rewiregnn/rewiregnn/models"
	"github.com/rewiregnn/rewiregnn/nn"
	"gorgonia.org/tensor"
)

// ConcurrentRow is one K of a -concurrent measurement.
type ConcurrentRow struct {
	setting
	Concurrent  int     `json:"concurrent"` // K: trainers at once, each on its own device (stream)
	Device      string  `json:"device"`
	Params      int     `json:"params"`
	Graphs      int     `json:"graphs"`       // training graphs per epoch, per trainer
	Batches     int     `json:"batches"`      // per epoch, per trainer
	TimedEpochs int     `json:"timed_epochs"` // per trainer, after the warm-up epoch (the only epoch if -epochs 1)
	Seconds     float64 `json:"seconds"`      // wall clock of the timed epochs of all K trainers
	GraphsPerS  float64 `json:"graphs_per_second"`
	StepsPerS   float64 `json:"steps_per_second"`
	// Ratio is GraphsPerS over K times the K = 1 row's: 1 when K runs lose nothing to each
	// other, 1/K when they take turns.
	Ratio float64 `json:"ratio"`
	// PeakAllocMiB sums the K devices' allocator high-water marks; DeviceUsedMiB is the GPU's
	// used memory (cuMemGetInfo: every context of every process) after the K runs.
	PeakAllocMiB  float64 `json:"peak_alloc_mib"`
	DeviceUsedMiB float64 `json:"device_used_mib"`
	DeviceMiB     float64 `json:"device_total_mib"`
	Error         string  `json:"error,omitempty"`
}

// parseConcurrent reads -concurrent: distinct counts of at least 1, in increasing order, with
// 1 added first (the ratios' base) when missing.
func parseConcurrent(s string) ([]int, error) {
	var ks []int
	for _, f := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 || k > 64 {
			return nil, fmt.Errorf("-concurrent %q: want trainer counts from 1 to 64, comma-separated (e.g. 1,4,8)", s)
		}
		ks = append(ks, k)
	}
	ks = append(ks, 1)
	slices.Sort(ks)
	return slices.Compact(ks), nil
}

// runConcurrent measures every setting at every K and prints a row per K.
func runConcurrent(settings []setting, o options, ks []int, asJSON bool, stdout, stderr io.Writer) int {
	var open opener
	switch o.device {
	case "cuda":
		open = func() (gpuexec.Backend, error) { return gpuexec.OpenCUDAWith(0, o.gpu) }
	case "emu":
		open = func() (gpuexec.Backend, error) {
			return gpuexec.OpenEmulatedWith(emu.Options{Deterministic: true}, o.gpu)
		}
	}
	if !asJSON {
		fmt.Fprintf(stdout, "%-11s %3s %-5s %-4s %3s %10s %9s %6s %11s %11s\n", "suite", "r", "cls", "prec", "K", "graphs/s", "steps/s", "ratio", "peak MiB", "device MiB")
	}
	failed := false
	for _, s := range settings {
		for _, row := range measureConcurrent(s, o, ks, open, stderr) {
			failed = failed || row.Error != ""
			switch {
			case asJSON:
				j, _ := json.Marshal(row)
				fmt.Fprintln(stdout, string(j))
			case row.Error != "":
				fmt.Fprintf(stdout, "%-11s %3d %-5t %-4s %3d error: %s\n", s.Suite, s.R, s.CLS, s.Precision, row.Concurrent, row.Error)
			default:
				peak, used := fmt.Sprintf("%.1f", row.PeakAllocMiB), fmt.Sprintf("%.1f", row.DeviceUsedMiB)
				if open == nil {
					peak = "-"
				}
				if row.DeviceMiB == 0 {
					used = "-"
				}
				fmt.Fprintf(stdout, "%-11s %3d %-5t %-4s %3d %10.1f %9.2f %6.2f %11s %11s\n", s.Suite, s.R, s.CLS, s.Precision, row.Concurrent,
					row.GraphsPerS, row.StepsPerS, row.Ratio, peak, used)
			}
		}
	}
	if failed {
		return 1
	}
	return 0
}

// opener opens one more device of the kind the command measures (nil: the CPU trainer).
type opener func() (gpuexec.Backend, error)

// measureConcurrent measures one setting at every K of ks.
func measureConcurrent(s setting, o options, ks []int, open opener, logw io.Writer) []ConcurrentRow {
	fail := func(err error) []ConcurrentRow {
		return []ConcurrentRow{{setting: s, Concurrent: ks[0], Device: o.device, Error: err.Error()}}
	}
	name := map[string]string{"zinc": "zinc", "superpixel": "cifar10"}[s.Suite]
	cfg, err := config.Load("", []string{"dataset.name=" + name, "dataset.encoding=adj", fmt.Sprintf("dataset.r=%d", s.R),
		fmt.Sprintf("dataset.cls=%t", s.CLS), "model.name=gatedgcn", fmt.Sprintf("train.batch_size=%d", o.batch)})
	if err != nil {
		return fail(err)
	}
	gs, spec, err := trainingGraphs(s, cfg, o) // read-only from here: the trainers share them
	if err != nil {
		return fail(err)
	}
	var rows []ConcurrentRow
	var base float64
	for _, k := range ks {
		row := runTogether(s, o, k, cfg, spec, gs, open, logw)
		if k == 1 && row.Error == "" {
			base = row.GraphsPerS
		}
		if base > 0 && row.Error == "" {
			row.Ratio = row.GraphsPerS / (float64(k) * base)
		}
		rows = append(rows, row)
	}
	return rows
}

// benchTrainer is one of K trainers training at once.
type benchTrainer struct {
	tr   *nn.Trainer
	g    *gpu.Trainer
	b    gpuexec.Backend
	step stepper
	rng  *rand.Rand
}

func (t *benchTrainer) close() {
	if t.g != nil {
		t.g.Close()
	}
	if t.tr != nil {
		t.tr.Close()
	}
	if c, ok := t.b.(interface{ Close() error }); ok {
		c.Close()
	}
}

// runTogether trains k trainers of one setting at once and measures their timed epochs.
func runTogether(s setting, o options, k int, cfg *config.Run, spec *data.Spec, gs []*data.Graph, open opener, logw io.Writer) ConcurrentRow {
	row := ConcurrentRow{setting: s, Concurrent: k, Device: o.device}
	epochGraphs := len(gs)
	if s.Suite == "superpixel" {
		epochGraphs = o.graphs
	}
	row.Graphs, row.Batches = epochGraphs, (epochGraphs+o.batch-1)/o.batch
	row.TimedEpochs = max(o.epochs-1, 1)
	ts := make([]*benchTrainer, k)
	defer func() {
		for _, t := range ts {
			if t != nil {
				t.close()
			}
		}
	}()
	for i := range ts {
		t, params, err := newBenchTrainer(cfg, spec, gs, o, uint64(i), open, s.Precision)
		ts[i] = t
		if err != nil {
			row.Error = fmt.Sprintf("trainer %d of %d: %v", i+1, k, err)
			return row
		}
		row.Params = params
		if t.b != nil {
			row.Device = t.b.String()
		}
	}
	fmt.Fprintf(logw, "gpubench: %s r=%d cls=%t: %s at once, %d batches per epoch each\n", s.Suite, s.R, s.CLS, plural.Count(k, "trainer"), row.Batches)
	// Each trainer trains its warm-up epoch, builds its timed epochs' batches where -prebuilt
	// asks for them, and waits; the clock starts when all are ready.
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, k)
	for i, t := range ts {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			var once sync.Once
			signal := func() { once.Do(ready.Done) }
			defer signal()
			errs[i] = t.train(o, gs, epochGraphs, signal, start)
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	row.Seconds = time.Since(t0).Seconds()
	if err := errors.Join(errs...); err != nil {
		row.Error = err.Error()
		return row
	}
	row.GraphsPerS = float64(k*row.TimedEpochs*epochGraphs) / row.Seconds
	row.StepsPerS = float64(k*row.TimedEpochs*row.Batches) / row.Seconds
	for _, t := range ts {
		if t.b == nil {
			continue
		}
		peak, used, total, ok := t.b.Memory()
		row.PeakAllocMiB += float64(peak) / (1 << 20)
		if ok {
			row.DeviceUsedMiB, row.DeviceMiB = float64(used)/(1<<20), float64(total)/(1<<20)
		}
	}
	fmt.Fprintf(logw, "gpubench: %s r=%d cls=%t: %d at once: %.1f graphs/s in %.2fs\n", s.Suite, s.R, s.CLS, k, row.GraphsPerS, row.Seconds)
	return row
}

// newBenchTrainer builds trainer i of a setting on a device of its own, its products in the
// given train.precision.
func newBenchTrainer(cfg *config.Run, spec *data.Spec, gs []*data.Graph, o options, i uint64, open opener, precision string) (*benchTrainer, int, error) {
	t := &benchTrainer{rng: rand.New(rand.NewPCG(o.seed+i, 3))}
	_, build, params, err := models.FromConfig(cfg, spec)
	if err != nil {
		return t, 0, err
	}
	p, err := nn.NewParams(tensor.Float32, o.seed+i)
	if err != nil {
		return t, 0, err
	}
	buckets, err := nn.MakeBuckets(gs, o.batch, cfg.Train.Buckets)
	if err != nil {
		return t, 0, err
	}
	if t.tr, err = nn.NewTrainer(p, build, buckets, cfg.Train.LR); err != nil {
		return t, 0, err
	}
	if _, err := t.tr.Net(len(buckets) - 1); err != nil {
		return t, 0, err
	}
	t.step = cpuStepper{t.tr}
	if open != nil {
		if t.b, err = open(); err != nil {
			return t, 0, err
		}
		opts := o.gpu.WithPrecision(gpuopt.Precision(precision))
		if _, err := gpu.SetBackendPrecision(t.b, opts.Precision); err != nil {
			return t, 0, err
		}
		t.b.ResetPeak()
		if t.g, err = gpu.NewTrainerWith(t.tr, t.b, opts); err != nil {
			return t, 0, err
		}
		t.step = t.g
	}
	return t, params, nil
}

// train runs the warm-up epoch (when there are more), calls ready, waits for start and runs
// the timed epochs. Every step waits for its loss, so the last one has finished on return.
func (t *benchTrainer) train(o options, gs []*data.Graph, epochGraphs int, ready func(), start <-chan struct{}) error {
	epoch := func(e int, next func() (*data.Batch, error)) error {
		if err := trainBatches(t.step, next, nil); err != nil {
			return fmt.Errorf("epoch %d: %w", e, err)
		}
		return nil
	}
	first := 0
	if o.epochs > 1 {
		if err := epoch(0, batcher(gs, epochOrder(t.rng, len(gs), epochGraphs), o.batch)); err != nil {
			return err
		}
		first = 1
	}
	var nexts []func() (*data.Batch, error)
	for range o.epochs - first {
		next := batcher(gs, epochOrder(t.rng, len(gs), epochGraphs), o.batch)
		if o.prebuilt {
			var err error
			if next, err = prebuild(next); err != nil {
				return err
			}
		}
		nexts = append(nexts, next)
	}
	ready()
	<-start
	for i, next := range nexts {
		if err := epoch(first+i, next); err != nil {
			return err
		}
	}
	return nil
}
