package train

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/internal/tfread"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// jsonKeys decodes each non-blank line of a file as a JSON object and returns its keys.
func jsonKeys(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var buf strings.Builder
	for sc.Scan() { // result.json is one indented object; metrics.jsonl one object per line
		buf.WriteString(sc.Text())
		var m map[string]any
		if json.Unmarshal([]byte(buf.String()), &m) == nil {
			out = append(out, m)
			buf.Reset()
		}
	}
	if strings.TrimSpace(buf.String()) != "" {
		t.Fatalf("%s: unparsed rest %q", path, buf.String())
	}
	return out
}

// TestNoValidationSplitLeavesValOut: a NeighborsMatch run without dataset.val_fraction, trained
// in two sessions (interrupted in epoch 1, resumed), has no val_loss or val_metric key in any
// line of metrics.jsonl, no val_metric in result.json (val_split "none"), and no val/ tag in
// its TensorBoard events; the same run with a validation split has them all.
func TestNoValidationSplitLeavesValOut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sets   []string
		hasVal bool
	}{
		{"no val", []string{"train.batch_size=8", "train.max_epochs=3"}, false},
		{"val", []string{"train.batch_size=8", "train.max_epochs=3", "dataset.val_fraction=0.2", "train.monitor=val_loss"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := nm2(t, tc.sets...)
			dir := c.Dir(41)
			interrupt(t, c, 1, 1, false)
			res, err := trainRun(t, c, 41, true, nil)
			if err != nil {
				t.Fatal(err)
			}
			lines := jsonKeys(t, filepath.Join(dir, runfiles.MetricsFile))
			if len(lines) != 3 {
				t.Fatalf("%d lines in metrics.jsonl, want 3", len(lines))
			}
			for i, l := range lines {
				_, loss := l["val_loss"]
				_, metric := l["val_metric"]
				if _, ok := l["train_loss"]; !ok || loss != tc.hasVal || metric != tc.hasVal {
					t.Errorf("metrics.jsonl line %d: keys %v, want val_loss and val_metric %v", i+1, l, tc.hasVal)
				}
			}
			r := jsonKeys(t, filepath.Join(dir, runfiles.ResultFile))[0]
			if _, ok := r["val_metric"]; ok != tc.hasVal || (r["val_split"] == "none") == tc.hasVal {
				t.Errorf("result.json: val_metric present %v, val_split %v; want val_metric %v", ok, r["val_split"], tc.hasVal)
			}
			b, err := tfread.ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			for step, vals := range b.Epochs {
				_, loss := vals["val/loss"]
				if _, metric := vals["val/"+res.Metric]; loss != tc.hasVal || metric != tc.hasVal {
					t.Errorf("TensorBoard epoch %d: tags %v, want val/ tags %v", step, vals, tc.hasVal)
				}
			}
		})
	}
}
