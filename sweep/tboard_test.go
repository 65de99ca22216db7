package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/internal/tfread"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// TestWriteExperiment: the experiment summary of a grid that varies dataset.r and dataset.cls
// names those two hparams with the values they take, and the final figures of the finished
// results as metrics (no val figure for a run without a validation split; none of a diverged
// run); read back with tfread at the top of the out folder. With no key varied, it names every
// config.HParamKeys key.
func TestWriteExperiment(t *testing.T) {
	out := t.TempDir()
	var runs []*config.Run
	for _, s := range [][]string{{"dataset.r=1", "dataset.cls=false"}, {"dataset.r=2", "dataset.cls=false"}, {"dataset.r=2", "dataset.cls=true"}} {
		c, err := config.Load("", append([]string{"dataset.name=zinc", "train.seeds=41"}, s...))
		if err != nil {
			t.Fatal(err)
		}
		c.Name = fmt.Sprintf("zinc-%d", len(runs))
		runs = append(runs, c)
	}
	p, err := NewPlan("g", "", runs, out, "")
	if err != nil {
		t.Fatal(err)
	}
	results := []string{
		`{"name":"zinc-0","dataset":"zinc","model":"gatedgcn","r":1,"seed":41,"metric":"mae","epochs":3,"stopped_by":"min_lr","val_split":"none"}`,
		`{"name":"zinc-1","dataset":"zinc","model":"gatedgcn","r":2,"seed":41,"metric":"accuracy","epochs":3,"stopped_by":"min_lr"}`,
		`{"name":"zinc-2","dataset":"zinc","model":"gatedgcn","r":2,"seed":41,"metric":"weighted_accuracy","epochs":3,"stopped_by":"nan"}`,
	}
	for i, j := range p.Jobs {
		os.MkdirAll(j.Dir, 0o755)
		if err := os.WriteFile(filepath.Join(j.Dir, runfiles.ResultFile), []byte(results[i]), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteExperiment(out, "g", p.Jobs, time.Unix(1700000000, 0)); err != nil {
		t.Fatal(err)
	}
	x := readExperiment(t, out)
	if !reflect.DeepEqual(x.Domains, map[string][]any{"dataset.r": {1.0, 2.0}, "dataset.cls": {false, true}}) {
		t.Errorf("domains %v", x.Domains)
	}
	if want := []string{"final/test_mae", "final/train_mae", "final/test_accuracy", "final/val_accuracy", "final/train_accuracy"}; !reflect.DeepEqual(x.Metrics, want) {
		t.Errorf("metrics %v, want %v", x.Metrics, want)
	}

	if err := WriteExperiment(out, "g", p.Jobs[1:2], time.Unix(1700000001, 0)); err != nil {
		t.Fatal(err)
	}
	if x := readExperiment(t, out); len(x.Domains) != len(config.HParamKeys) || x.Domains["train.lr"][0] != 0.001 {
		t.Errorf("one run: domains %v", x.Domains)
	}
}

func readExperiment(t *testing.T, out string) *tfread.HParams {
	t.Helper()
	files, err := tfread.Files(out)
	if err != nil || len(files) != 1 || files[0] != ExperimentPath(out, "g") {
		t.Fatalf("event files in %s: %v, %v", out, files, err)
	}
	evs, err := tfread.ReadFile(files[0])
	if err != nil || len(evs) != 2 || evs[0].FileVersion != "brain.Event:2" {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	v := evs[1].Values[0]
	x, err := tfread.DecodeHParams(v.Content)
	if err != nil || v.Tag != "_hparams_/experiment" || v.Plugin != "hparams" || x.Kind != 2 {
		t.Fatalf("experiment %+v, %v", v, err)
	}
	return x
}
