package runfiles

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestResultGPUOptions: a GPU run's options round-trip through result.json under "gpu"; a CPU
// run's result has no gpu key, and a result.json written before runs recorded them reads with
// GPU nil.
func TestResultGPUOptions(t *testing.T) {
	dir := t.TempDir()
	res := &Result{Name: "x", Dataset: "zinc", Model: "gatedgcn", R: 1, Seed: 41, Metric: MetricMAE, Epochs: 1, StoppedBy: StopMaxEpochs,
		Device: "emulated GPU", GPU: &GPUOptions{Precision: "bf16", EdgeFolds: "scatter,gate", BatchedProducts: true, NarrowGradW: true,
			KernelDefines: "RW_UNROLL=1", Arch: 70, Kernels: "compute_70"}}
	path := filepath.Join(dir, ResultFile)
	if err := WriteResult(path, res); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{`"gpu": {`, `"edge_folds": "scatter,gate"`, `"cuda_graphs": false`, `"arch": 70`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result.json lacks %s:\n%s", want, b)
		}
	}
	if got, err := ReadResult(path); err != nil || !reflect.DeepEqual(got, res) {
		t.Fatalf("read back %+v (%v), want %+v", got, err, res)
	}
	res.GPU = nil
	if err := WriteResult(path, res); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	if strings.Contains(string(b), `"gpu"`) {
		t.Errorf("a CPU run's result.json has a gpu key:\n%s", b)
	}
	old := `{"name": "x", "dataset": "zinc", "model": "gatedgcn", "encoding": "adj", "cls": false, "r": 1, "seed": 41, "metric": "mae",
"test_metric": 0.5, "val_metric": 0.5, "train_metric": 0.4, "epochs": 3, "seconds_per_epoch": 1, "total_seconds": 3,
"preprocess_seconds": 0, "train_graphs": 10, "params": 100, "device": "cpu (2 threads)", "stopped_by": "max_epochs", "final_lr": 0.001, "resumed": 0}`
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadResult(path); err != nil || got.GPU != nil {
		t.Fatalf("a result.json of before: %+v, %v", got, err)
	}
}
