package gpu

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
)

// TestChoose checks the device selection for every setting against fake probers: a GPU that
// works, no GPU (the probe report of a machine without a driver), and a GPU that fails.
func TestChoose(t *testing.T) {
	noGPU := &cudalib.ProbeError{Lib: "libcuda", Reason: "no usable NVIDIA driver library", Attempts: []cudalib.Attempt{{Path: "/usr/lib/x86_64-linux-gnu/libcuda.so.1", Result: "not found"}}}
	broken := errors.New("cuda: NVRTC: no usable library")
	sim := emuBackend(t)
	probers := map[string]Prober{
		"works":  func() (Backend, error) { return sim, nil },
		"none":   func() (Backend, error) { return nil, noGPU },
		"broken": func() (Backend, error) { return nil, broken },
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
		{"gpu", "works", false, `device "gpu": want one of cpu, cuda, auto`, ""},
	}
	for _, c := range cases {
		probed := false
		probe := func() (Backend, error) { probed = true; return probers[c.probe]() }
		ch, err := Choose(c.device, probe)
		name := c.device + "/" + c.probe
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one containing %q", name, err, c.err)
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
