package gpu

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/gpuexec"
	"github.com/rewiregnn/rewiregnn/gpuopt"

	"github.com/rewiregnn/rewiregnn/cuda"
	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
	"github.com/rewiregnn/rewiregnn/cuda/emu"
)

// TestChoose checks the device selection for every setting against fake probers: a GPU (or
// emulator) that works, no GPU (the probe report of a machine without a driver), a GPU that
// fails, and an emulator without a C++ compiler. auto never opens the emulated GPU.
func TestChoose(t *testing.T) {
	noGPU := &cudalib.ProbeError{Lib: "libcuda", Reason: "no usable NVIDIA driver library", Attempts: []cudalib.Attempt{{Path: "/usr/lib/x86_64-linux-gnu/libcuda.so.1", Result: "not found"}}}
	broken := errors.New("cuda: NVRTC: no usable library")
	noCXX := fmt.Errorf("cuda: emulator: %w: tried g++, c++, clang++ on PATH (install g++, or set CXX)", emu.ErrNoCompiler)
	sim := emuBackend(t)
	probers := map[string]Prober{
		"works":  func(gpuopt.Options) (gpuexec.Backend, error) { return sim, nil },
		"none":   func(gpuopt.Options) (gpuexec.Backend, error) { return nil, noGPU },
		"broken": func(gpuopt.Options) (gpuexec.Backend, error) { return nil, broken },
		"nocxx":  func(gpuopt.Options) (gpuexec.Backend, error) { return nil, noCXX },
	}
	cases := []struct {
		device, probe string
		gpu           bool
		err, note     string // substrings; err "" means no error
	}{
		{"cpu", "works", false, "", "device cpu"},
		{"cpu", "none", false, "", "device cpu"},
		{"cuda", "works", true, "", "device cuda: emulated GPU"},
		{"cuda", "none", false, "no usable GPU", ""},
		{"cuda", "broken", false, "the GPU does not work: cuda: NVRTC", ""},
		{"auto", "works", true, "", "device auto: emulated GPU"},
		{"auto", "none", false, "", "device auto: no usable GPU (libcuda: no usable NVIDIA driver library, 1 place probed, listed by go run ./cmd/gpuinfo); training on the CPU"},
		{"auto", "broken", false, "", "device auto: the GPU does not work (cuda: NVRTC: no usable library); training on the CPU"},
		{"emu", "works", true, "", "device emu: emulated GPU"},
		{"emu", "nocxx", false, "device emu: the emulated GPU compiles the CUDA kernels as C++ on first use and needs Linux and a C++17 compiler (g++ or clang++): cuda: emulator: no C++ compiler: tried g++", ""},
		{"emu", "broken", false, "device emu: the emulated GPU does not work: cuda: NVRTC", ""},
		{"gpu", "works", false, `device "gpu": want one of cpu, cuda, emu, auto`, ""},
	}
	for _, c := range cases {
		probed, emulated := false, false
		probe, emulate := Prober(func(gpuopt.Options) (gpuexec.Backend, error) { return nil, noGPU }), Prober(func(gpuopt.Options) (gpuexec.Backend, error) { return nil, noCXX })
		if c.device == "emu" {
			emulate = func(gpuopt.Options) (gpuexec.Backend, error) {
				emulated = true
				return probers[c.probe](gpuopt.Default())
			}
		} else {
			probe = func(gpuopt.Options) (gpuexec.Backend, error) {
				probed = true
				return probers[c.probe](gpuopt.Default())
			}
			emulate = func(gpuopt.Options) (gpuexec.Backend, error) { emulated = true; return sim, nil }
		}
		ch, err := Choose(c.device, gpuopt.Default(), probe, emulate)
		name := c.device + "/" + c.probe
		if emulated != (c.device == "emu") {
			t.Errorf("%s: opened the emulated GPU: %t", name, emulated)
		}
		if c.device == "emu" && probed {
			t.Errorf("%s: the emu setting probed for a GPU", name)
		}
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one containing %q", name, err, c.err)
			}
			if c.probe == "nocxx" && (!errors.Is(err, emu.ErrNoCompiler) || !strings.Contains(err.Error(), "apt-get install g++") || !strings.Contains(err.Error(), "-device cpu")) {
				t.Errorf("%s: the error does not wrap emu.ErrNoCompiler or say how to get a compiler: %v", name, err)
			}
			if c.probe == "none" && !strings.Contains(err.Error(), "/usr/lib/x86_64-linux-gnu/libcuda.so.1: not found") {
				t.Errorf("%s: the error does not list the places probed: %v", name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if (ch.Backend != nil) != c.gpu || !strings.Contains(ch.Note, c.note) {
			t.Errorf("%s: backend %v, note %q; want GPU %t, note containing %q", name, ch.Backend, ch.Note, c.gpu, c.note)
		}
		if c.device == "emu" && !strings.Contains(ch.Note, "slow") {
			t.Errorf("%s: the note does not say the emulated GPU is slow: %q", name, ch.Note)
		}
		if c.device == "cpu" && probed {
			t.Errorf("%s: the CPU setting probed for a GPU", name)
		}
	}
}

// TestOneLineIsWhole: the auto fallback's reason is one whole sentence, never a first line
// ending in a colon.
func TestOneLineIsWhole(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&cudalib.ProbeError{Lib: "NVRTC", Reason: "no usable library", Attempts: make([]cudalib.Attempt, 3)},
			"NVRTC: no usable library, 3 places probed, listed by go run ./cmd/gpuinfo"},
		{&cudalib.ProbeError{Lib: "cuBLAS", Reason: "not found"}, "cuBLAS: not found, nothing probed"},
		{fmt.Errorf("opening GPU 0: %w", &cudalib.ProbeError{Lib: "libcuda", Reason: "no driver", Attempts: make([]cudalib.Attempt, 1)}),
			"libcuda: no driver, 1 place probed, listed by go run ./cmd/gpuinfo"},
		{errors.New("kernels failed:\n  relu.cu: error"), "kernels failed; go run ./cmd/gpuinfo for the details"},
		{errors.New("out of memory"), "out of memory"},
	} {
		if got := oneLine(c.err); got != c.want {
			t.Errorf("oneLine(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestSetPrecision: fp32 leaves any device alone; tf32 and bf16 are refused on the CPU (naming
// the key and the device); tf32 is refused by a backend without a math mode and switches the
// (emulated) GPU's products to TF32; bf16 leaves the products in float32 and lays programs out
// with bf16 storage (NewTrainerWith); Choose refuses bf16 on the CPU; an unknown precision is
// refused.
func TestSetPrecision(t *testing.T) {
	for _, note := range []string{"device cpu", "device auto: no usable GPU (…); training on the CPU"} {
		cpu := Choice{Note: note}
		if n, err := cpu.setPrecision("fp32"); err != nil || n != "" {
			t.Errorf("fp32 on %q: %q, %v", note, n, err)
		}
		for _, p := range []gpuopt.Precision{"tf32", "bf16"} {
			_, err := cpu.setPrecision(p)
			if err == nil || !strings.Contains(err.Error(), "train.precision "+string(p)+": the run would train on the CPU ("+note+"), which computes and stores in float32 only") {
				t.Errorf("%s on %q: %v", p, note, err)
			}
		}
	}
	if _, err := (Choice{}).setPrecision("fp16"); err == nil || !strings.Contains(err.Error(), `train.precision "fp16": want one of fp32, tf32, bf16`) {
		t.Errorf("fp16: %v", err)
	}
	bf16 := gpuopt.Default()
	bf16.Precision = gpuopt.BF16
	if _, err := Choose("cpu", bf16, nil, nil); err == nil || !strings.Contains(err.Error(), "train.precision bf16: the run would train on the CPU") {
		t.Errorf("Choose cpu in bf16: %v", err)
	}
	if n, err := SetBackendPrecision(fakeBackend{}, "bf16"); err != nil || !strings.Contains(n, "stored in bf16") {
		t.Errorf("bf16 on a backend without a math mode: %q, %v", n, err)
	}
	if _, err := SetBackendPrecision(fakeBackend{}, "tf32"); err == nil || !strings.Contains(err.Error(), "cannot change the precision") {
		t.Errorf("tf32 on a backend without a math mode: %v", err)
	}
	sim := emuBackend(t)
	ch := Choice{Backend: sim, Note: "device emu"}
	if n, err := ch.setPrecision("tf32"); err != nil || !strings.Contains(n, "TF32 tensor cores") || sim.Dev.MathMode() != cuda.MathTF32 {
		t.Fatalf("tf32 on the emulated GPU: note %q, %v, mode %v", n, err, sim.Dev.MathMode())
	}
	if n, err := ch.setPrecision("bf16"); err != nil || !strings.Contains(n, "stored in bf16") || sim.Dev.MathMode() != cuda.MathFP32 {
		t.Fatalf("bf16 on the emulated GPU: note %q, %v, mode %v", n, err, sim.Dev.MathMode())
	}
	if _, err := SetBackendPrecision(sim, "tf32"); err != nil {
		t.Fatal(err)
	}
	if _, err := SetBackendPrecision(sim, "fp32"); err != nil || sim.Dev.MathMode() != cuda.MathFP32 {
		t.Fatalf("back to fp32: %v, mode %v", err, sim.Dev.MathMode())
	}
}

// fakeBackend is a backend that is no GPU (only its String is called).
type fakeBackend struct{ gpuexec.Backend }

func (fakeBackend) String() string { return "a fake backend" }
