package gpu

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rewiregnn/rewiregnn/cuda"
	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/gpuexec"
	"github.com/rewiregnn/rewiregnn/gpuopt"
)

// Devices are the values of the trainer's -device flag (config key device; config.Devices
// holds the same list): cpu, cuda (GPU 0), emu (the emulated GPU: the real kernels on CPU
// threads, slow, for checking the GPU path without a GPU) and auto (the GPU when one works,
// else the CPU; never the emulated GPU).
var Devices = []string{"cpu", "cuda", "emu", "auto"}

// Prober opens the GPU to train on with the run's GPU options, or says why it cannot: where no
// driver or GPU exists the error satisfies cudalib.ErrNoDevice and names every place probed.
type Prober func(gpuopt.Options) (gpuexec.Backend, error)

// ProbeCUDA opens GPU 0 with the options o and compiles its kernels (OpenCUDAWith).
func ProbeCUDA(o gpuopt.Options) (gpuexec.Backend, error) { return gpuexec.OpenCUDAWith(0, o) }

// EmulatedOptions are the emulated GPU's options for a training run (-device emu): the
// deterministic schedule, whose threads of a block run one at a time in index order as fibers
// on one OS thread, so that float atomics add in a fixed order and the same command gives the
// same bits (and a resumed run continues exactly, as on the CPU). The all-at-once schedule is
// for exposing races (the cuda tests, REWIREGNN_EMU_TSAN=1), not for training.
var EmulatedOptions = emu.Options{Deterministic: true}

// ProbeEmulated builds (or takes from the kernel cache) the emulated GPU and opens it with
// EmulatedOptions and the run's options o. Without a C++ compiler, or off Linux, the error
// wraps emu.ErrNoCompiler.
func ProbeEmulated(o gpuopt.Options) (gpuexec.Backend, error) {
	return gpuexec.OpenEmulatedWith(EmulatedOptions, o)
}

// Choice is the device a run trains on.
type Choice struct {
	Backend gpuexec.Backend // nil: the CPU
	Note    string          // one line for the run's log: what was chosen and, for auto, why
	// Options are the run's GPU options the device was opened and set with, for the trainer
	// (NewTrainerWith) and the run's record; the defaults but for the precision on the CPU.
	Options gpuopt.Options
	// PrecisionNote says what train.precision does on the device ("" for fp32 and the CPU).
	PrecisionNote string
}

// Choose is the one entrance of the run's GPU options (train.precision and the gpu section,
// typed: gpuopt.Options) to the device. It resolves a device setting: "cpu" trains on the CPU
// without probing; "cuda" needs a working GPU (probe), and its error says what was probed or
// what failed on the GPU found; "emu" opens the emulated GPU (emulate), and its error says what
// is missing (a C++ compiler) and how to get it; "auto" takes the GPU when one works and the
// CPU otherwise, saying why in Note; it never takes the emulated GPU. The device is opened with
// o and its precision set (SetBackendPrecision); a precision the CPU lacks is refused there,
// naming the key and the device.
func Choose(device string, o gpuopt.Options, probe, emulate Prober) (Choice, error) {
	ch, err := chooseDevice(device, o, probe, emulate)
	if err != nil {
		return Choice{}, err
	}
	ch.Options = o
	if ch.PrecisionNote, err = ch.setPrecision(o.Precision); err != nil {
		if c, ok := ch.Backend.(interface{ Close() error }); ok {
			_ = c.Close()
		}
		return Choice{}, err
	}
	return ch, nil
}

// chooseDevice opens the device of a device setting (Choose).
func chooseDevice(device string, o gpuopt.Options, probe, emulate Prober) (Choice, error) {
	switch device {
	case "cpu":
		return Choice{Note: "device cpu"}, nil
	case "emu":
		return chooseEmulated(o, emulate)
	case "cuda", "auto":
	default:
		return Choice{}, fmt.Errorf("device %q: want one of %s", device, strings.Join(Devices, ", "))
	}
	b, err := probe(o)
	if err == nil && b == nil {
		err = fmt.Errorf("the GPU probe returned no device")
	}
	if err != nil {
		if device == "cuda" {
			if cudalib.ErrNoDevice(err) {
				return Choice{}, fmt.Errorf("device cuda: no usable GPU (run go run ./cmd/gpuinfo for details, or use -device cpu or auto): %w", err)
			}
			return Choice{}, fmt.Errorf("device cuda: the GPU does not work: %w", err)
		}
		what := "no usable GPU"
		if !cudalib.ErrNoDevice(err) {
			what = "the GPU does not work"
		}
		return Choice{Note: fmt.Sprintf("device auto: %s (%s); training on the CPU", what, oneLine(err))}, nil
	}
	return Choice{Backend: b, Note: fmt.Sprintf("device %s: %v", device, b)}, nil
}

// chooseEmulated opens the emulated GPU for device emu.
func chooseEmulated(o gpuopt.Options, emulate Prober) (Choice, error) {
	if emulate == nil {
		return Choice{}, fmt.Errorf("device emu: this program cannot open the emulated GPU; use -device cpu")
	}
	b, err := emulate(o)
	if err == nil && b == nil {
		err = fmt.Errorf("the emulator returned no device")
	}
	switch {
	case errors.Is(err, emu.ErrNoCompiler):
		return Choice{}, fmt.Errorf("device emu: the emulated GPU compiles the CUDA kernels as C++ on first use and needs "+
			"Linux and a C++17 compiler (g++ or clang++): %w; install one (Debian or Ubuntu: apt-get install g++), "+
			"or name it with CXX=PATH, or train with -device cpu", err)
	case err != nil:
		return Choice{}, fmt.Errorf("device emu: the emulated GPU does not work: %w", err)
	}
	return Choice{Backend: b, Note: fmt.Sprintf("device emu: %v (slow: it checks the GPU path, its timings are no GPU's)", b)}, nil
}

// oneLine is a probe error in one whole sentence for the log: a ProbeError's library and
// reason with the number of places probed (the list is cmd/gpuinfo's), or an error's first
// line, marked as cut when more lines follow.
func oneLine(err error) string {
	var pe *cudalib.ProbeError
	if errors.As(err, &pe) {
		if len(pe.Attempts) == 0 {
			return fmt.Sprintf("%s: %s, nothing probed", pe.Lib, pe.Reason)
		}
		places := "places"
		if len(pe.Attempts) == 1 {
			places = "place"
		}
		return fmt.Sprintf("%s: %s, %d %s probed, listed by go run ./cmd/gpuinfo", pe.Lib, pe.Reason, len(pe.Attempts), places)
	}
	first, rest, cut := strings.Cut(err.Error(), "\n")
	first = strings.TrimRight(first, ": ")
	if cut && strings.TrimSpace(rest) != "" {
		first += "; go run ./cmd/gpuinfo for the details"
	}
	return first
}

// MathMode is the device math mode of a precision (the registry's TF32Products; bf16 changes
// storage, not the products: float32).
func MathMode(p gpuopt.Precision) cuda.MathMode {
	if p.Info().TF32Products {
		return cuda.MathTF32
	}
	return cuda.MathFP32
}

// setPrecision applies train.precision to the chosen device before anything runs on it. fp32
// leaves the device as it was opened (float32 products: nothing is called). tf32 switches its
// cuBLAS products to TF32 (cuda.MathTF32); the project's own kernels stay float32. bf16 leaves
// the products in float32; its storage is the trainer's (gpuexec.CompileWith). The CPU (device
// cpu, or auto without a GPU) computes and stores in float32 only (the registry's CPU), so tf32
// and bf16 are refused there, naming the key and the device. note is a line for the run's log
// ("" for fp32).
func (c Choice) setPrecision(p gpuopt.Precision) (note string, err error) {
	info, err := gpuopt.ParsePrecision(string(p))
	if err != nil {
		return "", fmt.Errorf("train.precision %w", err)
	}
	if p == gpuopt.FP32 {
		return "", nil
	}
	if c.Backend == nil {
		if info.CPU {
			return "", nil
		}
		return "", fmt.Errorf("train.precision %s: the run would train on the CPU (%s), which computes and stores in float32 only: "+
			"%s needs a GPU (-device cuda, or emu to check it on the emulated GPU); or set train.precision=fp32", p, c.Note, p)
	}
	return SetBackendPrecision(c.Backend, p)
}

// SetBackendPrecision sets the math mode of a device backend (a GPU or the emulated GPU) for
// train.precision, as Choose does; note says what the mode does on that device. For bf16 the
// trainer must also lay its programs out with the same options (NewTrainerWith).
func SetBackendPrecision(b gpuexec.Backend, p gpuopt.Precision) (note string, err error) {
	if _, err := gpuopt.ParsePrecision(string(p)); err != nil {
		return "", fmt.Errorf("train.precision %w", err)
	}
	mode := MathMode(p)
	cu, ok := b.(*gpuexec.CUDA)
	switch {
	case ok:
		if err := cu.Dev.SetMathMode(mode); err != nil {
			return "", fmt.Errorf("train.precision %s: %w", p, err)
		}
	case mode != cuda.MathFP32:
		return "", fmt.Errorf("train.precision %s: %v cannot change the precision of its matrix products", p, b)
	}
	switch {
	case p.Info().BF16EdgeSums:
		return "train.precision bf16: GatedGCN's edge sums ê stored in bf16 (rounded to nearest even, 8 significant bits) and read back as float32; float32 arithmetic and matrix products", nil
	case !ok:
		return "", nil // every backend computes float32 products
	case mode == cuda.MathFP32:
		return "train.precision fp32: float32 matrix products", nil
	case !cu.Dev.TF32():
		return fmt.Sprintf("train.precision tf32: %v has no TF32 tensor cores (compute capability below 8.0): cuBLAS computes its products in float32", cu.Dev), nil
	}
	return "train.precision tf32: matrix products on the TF32 tensor cores (inputs rounded to 10 mantissa bits, float32 sums); the other kernels in float32", nil
}
