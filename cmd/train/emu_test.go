package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/gpu"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// emuArgs train GatedGCN on 32 ZINC graphs per split (two batches of 16) for one epoch.
func emuArgs(t *testing.T, out string) []string {
	return []string{"-set", "dataset.name=zinc", "-data", testdata.Dir(t), "-set", "dataset.encoding=adj", "-set", "dataset.r=1",
		"-set", "train.batch_size=16", "-subset", "32", "-epochs", "1", "-seed", "41", "-cache", "off", "-quiet", "-out", out}
}

// TestEmuDevice trains one epoch of a tiny ZINC subset with -device emu (the emulated GPU: the
// CUDA kernels compiled by the system's C++ compiler and run on CPU threads) and checks that the
// run finishes and that its files record the device: result.json's device names the emulated GPU
// and its departures the device emu, as does the epoch's line in metrics.jsonl and config.yaml;
// the tables leave such a run out as a reduced one. Without a C++ compiler it skips, unless
// REWIREGNN_REQUIRE_EMU=1.
func TestEmuDevice(t *testing.T) {
	if err := emu.Skip(); err != nil {
		t.Skip(err)
	}
	out := t.TempDir()
	args := append(emuArgs(t, out), "-device", "emu")
	stderr := wantRun(t, 0, []string{"device emu: emulated GPU"}, args...)
	dir := filepath.Join(out, "zinc-gatedgcn-adj-r1", "seed41")
	res, err := runfiles.ReadResult(filepath.Join(dir, runfiles.ResultFile))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	emuDep := runfiles.Departure{Key: runfiles.DeviceKey, Protocol: "cpu", Used: "emu"}
	if !res.Emulated() || !slices.Contains(res.Departures, emuDep) || res.Epochs != 1 || res.StoppedBy != runfiles.StopMaxEpochs {
		t.Fatalf("result.json: device %q, departures %+v, %d epochs, stopped by %s; want the emulated GPU, %+v, 1 epoch, max_epochs",
			res.Device, res.Departures, res.Epochs, res.StoppedBy, emuDep)
	}
	if res.Provenance() != runfiles.Reduced || !strings.Contains(res.BudgetNote(), "emulated GPU") {
		t.Errorf("the tables would count the emulated run as the protocol's: provenance %d, note %q", res.Provenance(), res.BudgetNote())
	}
	eps, err := runfiles.ReadMetrics(filepath.Join(dir, runfiles.MetricsFile))
	if err != nil || len(eps) != 1 || !slices.Contains(eps[0].Departures, emuDep) {
		t.Fatalf("metrics.jsonl: %+v, %v; want one epoch with the departure %+v", eps, err, emuDep)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, runfiles.ConfigFile))
	if err != nil || !strings.Contains(string(cfg), "\ndevice: emu") {
		t.Fatalf("config.yaml does not say device: emu (%v):\n%s", err, cfg)
	}
	t.Logf("%s: %.2f s per epoch on the emulated GPU\n%s", res.Device, res.SecondsPerEpoch, stderr)
}

// TestEmuWithoutCompiler: -device emu without a C++ compiler fails before any data is loaded,
// naming what is missing and how to get it; auto never turns to the emulated GPU.
func TestEmuWithoutCompiler(t *testing.T) {
	t.Setenv("CXX", "no-such-c++-compiler")
	out := t.TempDir()
	wantRun(t, 1, []string{"device emu:", "no C++ compiler", "no-such-c++-compiler", "apt-get install g++", "CXX=PATH", "-device cpu"},
		"-set", "dataset.name=neighborsmatch-2", "-device", "emu", "-epochs", "1", "-quiet", "-out", out)
	if ents, _ := os.ReadDir(out); len(ents) > 0 {
		t.Errorf("the refused run wrote %s", ents[0].Name())
	}
}

// TestDeviceFlagValues: a bad -device names every choice; the trainer's and the config's lists
// agree; -plan takes -device emu (the GPU column is the emulated GPU's plan too).
func TestDeviceFlagValues(t *testing.T) {
	if !slices.Equal(config.Devices, gpu.Devices) || !slices.Contains(gpu.Devices, "emu") {
		t.Fatalf("config.Devices %v, gpu.Devices %v: want the same list, with emu", config.Devices, gpu.Devices)
	}
	wantRun(t, 1, []string{`unknown device "gpu"`, "cpu, cuda, emu or auto"},
		"-set", "dataset.name=neighborsmatch-2", "-device", "gpu", "-out", t.TempDir())
	wantRun(t, 0, nil, "-plan", "-budget", "1GiB", "-device", "emu", "-set", "dataset.name=neighborsmatch-2", "-out", t.TempDir())
}
