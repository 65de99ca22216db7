package archtest

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/rewiregnn/rewiregnn/"

// deps returns every package pkg (a path inside the module, e.g. "cmd/tables") reaches through
// non-test imports: the module's packages by their path inside it (true), others by import
// path (false).
func deps(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func(p string)
	walk = func(p string) {
		bp, err := build.ImportDir(filepath.Join(root, p), 0)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, imp := range bp.Imports {
			name, inModule := strings.CutPrefix(imp, module)
			if _, ok := seen[name]; ok {
				continue
			}
			seen[name] = inModule
			if inModule {
				walk(name)
			}
		}
	}
	walk(pkg)
	return seen
}

// rule forbids every package of pkgs to depend, directly or not, on any of forbidden.
type rule struct {
	pkgs, forbidden []string
}

// violations lists "p depends on f" for every rule broken.
func violations(t *testing.T, rules []rule) []string {
	t.Helper()
	var out []string
	for _, r := range rules {
		for _, p := range r.pkgs {
			d := deps(t, p)
			for _, f := range r.forbidden {
				if _, ok := d[f]; ok {
					out = append(out, p+" depends on "+f)
				}
			}
		}
	}
	return out
}

// TestLayers checks the dependency rules: readers of run files and results never link the
// training stack, Gorgonia or the CUDA binding; the data stages never import later stages; the
// model packages and the preprocessing packages never import each other (both read data's
// types); the CPU kernels know nothing of Gorgonia; the dispatcher knows no backend; the parts of
// a run below the loop (rundir, runlog, memplan) never reach it, and the first two link no
// Gorgonia; the run-files, TensorBoard-events and metric packages and the
// program (prog, which the executors run and which knows no Gorgonia) are leaves.
func TestLayers(t *testing.T) {
	training := []string{"train", "nn", "ops", "cpuexec", "dispatch", "kern", "prog", "lower", "gpu", "gpuexec", "cuda", "cuda/cudalib", "cuda/emu",
		"cuda/kernels", "models", "gorgonia.org/gorgonia", "gorgonia.org/tensor", "github.com/ebitengine/purego"}
	later := []string{"prep", "train", "nn", "ops", "cpuexec", "models", "gpu", "cuda", "sweep", "report"}
	modelSide := append([]string{"kern", "ops", "prog", "lower", "dispatch", "cpuexec", "nn", "models"}, modelPackages(t)...)
	preprocessing := []string{"posenc", "rewire", "prep", "hops"}
	rules := []rule{
		{[]string{"cmd/tables", "cmd/sweep", "sweep", "report", "report/results", "report/paper", "runfiles", "tfevents", "homophily", "metric"}, training},
		{[]string{"data", "posenc", "rewire"}, later},
		{[]string{"prep", "hops"}, later[1:]},
		{modelSide, preprocessing},
		{preprocessing, modelSide},
		{[]string{"kern"}, []string{"gorgonia.org/gorgonia", "gorgonia.org/tensor", "ops", "cpuexec", "nn"}},
		{[]string{"ops"}, []string{"cpuexec", "nn", "models", "train", "gpu", "cuda", "lower"}},
		// The lowering reads the front end's graph and writes programs; the executors run
		// programs and never see the front end.
		{[]string{"lower"}, []string{"cpuexec", "nn", "models", "train", "gpu", "cuda"}},
		{[]string{"gpuexec"}, []string{"gorgonia.org/gorgonia", "gorgonia.org/tensor", "ops", "cpuexec", "nn", "lower", "models", "train", "gpu"}},
		{[]string{"cpuexec"}, []string{"gorgonia.org/gorgonia", "gorgonia.org/tensor", "ops", "gpuexec", "nn", "lower", "models", "train", "gpu", "cuda"}},
		// the dispatcher reads programs and calls a backend's kernels: it knows neither
		// backend, nor the front end
		{[]string{"dispatch"}, []string{"gorgonia.org/gorgonia", "gorgonia.org/tensor", "kern", "ops", "cpuexec", "gpuexec", "nn", "lower", "models", "train", "gpu", "cuda"}},
		{[]string{"cuda/cudalib"}, []string{"cuda", "cuda/emu", "cuda/kernels", "gpu"}},
		// a model package builds a network from nn and ops and reads its config; it never
		// reaches the registry above it, another model, the trainer or a device
		{modelPackages(t), append([]string{"models", "train", "gpu", "cuda"}, modelPackages(t)...)},
		// the parts of a run below the protocol loop (train): the run directory and its lock
		// (rundir) and the run's logs (runlog) read and write run files and link none of the
		// training stack; the memory estimate (memplan) builds nets on the CPU front end (nn)
		// but reaches no device, no model registry, no run directory and not the loop
		{[]string{"rundir", "runlog"}, training},
		{[]string{"memplan"}, []string{"train", "gpu", "gpuexec", "cuda", "cuda/cudalib", "models", "rundir", "runlog", "github.com/ebitengine/purego"}},
	}
	for _, v := range violations(t, rules) {
		t.Error(v)
	}
	for _, leaf := range []string{"runfiles", "tfevents", "metric", "prog", "gpuopt"} {
		for p, inModule := range deps(t, leaf) {
			if inModule || strings.Contains(p, ".") {
				t.Errorf("%s imports %s: it must stay a leaf on the standard library", leaf, p)
			}
		}
	}
}

// modelPackages are the model packages: every folder under models/ holding Go files.
func modelPackages(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("../../models")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if gos, _ := filepath.Glob(filepath.Join("../../models", e.Name(), "*.go")); e.IsDir() && len(gos) > 0 {
			out = append(out, "models/"+e.Name())
		}
	}
	if len(out) < 3 {
		t.Fatalf("model packages %v", out)
	}
	return out
}

// TestViolationsReported checks that a broken rule is reported, direct and indirect
// dependencies alike: the trainer reaches the model and preprocessing packages.
func TestViolationsReported(t *testing.T) {
	got := violations(t, []rule{{[]string{"cmd/train"}, []string{"train", "posenc", "kern", "report"}}})
	want := []string{"cmd/train depends on train", "cmd/train depends on posenc", "cmd/train depends on kern"}
	if !slices.Equal(got, want) {
		t.Errorf("violations = %q, want %q", got, want)
	}
}

// TestLayersSeeImports checks the walk itself on a package known to reach the forbidden ones.
func TestLayersSeeImports(t *testing.T) {
	d := deps(t, "cmd/train")
	for _, want := range []string{"train", "nn", "ops", "kern", "cuda", "gorgonia.org/gorgonia", "github.com/ebitengine/purego"} {
		if _, ok := d[want]; !ok {
			t.Errorf("cmd/train's dependencies lack %s", want)
		}
	}
}
