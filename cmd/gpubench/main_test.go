package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/rewiregnn/rewiregnn/gpuexec"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
	"github.com/rewiregnn/rewiregnn/cuda/emu"
)

// TestNoGPU: on a machine without a GPU the command says so and measures nothing.
func TestNoGPU(t *testing.T) {
	if c, err := gpuexec.OpenCUDA(0); err == nil {
		c.Close()
		t.Skip("a GPU is present: the no-GPU message is not what this machine prints")
	} else if !cudalib.ErrNoDevice(err) {
		t.Skipf("a GPU is present but does not work: %v", err)
	}
	var out, errw bytes.Buffer
	if code := run(nil, &out, &errw); code != 1 {
		t.Fatalf("exit status %d, want 1", code)
	}
	if !strings.Contains(errw.String(), "no GPU found, nothing was measured") || out.Len() != 0 {
		t.Fatalf("stdout %q, stderr %q", out.String(), errw.String())
	}
}

// TestEmulatedSuperpixel runs one small setting on the emulated GPU and reads its JSON, with
// the evaluation of its 6 graphs in 2 batches of 3 and in one large batch.
func TestEmulatedSuperpixel(t *testing.T) {
	if err := emu.Skip(); err != nil {
		t.Skip(err)
	}
	var out, errw bytes.Buffer
	args := []string{"-device", "emu", "-suite", "superpixel", "-r", "2", "-graphs", "6", "-distinct", "6", "-batch", "3", "-epochs", "2", "-eval", "6", "-eval-batch", "6", "-json"}
	if code := run(args, &out, &errw); code != 0 {
		t.Fatalf("exit status %d: %s", code, errw.String())
	}
	var row Row
	if err := json.Unmarshal(out.Bytes(), &row); err != nil {
		t.Fatalf("%v in %q", err, out.String())
	}
	if row.Suite != "superpixel" || row.R != 2 || row.Graphs != 6 || row.Batches != 2 || len(row.Epochs) != 2 || row.PeakAllocMiB <= 0 || row.Params < 90000 {
		t.Fatalf("row %+v", row)
	}
	ev := row.Eval
	if ev == nil || ev.Graphs != 6 || ev.Batches != 2 || ev.LargeBatches != 1 || ev.LossRel > 1e-5 || ev.Metric != "accuracy" ||
		ev.PerBatchValue != ev.LargeValue || ev.LargeOps <= 0 || ev.LargeOps >= ev.DeviceOps || ev.LargeCalls >= ev.HostCalls {
		t.Fatalf("evaluation %+v", ev)
	}
	t.Logf("%+v; evaluation %+v", row, *ev)
}

// TestSettings checks the suite the flags expand to.
func TestSettings(t *testing.T) {
	all, err := plan("all", "", "both")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range all {
		names = append(names, strings.Join([]string{s.Suite, string(rune('0' + s.R%10)), map[bool]string{true: "cls", false: "-"}[s.CLS]}, "/"))
	}
	want := "zinc/1/- zinc/1/cls zinc/4/- zinc/4/cls zinc/0/- zinc/0/cls superpixel/1/- superpixel/2/- superpixel/3/- superpixel/4/-"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("suite %s, want %s", got, want)
	}
	for _, bad := range [][3]string{{"cora", "", "both"}, {"zinc", "0", "both"}, {"zinc", "1", "maybe"}} {
		if _, err := plan(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("plan%v accepted", bad)
		}
	}
}

// TestSyntheticSuperpixels checks the generated graphs' shapes against CIFAR-10's.
func TestSyntheticSuperpixels(t *testing.T) {
	gs := SyntheticSuperpixels(50, 1)
	for i, g := range gs {
		if g.N < 85 || g.N > 150 || g.Node.FloatDim != 5 || len(g.Node.Float) != 5*g.N || g.Edge.FloatDim != 1 ||
			g.NumEdges() != 8*g.N || len(g.Edge.Float) != g.NumEdges() || g.Label < 0 || g.Label >= 10 {
			t.Fatalf("graph %d: %d nodes, %d edges, features %d/%d, label %d", i, g.N, g.NumEdges(), g.Node.FloatDim, g.Edge.FloatDim, g.Label)
		}
		for e := range g.Src {
			if g.Src[e] == g.Dst[e] {
				t.Fatalf("graph %d: self-loop", i)
			}
		}
	}
}

// TestEmulatedConcurrent: -concurrent 2 runs one and then two trainers of a small setting at
// once, each on its own emulated device, and reports a row per count: the one-trainer row is
// the ratios' base (ratio 1), the two-trainer row counts both trainers' graphs. No timing is
// asserted beyond being measured.
func TestEmulatedConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("three trainers on the emulated GPU (about 10 s): skipped under -short")
	}
	if err := emu.Skip(); err != nil {
		t.Skip(err)
	}
	var out, errw bytes.Buffer
	args := []string{"-device", "emu", "-suite", "superpixel", "-r", "2", "-graphs", "6", "-distinct", "3", "-batch", "3", "-epochs", "2", "-concurrent", "2", "-json"}
	if code := run(args, &out, &errw); code != 0 {
		t.Fatalf("exit status %d: %s", code, errw.String())
	}
	rows := jsonLines[ConcurrentRow](t, out.String())
	if len(rows) != 2 || rows[0].Concurrent != 1 || rows[1].Concurrent != 2 {
		t.Fatalf("rows %+v, want K = 1 and 2", rows)
	}
	for _, r := range rows {
		if r.Error != "" || r.Graphs != 6 || r.Batches != 2 || r.TimedEpochs != 1 || r.GraphsPerS <= 0 || r.Ratio <= 0 || r.PeakAllocMiB <= 0 || r.Params < 90000 {
			t.Fatalf("row %+v", r)
		}
		if want := float64(r.Concurrent*6) / r.Seconds; r.GraphsPerS != want {
			t.Errorf("K = %d: %g graphs/s, want %d graphs over %gs", r.Concurrent, r.GraphsPerS, r.Concurrent*6, r.Seconds)
		}
	}
	if rows[0].Ratio != 1 {
		t.Errorf("the one-trainer row's ratio is %g, want 1", rows[0].Ratio)
	}
	if rows[1].PeakAllocMiB <= rows[0].PeakAllocMiB {
		t.Errorf("two trainers' peaks %g MiB, one trainer's %g: want the sum of two devices", rows[1].PeakAllocMiB, rows[0].PeakAllocMiB)
	}
	t.Logf("%+v", rows)
}

// TestConcurrentFlag: the list of counts, with 1 added as the ratios' base.
func TestConcurrentFlag(t *testing.T) {
	for in, want := range map[string][]int{"1,4,8": {1, 4, 8}, "8,4": {1, 4, 8}, "2": {1, 2}, " 1 ": {1}} {
		if got, err := parseConcurrent(in); err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1", "a", "1,,2", "65"} {
		if _, err := parseConcurrent(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	var out, errw bytes.Buffer
	if code := run([]string{"-concurrent", "0"}, &out, &errw); code != 2 || !strings.Contains(errw.String(), "-concurrent \"0\"") {
		t.Errorf("-concurrent 0: exit %d, %q", code, errw.String())
	}
}

// TestPrecisions: -precision gives each setting once per precision, a setting's rows together;
// an unknown precision, and tf32 on the CPU, are refused.
func TestPrecisions(t *testing.T) {
	base, err := plan("zinc", "1,4", "false")
	if err != nil {
		t.Fatal(err)
	}
	got, err := withPrecisions(base, "fp32, tf32,fp32", "cuda")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got {
		names = append(names, fmt.Sprintf("%d/%s", s.R, s.Precision))
	}
	if want := "1/fp32 1/tf32 4/fp32 4/tf32"; strings.Join(names, " ") != want {
		t.Fatalf("settings %s, want %s", strings.Join(names, " "), want)
	}
	if _, err := withPrecisions(base, "fp32,fp16", "cuda"); err == nil || !strings.Contains(err.Error(), `"fp16" is no train.precision (want fp32, tf32, bf16`) {
		t.Errorf("fp16: %v", err)
	}
	if got, err := withPrecisions(base, "bf16", "emu"); err != nil || len(got) != 2 || got[0].Precision != "bf16" {
		t.Errorf("bf16: %v, %v", got, err)
	}
	for _, p := range []string{"tf32", "bf16"} {
		if _, err := withPrecisions(base, p, "cpu"); err == nil || !strings.Contains(err.Error(), "-precision "+p+" with -device cpu: the CPU trainer computes in float32 only") {
			t.Errorf("%s on the CPU: %v", p, err)
		}
	}
	var out, errw bytes.Buffer
	if code := run([]string{"-device", "cpu", "-precision", "tf32"}, &out, &errw); code != 2 || !strings.Contains(errw.String(), "-device cpu") {
		t.Errorf("gpubench -device cpu -precision tf32: status %d, %q", code, errw.String())
	}
}

// TestEmulatedPrecisions runs one tiny setting on the emulated GPU under fp32 and tf32: two
// JSON rows, each naming its precision.
func TestEmulatedPrecisions(t *testing.T) {
	if err := emu.Skip(); err != nil {
		t.Skip(err)
	}
	var out, errw bytes.Buffer
	args := []string{"-device", "emu", "-suite", "superpixel", "-r", "1", "-graphs", "3", "-distinct", "3", "-batch", "3", "-epochs", "1", "-precision", "fp32,tf32", "-json"}
	if code := run(args, &out, &errw); code != 0 {
		t.Fatalf("exit status %d: %s", code, errw.String())
	}
	var precs []string
	for _, row := range jsonLines[Row](t, out.String()) {
		if row.Error != "" || row.Graphs != 3 {
			t.Fatalf("row %+v", row)
		}
		precs = append(precs, row.Precision)
	}
	if strings.Join(precs, ",") != "fp32,tf32" {
		t.Fatalf("rows of precisions %v, want fp32 then tf32", precs)
	}
	if !strings.Contains(errw.String(), "train.precision tf32: matrix products on the TF32 tensor cores") {
		t.Errorf("log without the tf32 note:\n%s", errw.String())
	}
}

// jsonLines decodes the JSON lines of out, one T each.
func jsonLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var rows []T
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var row T
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%v in %q", err, line)
		}
		rows = append(rows, row)
	}
	return rows
}
