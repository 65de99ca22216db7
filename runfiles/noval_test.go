package runfiles

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestNoValidationKeys: an epoch without a validation split (NoVal) is written without
// val_loss and val_metric and reads back equal, NoVal set; a result with val_split "none" has
// no val_metric key. Epochs and results with a validation split keep their keys.
func TestNoValidationKeys(t *testing.T) {
	dir := t.TempDir()
	mp := filepath.Join(dir, MetricsFile)
	eps := []Epoch{{Epoch: 0, LR: 1e-3, TrainLoss: 2, NoVal: true}, {Epoch: 1, LR: 1e-3, TrainLoss: 1, NoVal: true}}
	if err := WriteMetrics(mp, eps); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(mp)
	if strings.Contains(string(b), `"val_`) || !strings.Contains(string(b), `"train_loss":2`) {
		t.Fatalf("metrics.jsonl without a validation split:\n%s", b)
	}
	if got, err := ReadMetrics(mp); err != nil || !reflect.DeepEqual(got, eps) {
		t.Fatalf("read back %+v (%v), want %+v", got, err, eps)
	}
	withVal := Epoch{Epoch: 0, ValLoss: 0, ValMetric: 0.5}
	if js, _ := json.Marshal(withVal); !strings.Contains(string(js), `"train_metric":0,"val_loss":0,"val_metric":0.5,"test_metric":0`) {
		t.Errorf("an epoch with a validation split: %s, want the keys in the order of the files written before NoVal", js)
	}
	if err := os.WriteFile(mp, []byte(`{"epoch":0,"val_loss":1,"bogus":2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadMetrics(mp); err == nil || !strings.Contains(err.Error(), `unknown field "bogus"`) || !strings.Contains(err.Error(), mp+":1:") {
		t.Errorf("an unknown key: %v, want an error naming the file, the line and the key", err)
	}
	res := &Result{Name: "x", Dataset: "neighborsmatch-2", Model: "gatedgcn", R: 2, Seed: 41, Metric: MetricAccuracy,
		TestMetric: 90, TrainMetric: 95, Epochs: 3, StoppedBy: StopMaxEpochs, ValSplit: "none"}
	rp := filepath.Join(dir, ResultFile)
	for _, split := range []string{"none", ""} {
		res.ValSplit = split
		if err := WriteResult(rp, res); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(rp)
		if strings.Contains(string(b), `"val_metric"`) != (split == "") {
			t.Errorf("val_split %q: result.json\n%s", split, b)
		}
		if got, err := ReadResult(rp); err != nil || !reflect.DeepEqual(got, res) {
			t.Errorf("read back %+v (%v), want %+v", got, err, res)
		}
	}
}
