package gpu

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
)

// Devices are the values of the trainer's -device flag (config key device).
var Devices = []string{"cpu", "cuda", "auto"}

// Prober opens the GPU to train on, or says why it cannot: where no driver or GPU exists the
// error satisfies cudalib.ErrNoDevice and names every place probed.
type Prober func() (Backend, error)

// ProbeCUDA opens GPU 0 and compiles its kernels (OpenCUDA).
func ProbeCUDA() (Backend, error) { return OpenCUDA(0) }

// Choice is the device a run trains on.
type Choice struct {
	Backend Backend // nil: the CPU
	Note    string  // one line for the run's log: what was chosen and, for auto, why
}

// Choose resolves a device setting: "cpu" trains on the CPU without probing; "cuda" needs a
// working GPU, and its error says what was probed or what failed on the GPU found; "auto" takes
// the GPU when one works and the CPU otherwise, saying why in Note.
func Choose(device string, probe Prober) (Choice, error) {
	switch device {
	case "cpu":
		return Choice{Note: "device cpu"}, nil
	case "cuda", "auto":
	default:
		return Choice{}, fmt.Errorf("device %q: want one of %s", device, strings.Join(Devices, ", "))
	}
	b, err := probe()
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
