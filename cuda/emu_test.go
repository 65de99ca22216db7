package cuda

// Tests of the op tests on the emulated GPU: their launch coverage (TestMain) and four
// deliberately broken kernels that they must catch.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/cuda/emu"
	"github.com/rewiregnn/rewiregnn/cuda/kernels"
)

// EnvMutant names a mutant of emuMutants for the op tests' emulated GPU (set by
// TestEmuCatchesBrokenKernels for the test process it starts).
const envMutant = "REWIREGNN_EMU_MUTANT"

// mutant is a kernel broken on purpose: in file, old (which must occur once) becomes new. test
// is the op test that must fail on it, and evidence a string its output must contain.
type mutant struct {
	file, old, new string
	test, evidence string
	tsan           bool // the bug is a data race: run the test under ThreadSanitizer
}

var emuMutants = map[string]mutant{
	// An off-by-one index: every element written one place further on, the last past the end
	// of the output (the guard page after the buffer) and the first never (NaN).
	"off-by-one": {file: "gather.cu", old: "out[e] = v;", new: "out[e + 1] = v;",
		test: "TestGPUGatherScatter", evidence: "just past the end of the"},
	// A missing barrier: the column reduction reads the other rows' partial sums before they
	// are all written.
	"missing-barrier": {file: "common.cuh",
		old:  "sh[threadIdx.y][threadIdx.x] = v;\n  __syncthreads();",
		new:  "sh[threadIdx.y][threadIdx.x] = v;",
		test: "TestGPUBatchNorm", evidence: "--- FAIL: TestGPUBatchNorm"},
	// A column reduction whose last block does not reset its tile's arrival counter: the next
	// launch of a chunked reduction never finds its last block and writes no output.
	"no-reset": {file: "common.cuh", old: "if (*flag) count[blockIdx.x] = 0;", new: "",
		test: "TestGPUColReduceChunkOrder", evidence: "col_sum launch 2: column sum"},
	// A plain add where an atomic one is needed: GatedGCN's gate sums, updated by many edges
	// of the same destination at once.
	"plain-add": {file: "gate.cuh", old: "atomicAdd(&den[(long long)t * d + c], g);", new: "den[(long long)t * d + c] += g;",
		test: "TestGPUGatedAggregate", evidence: "ThreadSanitizer: data race", tsan: true},
}

// mutated returns the kernel sources and headers with mutant name applied.
func mutated(name string) ([]kernels.Source, map[string]string, error) {
	m, ok := emuMutants[name]
	if !ok {
		return nil, nil, fmt.Errorf("no mutant %q", name)
	}
	srcs, hdrs := kernels.Sources(), kernels.Headers()
	patch := func(code string) (string, error) {
		if n := strings.Count(code, m.old); n != 1 {
			return "", fmt.Errorf("mutant %s: %q occurs %d times in %s, want once", name, m.old, n, m.file)
		}
		return strings.Replace(code, m.old, m.new, 1), nil
	}
	var err error
	if h, ok := hdrs[m.file]; ok {
		hdrs[m.file], err = patch(h)
		return srcs, hdrs, err
	}
	for i := range srcs {
		if srcs[i].Name == m.file {
			srcs[i].Code, err = patch(srcs[i].Code)
			return srcs, hdrs, err
		}
	}
	return nil, nil, fmt.Errorf("mutant %s: no kernel file %s", name, m.file)
}

// emuTestOptions are the options of the op tests' emulated GPU: a mutant's sources where
// $REWIREGNN_EMU_MUTANT names one.
func emuTestOptions() (emu.Options, error) {
	var o emu.Options
	if name := os.Getenv(envMutant); name != "" {
		var err error
		if o.Sources, o.Headers, err = mutated(name); err != nil {
			return o, err
		}
		o.TSan = emuMutants[name].tsan
	}
	return o, nil
}

// needCompiler skips a test where the emulator cannot be built (unless it is required).
func needCompiler(t *testing.T) {
	t.Helper()
	if err := emu.Skip(); err != nil {
		t.Skip(err)
	}
}

// TestEmuCatchesBrokenKernels runs, for each mutant, the op test that covers it in a new test
// process on the mutated emulated GPU, and checks that it fails for the right reason.
func TestEmuCatchesBrokenKernels(t *testing.T) {
	needCompiler(t)
	if testing.Short() {
		t.Skip("builds four mutated emulators: skipped with -short")
	}
	names := make([]string, 0, len(emuMutants))
	for n := range emuMutants {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		m := emuMutants[name]
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^"+m.test+"$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), envMutant+"="+name, EnvTestDevice+"=emu", emu.EnvRequire+"=1", EnvRequireGPU+"=0")
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("%s on mutant %s: %v, want a failing test\n%s", m.test, name, err, out)
			}
			if !strings.Contains(string(out), m.evidence) {
				t.Fatalf("%s failed on mutant %s, but its output lacks %q:\n%s", m.test, name, m.evidence, out)
			}
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, m.evidence) {
					t.Logf("caught: %s", strings.TrimSpace(line))
					break
				}
			}
		})
	}
}
