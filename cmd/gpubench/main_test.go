package main

import (
	"bytes"
	"encoding/json"
	"github.com/rewiregnn/rewiregnn/gpuexec"
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
