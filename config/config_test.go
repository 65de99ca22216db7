package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
)

// writeTemp writes a config file into a fresh folder and returns its path.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustLoad(t *testing.T, path string, sets ...string) *Run {
	t.Helper()
	r, err := Load(path, sets)
	if err != nil {
		t.Fatalf("Load(%q, %q): %v", path, sets, err)
	}
	return r
}

func TestDefaultsPerDatasetAndModel(t *testing.T) {
	for _, ds := range data.DatasetNames() {
		for _, m := range ModelNames {
			r := mustLoad(t, "", "dataset.name="+ds, "model.name="+m)
			if r.Dataset.Name != ds || r.Model.Name != m {
				t.Errorf("%s/%s: got %s/%s", ds, m, r.Dataset.Name, r.Model.Name)
			}
		}
	}
	cases := []struct {
		sets  []string
		check func(r *Run) bool
		what  string
	}{
		{[]string{"dataset.name=zinc"}, func(r *Run) bool {
			return r.Train.BatchSize == 128 && r.Train.Patience == 10 && r.Train.MaxTime == 12*time.Hour && r.Dataset.Q == 8 &&
				r.Model.Name == "gatedgcn" && r.Model.Hidden == 70 && r.Model.Layers == 4 && r.Model.Readout == "mean" &&
				reflect.DeepEqual(r.Train.Seeds, PaperSeeds) && r.Train.LR == 1e-3 && r.Train.LRFactor == 0.5 && r.Train.MinLR == 1e-6 &&
				r.Train.MaxEpochs == 1000 && r.Train.Buckets == 4 && r.Train.Monitor == "val_loss" && r.Dataset.SelfLoops &&
				r.Model.SPEncoder == "table" && r.Device == "cpu" && r.Out == "runs" && r.Model.BatchNorm && r.Model.Residual
		}, "zinc/gatedgcn base values"},
		{[]string{"dataset.name=zinc", "dataset.cls=true"}, func(r *Run) bool { return r.Model.Readout == "cls" }, "CLS readout on a graph task"},
		{[]string{"dataset.name=aqsol", "model.name=monet"}, func(r *Run) bool {
			return r.Dataset.Q == 4 && r.Model.Hidden == 90 && r.Model.Int("kernels") == 3 && r.Model.Int("pseudo_dim") == 2 && r.Model.EdgeFeat && r.Model.Int("heads") == 0
		}, "aqsol/monet"},
		{[]string{"dataset.name=zinc", "model.name=transformer"}, func(r *Run) bool {
			return r.Model.Layers == 10 && r.Model.Hidden == 30 && r.Model.Int("heads") == 6 && r.Model.Str("norm") == "pre_bn" && r.Train.BatchSize == 128 && r.Model.Int("kernels") == 0
		}, "zinc/transformer: L = 10, d = 30 (override/zinc-transformer.yaml)"},
		{[]string{"dataset.name=cluster", "model.name=transformer"}, func(r *Run) bool { return r.Model.Layers == 4 && r.Model.Hidden == 48 }, "cluster/transformer: the model's L = 4, d = 48"},
		{[]string{"dataset.name=cluster"}, func(r *Run) bool {
			return r.Train.BatchSize == 48 && r.Train.Patience == 5 && r.Dataset.Q == 20 && r.Model.Readout == "node"
		}, "cluster/gatedgcn"},
		{[]string{"dataset.name=cluster", "model.name=transformer"}, func(r *Run) bool { return r.Train.BatchSize == 32 && r.Train.Patience == 5 }, "cluster/transformer batch 32"},
		{[]string{"dataset.name=pattern", "dataset.cls=true"}, func(r *Run) bool {
			return r.Train.BatchSize == 48 && r.Dataset.Q == 2 && r.Model.Readout == "node"
		}, "pattern with CLS keeps the node readout"},
		{[]string{"dataset.name=mnist"}, func(r *Run) bool { return r.Train.BatchSize == 128 && r.Dataset.Q == 8 }, "mnist"},
		{[]string{"dataset.name=neighborsmatch-2"}, func(r *Run) bool {
			return r.Model.Layers == 3 && r.Train.BatchSize == 256 && r.Train.Patience == 10 && r.Train.MaxTime == 6*time.Hour &&
				r.Train.Monitor == "train_loss" && r.Model.Readout == "root" && r.Dataset.ValFraction == 0
		}, "neighborsmatch-2: layers r_p+1 = 3"},
		{[]string{"dataset.name=neighborsmatch-9", "model.name=transformer"}, func(r *Run) bool { return r.Model.Layers == 10 }, "neighborsmatch-9 transformer layers 10"},
		{[]string{"dataset.name=neighborsmatch-2", "model.layers=4"}, func(r *Run) bool { return r.Model.Layers == 4 }, "neighborsmatch layers overridable"},
		{[]string{"dataset.name=neighborsmatch-3", "dataset.val_fraction=0.1", "train.monitor=val_loss"}, func(r *Run) bool { return r.Dataset.ValFraction == 0.1 }, "carved validation"},
		{[]string{"dataset.name=erdosrenyi", "dataset.encoding=adj", "dataset.r=10"}, func(r *Run) bool {
			return r.Train.MaxEpochs == 250 && r.Train.MinLR == 0 && r.Train.Monitor == "train_loss" && r.Model.Readout == "mean"
		}, "erdosrenyi"},
	}
	for _, c := range cases {
		r := mustLoad(t, "", c.sets...)
		if !c.check(r) {
			y, _ := r.YAML()
			t.Errorf("%s: unexpected values:\n%s", c.what, y)
		}
	}
}

func TestOverrideOrder(t *testing.T) {
	p := writeTemp(t, "x.yaml", "dataset:\n  name: zinc\n  r: 3\ntrain:\n  batch_size: 64\n  lr: 0.002\n")
	r := mustLoad(t, p)
	if r.Train.BatchSize != 64 || r.Dataset.R != 3 || r.Train.LR != 0.002 || r.Train.Patience != 10 {
		t.Fatalf("file layer: batch %d r %d lr %g patience %d", r.Train.BatchSize, r.Dataset.R, r.Train.LR, r.Train.Patience)
	}
	t.Setenv("REWIREGNN_TRAIN_BATCH_SIZE", "65")
	t.Setenv("REWIREGNN_TRAIN_SEEDS", "41,95")
	t.Setenv("REWIREGNN_DATA", "/somewhere") // another part of the program's variable: ignored
	t.Setenv("REWIREGNN_MODEL_NAME", "transformer")
	r = mustLoad(t, p)
	if r.Train.BatchSize != 65 || !reflect.DeepEqual(r.Train.Seeds, []int64{41, 95}) || r.Train.LR != 0.002 {
		t.Fatalf("env over file: batch %d seeds %v lr %g", r.Train.BatchSize, r.Train.Seeds, r.Train.LR)
	}
	if r.Model.Name != "transformer" || r.Model.Hidden != 30 { // ZINC's (override/zinc-transformer.yaml)
		t.Fatalf("env model name chooses the model defaults: %s hidden %d", r.Model.Name, r.Model.Hidden)
	}
	r = mustLoad(t, p, "train.batch_size=66", "dataset.cls=true", "train.seeds=12", "model.name=gatedgcn", "train.max_time=90m")
	if r.Train.BatchSize != 66 || !r.Dataset.CLS || !reflect.DeepEqual(r.Train.Seeds, []int64{12}) || r.Model.Hidden != 70 || r.Train.MaxTime != 90*time.Minute {
		t.Fatalf("-set over env: batch %d cls %v seeds %v hidden %d", r.Train.BatchSize, r.Dataset.CLS, r.Train.Seeds, r.Model.Hidden)
	}
	r = mustLoad(t, p, "train.batch_size=1", "train.batch_size=2")
	if r.Train.BatchSize != 2 {
		t.Fatalf("later -set wins: %d", r.Train.BatchSize)
	}
	// the dataset name chosen by -set picks the dataset defaults under the file
	r = mustLoad(t, p, "dataset.name=cluster", "model.name=gatedgcn")
	if r.Train.BatchSize != 65 || r.Train.Patience != 5 || r.Dataset.Q != 20 {
		t.Fatalf("dataset from -set: batch %d patience %d q %d", r.Train.BatchSize, r.Train.Patience, r.Dataset.Q)
	}
	// the model defaults lie under the file, the dataset×model override too
	p2 := writeTemp(t, "y.yaml", "dataset: {name: cluster}\nmodel: {name: transformer, hidden: 60}\n")
	os.Unsetenv("REWIREGNN_TRAIN_BATCH_SIZE")
	os.Unsetenv("REWIREGNN_MODEL_NAME")
	r = mustLoad(t, p2)
	if r.Model.Hidden != 60 || r.Train.BatchSize != 32 || r.Model.Int("heads") != 6 {
		t.Fatalf("file over model defaults: hidden %d batch %d heads %d", r.Model.Hidden, r.Train.BatchSize, r.Model.Int("heads"))
	}
}

func TestRejected(t *testing.T) {
	cases := []struct {
		name string
		file string // "" for no file
		sets []string
		env  map[string]string
		want []string // substrings of the error
	}{
		{"typo key", "dataset:\n  name: zinc\nmodel:\n  layres: 3\n", nil, nil, []string{"x.yaml:4:", `unknown key "model.layres"`, `did you mean "model.layers"`}},
		{"unknown top-level key", "datset:\n  name: zinc\n", nil, nil, []string{"x.yaml:1:", `unknown key "datset"`}},
		{"r 0", "dataset: {name: zinc, r: 0}\n", nil, nil, []string{"x.yaml:1:", "dataset.r:", "at least 1"}},
		{"r -1", "dataset: {name: zinc, r: -1}\n", nil, nil, []string{"x.yaml:1:", `dataset.r: "-1"`, "at least 1", "or auto"}},
		{"r 2.5", "dataset: {name: zinc}\n", []string{"dataset.r=2.5"}, nil, []string{"-set dataset.r=2.5", "at least 1"}},
		{"r Auto", "dataset: {name: zinc}\n", nil, map[string]string{"REWIREGNN_DATASET_R": "automatic"}, []string{"REWIREGNN_DATASET_R", `"automatic"`}},
		{"batch_size 0", "dataset: {name: zinc}\ntrain:\n  batch_size: 0\n", nil, nil, []string{"x.yaml:3:", "train.batch_size:"}},
		{"batch_size abc", "dataset: {name: zinc}\ntrain:\n  batch_size: abc\n", nil, nil, []string{"x.yaml:3:", `train.batch_size: "abc" is not an integer`}},
		{"batch_size float", "dataset: {name: zinc}\ntrain:\n  batch_size: 1.5\n", nil, nil, []string{`train.batch_size: "1.5" is not an integer`}},
		{"encoding adjj", "dataset: {name: zinc, encoding: adjj}\n", nil, nil, []string{"x.yaml:1:", `dataset.encoding: unknown encoding "adjj"`}},
		{"model gcnn", "dataset: {name: zinc}\nmodel: {name: gcnn}\n", nil, nil, []string{"x.yaml:2:", `model.name: unknown model "gcnn"`}},
		{"dataset zinx", "dataset: {name: zinx}\n", nil, nil, []string{"x.yaml:1:", `unknown dataset "zinx"`}},
		{"neighborsmatch depth 10", "dataset: {name: neighborsmatch-10}\n", nil, nil, []string{`unknown dataset "neighborsmatch-10"`}},
		{"no dataset", "model: {name: gatedgcn}\n", nil, nil, []string{"dataset.name is not set"}},
		{"precision fp16", "dataset: {name: zinc}\n", []string{"train.precision=fp16"}, nil, []string{"-set train.precision=fp16", `train.precision: unknown precision "fp16" (want fp32, tf32 or bf16)`}},
		{"hidden 50 heads 6", "dataset: {name: zinc}\nmodel: {name: transformer, hidden: 50}\n", nil, nil, []string{"x.yaml:2:", "model.hidden:", "divisible by model.heads 6"}},
		{"max_time -1h", "dataset: {name: zinc}\ntrain: {max_time: -1h}\n", nil, nil, []string{"x.yaml:2:", "train.max_time:", "positive"}},
		{"max_time 0", "dataset: {name: zinc}\ntrain: {max_time: 0s}\n", nil, nil, []string{"train.max_time:", "positive"}},
		{"max_time not a duration", "dataset: {name: zinc}\ntrain: {max_time: 12}\n", nil, nil, []string{`train.max_time: "12" is not a duration`}},
		{"seeds empty", "dataset: {name: zinc}\ntrain: {seeds: []}\n", nil, nil, []string{"x.yaml:2:", "train.seeds: empty"}},
		{"seeds duplicated", "dataset: {name: zinc}\ntrain: {seeds: [41, 95, 41]}\n", nil, nil, []string{"train.seeds: seed 41 is listed twice"}},
		{"seeds not ints", "dataset: {name: zinc}\ntrain: {seeds: [41, x]}\n", nil, nil, []string{`train.seeds: "x" is not an integer`}},
		{"YAML syntax", "dataset:\n  name: zinc\n  r: [1, 2\nmodel: {}\n", nil, nil, []string{"x.yaml:3: YAML syntax error"}},
		{"YAML syntax line", "dataset:\n  name: zinc\n r: 2\n", nil, nil, []string{"x.yaml:3: YAML syntax error: did not find expected key"}},
		{"error on line 1", "a: b: c\n", nil, nil, []string{"x.yaml:1: YAML syntax error: mapping values"}},
		{"tab indentation", "dataset:\n\tname: zinc\n", nil, nil, []string{"x.yaml:2: YAML syntax error"}},
		{"duplicate key", "dataset:\n  name: zinc\n  r: 2\n  r: 3\n", nil, nil, []string{"x.yaml:4:", `key "dataset.r" given twice (first on line 3)`}},
		{"section not a mapping", "dataset: zinc\n", nil, nil, []string{"x.yaml:1:", "dataset: want a mapping"}},
		{"not a mapping", "- zinc\n", nil, nil, []string{"x.yaml:1:", "want a mapping of keys"}},
		{"null value", "dataset:\n  name: zinc\n  encoding:\n", nil, nil, []string{"x.yaml:3:", "dataset.encoding: no value"}},
		{"list for a scalar", "dataset: {name: zinc, r: [1, 2]}\n", nil, nil, []string{"dataset.r: want a single value, got a list"}},
		{"two documents", "dataset: {name: zinc}\n---\ndataset: {name: aqsol}\n", nil, nil, []string{"x.yaml:2: a second YAML document"}},
		{"lr 0", "dataset: {name: zinc}\ntrain: {lr: 0}\n", nil, nil, []string{"train.lr: the learning rate must be positive"}},
		{"lr_factor 1", "dataset: {name: zinc}\ntrain: {lr_factor: 1}\n", nil, nil, []string{"train.lr_factor:"}},
		{"lr_factor 0", "dataset: {name: zinc}\ntrain: {lr_factor: 0}\n", nil, nil, []string{"train.lr_factor:"}},
		{"patience -1", "dataset: {name: zinc}\ntrain: {patience: -1}\n", nil, nil, []string{"train.patience:"}},
		{"min_lr -1", "dataset: {name: zinc}\ntrain: {min_lr: -1}\n", nil, nil, []string{"train.min_lr:"}},
		{"min_lr above lr", "dataset: {name: zinc}\ntrain: {min_lr: 0.01}\n", nil, nil, []string{"train.min_lr: must not exceed train.lr"}},
		{"max_epochs 0", "dataset: {name: zinc}\ntrain: {max_epochs: 0}\n", nil, nil, []string{"train.max_epochs:"}},
		{"buckets 0", "dataset: {name: zinc}\ntrain: {buckets: 0}\n", nil, nil, []string{"train.buckets:"}},
		{"monitor", "dataset: {name: zinc}\ntrain: {monitor: val_acc}\n", nil, nil, []string{`train.monitor: unknown monitor "val_acc"`}},
		{"val_loss without a validation split", "dataset: {name: neighborsmatch-3}\ntrain: {monitor: val_loss}\n", nil, nil, []string{"x.yaml:2:", "train.monitor: val_loss needs a validation split"}},
		{"val_fraction where a split exists", "dataset: {name: zinc, val_fraction: 0.1}\n", nil, nil, []string{"dataset.val_fraction:"}},
		{"val_fraction 1", "dataset: {name: neighborsmatch-3, val_fraction: 1}\n", nil, nil, []string{"dataset.val_fraction: want a fraction in [0, 1)"}},
		{"dropout 1", "dataset: {name: zinc}\nmodel: {dropout: 1}\n", nil, nil, []string{"model.dropout:"}},
		{"in_feat_dropout -0.1", "dataset: {name: zinc}\nmodel: {in_feat_dropout: -0.1}\n", nil, nil, []string{"model.in_feat_dropout:"}},
		{"q 0 with lp", "dataset: {name: zinc, encoding: lp, q: 0}\n", nil, nil, []string{"dataset.q: the lp encoding needs"}},
		{"q -1", "dataset: {name: zinc, q: -1}\n", nil, nil, []string{"dataset.q: the Laplacian width cannot be negative"}},
		{"rw_steps 0 with rwse", "dataset: {name: zinc, encoding: rwse, rw_steps: 0}\n", nil, nil, []string{"x.yaml:1:", "dataset.rw_steps: the rwse encoding needs walks of at least 1 step, got 0"}},
		{"rw_steps -1", "dataset: {name: zinc}\n", []string{"dataset.rw_steps=-1"}, nil, []string{"-set dataset.rw_steps=-1", "dataset.rw_steps: the number of random-walk steps cannot be negative"}},
		{"rw_steps 257", "dataset: {name: zinc, encoding: rwse}\n", []string{"dataset.rw_steps=257"}, nil, []string{"dataset.rw_steps: at most 256 random-walk steps", "got 257"}},
		{"rw_steps x", "dataset: {name: zinc, encoding: rwse, rw_steps: x}\n", nil, nil, []string{"x.yaml:1:", `dataset.rw_steps: "x" is not an integer`}},
		{"rw_steps typo", "dataset: {name: zinc, encoding: rwse, rwsteps: 8}\n", nil, nil, []string{"x.yaml:1:", `unknown key "dataset.rwsteps"`, `did you mean "dataset.rw_steps"`}},
		{"encoding rw", "dataset: {name: zinc, encoding: rw}\n", nil, nil, []string{`dataset.encoding: unknown encoding "rw" (want none, adj, short, lp or rwse)`}},
		{"device gpu", "dataset: {name: zinc}\ndevice: gpu\n", nil, nil, []string{"x.yaml:2:", `device: unknown device "gpu"`}},
		{"norm", "dataset: {name: zinc}\nmodel: {name: transformer, norm: batch}\n", nil, nil, []string{`model.norm: unknown norm "batch"`}},
		{"norm on gatedgcn", "dataset: {name: zinc}\nmodel: {norm: pre_bn}\n", nil, nil, []string{"model.norm: is a transformer setting"}},
		{"heads on gatedgcn", "dataset: {name: zinc}\nmodel: {heads: 6}\n", nil, nil, []string{"model.heads: is a gat or transformer setting"}},
		{"kernels on transformer", "dataset: {name: zinc}\nmodel: {name: transformer, kernels: 3}\n", nil, nil, []string{"model.kernels: is a monet setting"}},
		{"heads 0 transformer", "dataset: {name: zinc}\nmodel: {name: transformer, heads: 0}\n", nil, nil, []string{"model.heads: want at least 1"}},
		{"monet kernels 0", "dataset: {name: aqsol}\nmodel: {name: monet, kernels: 0}\n", nil, nil, []string{"model.kernels: want at least 1"}},
		{"monet adj without edge features", "dataset: {name: aqsol, encoding: adj}\nmodel: {name: monet, edge_feat: false}\n", nil, nil, []string{"model.edge_feat: must be true with the adj encoding"}},
		{"gatedgcn without edge features", "dataset: {name: zinc}\nmodel: {edge_feat: false}\n", nil, nil, []string{"model.edge_feat: must be true"}},
		{"sp_encoder", "dataset: {name: zinc}\nmodel: {sp_encoder: mlp}\n", nil, nil, []string{`model.sp_encoder: unknown shortest-path encoder "mlp"`}},
		{"layers 0", "dataset: {name: zinc}\nmodel: {layers: 0}\n", nil, nil, []string{"model.layers:"}},
		{"hidden 2", "dataset: {name: zinc}\nmodel: {hidden: 2}\n", nil, nil, []string{"model.hidden:"}},
		{"cls readout without CLS", "dataset: {name: zinc}\nmodel: {readout: cls}\n", nil, nil, []string{"x.yaml:2:", "model.readout: cls reads the CLS node"}},
		{"node readout on a graph task", "dataset: {name: zinc, cls: true}\nmodel: {readout: node}\n", nil, nil, []string{"model.readout: node predicts per node"}},
		{"cls readout on a node task", "dataset: {name: cluster, cls: true}\nmodel: {readout: cls}\n", nil, nil, []string{"model.readout:", "cluster predicts per node"}},
		{"sum readout on a node task", "dataset: {name: cluster}\nmodel: {readout: sum}\n", nil, nil, []string{"model.readout: \"sum\" pools a graph", "cluster predicts per node"}},
		{"root readout on zinc", "dataset: {name: zinc}\nmodel: {readout: root}\n", nil, nil, []string{"model.readout: root reads the NeighborsMatch root"}},
		{"unknown readout", "dataset: {name: zinc}\nmodel: {readout: max}\n", nil, nil, []string{`model.readout: unknown readout "max"`}},
		{"bad name", "name: ../x\ndataset: {name: zinc}\n", nil, nil, []string{"name:", "cannot name a folder"}},
		{"empty out", "out: \"\"\ndataset: {name: zinc}\n", nil, nil, []string{"out: empty"}},
		{"set typo", "", []string{"dataset.name=zinc", "model.layres=3"}, nil, []string{"-set model.layres=3:", `unknown key "model.layres"`}},
		{"set type", "", []string{"dataset.name=zinc", "train.batch_size=abc"}, nil, []string{"-set train.batch_size=abc: train.batch_size: \"abc\" is not an integer"}},
		{"set bool", "", []string{"dataset.name=zinc", "dataset.cls=maybe"}, nil, []string{`dataset.cls: "maybe" is not true or false`}},
		{"set without =", "", []string{"dataset.name"}, nil, []string{`-set "dataset.name": want key=value`}},
		{"set value", "", []string{"dataset.name=zinc", "dataset.r=0"}, nil, []string{"-set dataset.r=0: dataset.r: the rewiring radius must be at least 1 (or auto), got 0"}},
		{"set seeds", "", []string{"dataset.name=zinc", "train.seeds=41,x"}, nil, []string{`train.seeds: "41,x" is not a list of integers`}},
		{"env typo", "", []string{"dataset.name=zinc"}, map[string]string{"REWIREGNN_TRAIN_BATCHSIZE": "3"}, []string{"$REWIREGNN_TRAIN_BATCHSIZE:", `unknown key "train.batchsize"`, `did you mean "train.batch_size"`}},
		{"env type", "", []string{"dataset.name=zinc"}, map[string]string{"REWIREGNN_TRAIN_BATCH_SIZE": "abc"}, []string{"$REWIREGNN_TRAIN_BATCH_SIZE: train.batch_size: \"abc\" is not an integer"}},
		{"env value", "dataset: {name: zinc}\n", nil, map[string]string{"REWIREGNN_DATASET_R": "0"}, []string{"$REWIREGNN_DATASET_R: dataset.r:"}},
		{"env seeds with spaces", "dataset: {name: zinc}\n", nil, map[string]string{"REWIREGNN_TRAIN_SEEDS": "41, 95"}, []string{"$REWIREGNN_TRAIN_SEEDS:", "no spaces"}},
		{"env dataset", "", nil, map[string]string{"REWIREGNN_DATASET_NAME": "zink"}, []string{"$REWIREGNN_DATASET_NAME: dataset.name: unknown dataset \"zink\""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			path := ""
			if c.file != "" {
				path = writeTemp(t, "x.yaml", c.file)
			}
			_, err := Load(path, c.sets)
			if err == nil {
				t.Fatalf("accepted, want an error containing %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

// TestYAMLSyntaxErrorLine: a YAML syntax error names the line the user must fix (the YAML
// parser's own message names the line where the enclosing construct began, often one earlier).
func TestYAMLSyntaxErrorLine(t *testing.T) {
	cases := []struct {
		name, file string
		line       int
	}{
		{"first line", "a: b: c\ndataset:\n  name: zinc\n", 1},
		{"first line, only line, no newline", "dataset: [zinc", 1},
		{"last line", "dataset:\n  name: zinc\n  r: 2\nmodel: x: y\n", 4},
		{"last line, no newline", "dataset:\n  name: zinc\n  r: 2\nmodel: x: y", 4},
		{"key indented too little", "dataset:\n  name: zinc\n r: 2\n", 3},
		{"key indented too little, deeper", "dataset:\n  name: zinc\n  r: 2\nmodel:\n  name: gatedgcn\n layers: 3\n", 6},
		{"key indented too much", "dataset:\n  name: zinc\n    r: 2\n", 3},
		{"tab indentation", "dataset:\n\tname: zinc\n", 2},
		{"list item in a mapping", "dataset:\n  name: zinc\n  - r\n", 3},
		{"unclosed list", "dataset:\n  name: zinc\n  r: [1, 2\nmodel: {}\n", 3},
		{"unclosed quote", "dataset:\n  name: \"zinc\n  r: 2\n", 2},
		{"valid multi-line flow before the error", "dataset: {name: zinc,\n  r: 2}\nmodel:\n  name: x: y\n", 4},
		{"valid multi-line quote before an unclosed one", "name: \"a\n  b\"\ndataset:\n  name: 'zinc\n", 4},
		{"in the second document", "dataset: {name: zinc}\n---\nmodel: x: y\n", 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(c.file), nil)
			if err == nil {
				t.Fatal("accepted")
			}
			want := fmt.Sprintf("x.yaml:%d: YAML syntax error: ", c.line)
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q\ndoes not start with %q", err, want)
			}
		})
	}
}

// TestSetKeyProblems: a -set whose key names a section, goes below a single-valued key, is
// empty or lacks '=' gets an error saying so; "did you mean" never suggests the key itself.
func TestSetKeyProblems(t *testing.T) {
	cases := []struct {
		name, set string
		want      []string
	}{
		{"section", "dataset=5", []string{`-set dataset=5: dataset is a section, not a key with a value; set one of its keys: dataset.name, dataset.dir, dataset.r, `}},
		{"section, upper case", "MODEL=x", []string{"model is a section", "model.name, model.layers"}},
		{"below a value", "dataset.r.x=1", []string{`-set dataset.r.x=1: unknown key "dataset.r.x": dataset.r holds a single value and has no keys under it (give dataset.r=VALUE)`}},
		{"below a section key", "train.seeds.a.b=1", []string{`unknown key "train.seeds.a.b": train.seeds holds a single value`}},
		{"empty key", "=1", []string{`-set "=1": want key=value (e.g. train.batch_size=64), got an empty key`}},
		{"blank key", " =1", []string{"got an empty key"}},
		{"known key without =", "dataset.r", []string{`-set "dataset.r": want key=value, got no '=' (write dataset.r=VALUE)`}},
		{"section without =", "dataset", []string{`-set "dataset": want key=value`, "got no '='", "dataset is a section"}},
		{"unknown key without =", "datset.r", []string{`got no '=', and unknown key "datset.r" (did you mean "dataset.r"?)`}},
		{"section with a dot", "dataset.=1", []string{`unknown key "dataset."`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load("", []string{"dataset.name=zinc", c.set})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
			if m := regexp.MustCompile(`unknown key "([^"]*)" \(did you mean "([^"]*)"`).FindStringSubmatch(err.Error()); m != nil && m[1] == m[2] {
				t.Errorf("error %q suggests the key itself", err)
			}
		})
	}
}

// TestSuggestNeverTheKey: suggest never offers the key it was given, for any key or section.
func TestSuggestNeverTheKey(t *testing.T) {
	keys := append(Keys(), sortedKeys(sections)...)
	for _, k := range keys {
		if s := suggest(k); s == k {
			t.Errorf("suggest(%q) = itself", k)
		}
	}
}

func TestValidateCollectsEveryProblem(t *testing.T) {
	r := mustLoad(t, "", "dataset.name=zinc")
	r.Dataset.R = 0
	r.Train.BatchSize = 0
	r.Train.Seeds = nil
	err := r.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, k := range []string{"dataset.r:", "train.batch_size:", "train.seeds:"} {
		if !strings.Contains(err.Error(), k) {
			t.Errorf("error %q lacks %s", err, k)
		}
	}
}

func TestMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), nil)
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("error %v, want one naming the file", err)
	}
}

func TestEmptyFileWithSets(t *testing.T) {
	p := writeTemp(t, "empty.yaml", "# only a comment\n")
	r := mustLoad(t, p, "dataset.name=pattern")
	if r.Dataset.Name != "pattern" {
		t.Fatal(r.Dataset.Name)
	}
}

func TestCaseInsensitiveKeys(t *testing.T) {
	p := writeTemp(t, "x.yaml", "Dataset:\n  Name: zinc\n  R: 2\n")
	r := mustLoad(t, p, "TRAIN.Batch_Size=7")
	if r.Dataset.R != 2 || r.Train.BatchSize != 7 {
		t.Fatalf("r %d batch %d", r.Dataset.R, r.Train.BatchSize)
	}
}

func TestYAMLRoundTrip(t *testing.T) {
	var runs []*Run
	for _, ds := range data.DatasetNames() {
		for _, m := range ModelNames {
			runs = append(runs, mustLoad(t, "", "dataset.name="+ds, "model.name="+m, "dataset.encoding=lp", "dataset.r=2"))
		}
	}
	runs = append(runs, mustLoad(t, "", "dataset.name=zinc", "name=my_run.v2", "dataset.dir=/data/x y", "dataset.cache=c: d",
		"dataset.cls=true", "train.max_time=1h30m45s", "train.lr=3.5e-4", "train.seeds=-1,0,7", "model.dropout=0.25", "out=true"))
	for _, r := range runs {
		y, err := r.YAML()
		if err != nil {
			t.Fatal(err)
		}
		p := writeTemp(t, "config.yaml", string(y))
		back, err := Load(p, nil)
		if err != nil {
			t.Fatalf("%s: reloading its YAML: %v\n%s", r.RunName(), err, y)
		}
		if !reflect.DeepEqual(values(back), values(r)) {
			t.Errorf("%s: round trip changed the run:\n%s", r.RunName(), y)
		}
		y2, _ := back.YAML()
		if string(y2) != string(y) {
			t.Errorf("%s: YAML not stable:\n%s\n---\n%s", r.RunName(), y, y2)
		}
	}
	// every key appears, in schema order, but the own keys of other models that layoutV1 lacks
	y, _ := runs[0].YAML()
	last := -1
	for _, f := range schema {
		if !runs[0].writes(f) {
			if strings.Contains(string(y), "\n  "+f.own+":") {
				t.Errorf("%s, another model's key, written for %s", f.key, runs[0].Model.Name)
			}
			continue
		}
		k := f.key
		leaf := k[strings.LastIndexByte(k, '.')+1:]
		i := strings.Index(string(y[last+1:]), leaf+":")
		if i < 0 {
			t.Fatalf("key %s missing or out of order in\n%s", k, y)
		}
		last += 1 + i
	}
}

// TestPortableYAML checks that the portable form names no place of the machine (out, data and
// cache folders), keeps a cache turned off, leaves the run itself unchanged (no key Hash covers
// differs after reloading it) and leaves the Run it was called on as it was.
func TestPortableYAML(t *testing.T) {
	tmp := t.TempDir() // the machine's places: a data, a cache and an out folder under it
	data, out := filepath.Join(tmp, "data"), filepath.Join(tmp, "runs")
	for _, cache := range []string{filepath.Join(tmp, "cache", "prep"), "off"} {
		r := mustLoad(t, "", "dataset.name=zinc", "dataset.dir="+data, "dataset.cache="+cache, "out="+out, "dataset.r=3")
		y, err := r.PortableYAML()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(y), tmp) {
			t.Errorf("portable YAML names a place under %s:\n%s", tmp, y)
		}
		back, err := Load(writeTemp(t, "config.yaml", string(y)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := back.DiffKeys(r); len(d) > 0 || back.Hash() != r.Hash() {
			t.Errorf("portable YAML changed the run: %v", d)
		}
		if want := map[bool]string{true: "off", false: "auto"}[cache == "off"]; back.Dataset.Cache != want || back.Out != "runs" || back.Dataset.Dir != "" {
			t.Errorf("places %q %q %q, want runs, \"\", %s", back.Out, back.Dataset.Dir, back.Dataset.Cache, want)
		}
		if r.Out != out || r.Dataset.Dir != data {
			t.Errorf("PortableYAML changed its receiver: %q %q", r.Out, r.Dataset.Dir)
		}
	}
}

func TestRunNameAndDir(t *testing.T) {
	r := mustLoad(t, "", "dataset.name=zinc", "dataset.encoding=adj", "dataset.cls=true", "dataset.r=4")
	if got := r.RunName(); got != "zinc-gatedgcn-adj-cls-r4" {
		t.Errorf("RunName %q", got)
	}
	if got := r.Dir(41); got != filepath.Join("runs", "zinc-gatedgcn-adj-cls-r4", "seed41") {
		t.Errorf("Dir %q", got)
	}
	r = mustLoad(t, "", "dataset.name=neighborsmatch-3", "dataset.encoding=short", "dataset.r=2", "model.name=transformer", "out=/tmp/o")
	if got := r.Dir(95); got != "/tmp/o/neighborsmatch-3-transformer-short-r2/seed95" {
		t.Errorf("Dir %q", got)
	}
	r.Name = "custom"
	if r.RunName() != "custom" || r.Dir(12) != "/tmp/o/custom/seed12" {
		t.Errorf("explicit name: %q %q", r.RunName(), r.Dir(12))
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "config.yaml")
	r := mustLoad(t, "", "dataset.name=aqsol", "model.name=monet")
	if err := WriteFile(p, r); err != nil {
		t.Fatal(err)
	}
	r.Dataset.R = 7
	if err := WriteFile(p, r); err != nil {
		t.Fatal(err)
	}
	back := mustLoad(t, p)
	if back.Dataset.R != 7 || back.Model.Name != "monet" {
		t.Fatalf("read back r %d model %s", back.Dataset.R, back.Model.Name)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("folder holds %d entries, want only config.yaml: %v", len(ents), ents)
	}
	// a failed write leaves what was there and no temporary file
	blocked := filepath.Join(dir, "blocked")
	if err := os.MkdirAll(filepath.Join(blocked, "config.yaml", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(blocked, "config.yaml"), r); err == nil {
		t.Fatal("writing over a non-empty folder succeeded")
	}
	ents, _ = os.ReadDir(blocked)
	if len(ents) != 1 || ents[0].Name() != "config.yaml" || !ents[0].IsDir() {
		t.Fatalf("after a failed write the folder holds %v", ents)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{12 * time.Hour: "12h", 90 * time.Minute: "1h30m", 10 * time.Minute: "10m", 45 * time.Second: "45s",
		time.Hour + time.Second: "1h0m1s", 1500 * time.Millisecond: "1.5s", -time.Hour: "-1h"} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
		back, err := time.ParseDuration(formatDuration(d))
		if err != nil || back != d {
			t.Errorf("%q does not parse back to %v", formatDuration(d), d)
		}
	}
}

func TestEnvNames(t *testing.T) {
	if got := EnvName("train.batch_size"); got != "REWIREGNN_TRAIN_BATCH_SIZE" {
		t.Error(got)
	}
	if got := EnvName("device"); got != "REWIREGNN_DEVICE" {
		t.Error(got)
	}
	if len(Keys()) != len(schema) || Keys()[0] != "name" {
		t.Error(Keys())
	}
}

func TestDefaultsFilesAllUsed(t *testing.T) {
	all, err := loadDefaults()
	if err != nil {
		t.Fatal(err)
	}
	families := map[string]bool{}
	for _, ds := range data.DatasetNames() {
		f, _, _ := datasetFamily(ds)
		families[f] = true
	}
	for rel, l := range all {
		dir, file, _ := strings.Cut(rel, "/")
		name := strings.TrimSuffix(file, ".yaml")
		switch dir {
		case "base.yaml":
			_, hasDataset := l.vals["dataset.name"]
			shared := 0
			for _, f := range schema {
				if f.own == "" {
					shared++
				}
			}
			if len(l.vals) != shared-1 || hasDataset {
				t.Errorf("base.yaml sets %d keys, want every shared key but dataset.name (%d)", len(l.vals), shared-1)
			}
		case "dataset":
			if !families[name] {
				t.Errorf("defaults/%s: no dataset uses it", rel)
			}
		case "model":
			if !contains(ModelNames, name) {
				t.Errorf("defaults/%s: no such model", rel)
			}
		case "override":
			ok := false
			for f := range families {
				if m, found := strings.CutPrefix(name, f+"-"); found && contains(ModelNames, m) {
					ok = true
				}
			}
			if !ok {
				t.Errorf("defaults/%s: not <dataset>-<model>", rel)
			}
		default:
			t.Errorf("defaults/%s: unexpected file", rel)
		}
	}
	for f := range families {
		if all["dataset/"+f+".yaml"] == nil {
			t.Errorf("no defaults/dataset/%s.yaml", f)
		}
	}
	for _, m := range ModelNames {
		if all["model/"+m+".yaml"] == nil {
			t.Errorf("no defaults/model/%s.yaml", m)
		}
	}
}

func TestEnvEveryKind(t *testing.T) {
	env := map[string]string{
		"REWIREGNN_DATASET_NAME":       "mnist",
		"REWIREGNN_DATASET_CLS":        "true",
		"REWIREGNN_DATASET_R":          "2",
		"REWIREGNN_TRAIN_LR":           "1e-4",
		"REWIREGNN_TRAIN_MAX_TIME":     "90m",
		"REWIREGNN_TRAIN_SEEDS":        "7,8,9",
		"REWIREGNN_DEVICE":             "auto",
		"REWIREGNN_MODEL_SP_ENCODER":   "linear",
		"REWIREGNN_DATASET_ENCODING":   "",  // empty: unset
		"REWIREGNN_CUDA_SOMETHING":     "x", // not a config section: left alone
		"REWIREGNN_DATASET_SELF_LOOPS": "false",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	r := mustLoad(t, "")
	if r.Dataset.Name != "mnist" || !r.Dataset.CLS || r.Dataset.R != 2 || r.Train.LR != 1e-4 || r.Train.MaxTime != 90*time.Minute ||
		!reflect.DeepEqual(r.Train.Seeds, []int64{7, 8, 9}) || r.Device != "auto" || r.Model.SPEncoder != "linear" ||
		r.Dataset.Encoding != "none" || r.Dataset.SelfLoops || r.Model.Readout != "cls" {
		y, _ := r.YAML()
		t.Fatalf("from the environment:\n%s", y)
	}
}

func TestValidateZeroRun(t *testing.T) {
	err := (&Run{}).Validate()
	if err == nil {
		t.Fatal("the zero Run validates")
	}
	for _, k := range []string{"dataset.name:", "dataset.r:", "model.name:", "train.seeds:", "device:", "out:"} {
		if !strings.Contains(err.Error(), k) {
			t.Errorf("error lacks %s:\n%v", k, err)
		}
	}
}

// TestDatasetsAgreeWithDataSpecs checks the dataset facts the config layer keeps (task level,
// missing validation split, default Laplacian width) against the data package's descriptions.
func TestDatasetsAgreeWithDataSpecs(t *testing.T) {
	levels := map[data.Task]string{data.GraphRegression: levelGraph, data.GraphClass: levelGraph, data.GraphMultiLabel: levelGraph, data.NodeClass: levelNode, data.RootClass: levelRoot}
	for _, name := range data.DatasetNames() {
		t.Run(name, func(t *testing.T) {
			dir := ""
			if name == "zinc" || name == "aqsol" {
				dir = testdata.Dir(t) // the molecules' vocabularies live in the data folder
			}
			spec, err := data.OpenSpec(dir, name)
			if err != nil {
				t.Fatal(err)
			}
			if got := datasetLevel(name); got != levels[spec.Task] {
				t.Errorf("level %q, data says task %q", got, spec.Task)
			}
			r := mustLoad(t, "", "dataset.name="+name)
			if r.Dataset.Q != spec.LapQ {
				t.Errorf("default q %d, data's LapQ %d", r.Dataset.Q, spec.LapQ)
			}
		})
	}
}

// TestRadiusAuto: dataset.r takes auto from a file, -set and the environment; until resolved the
// run is named …-rauto and writes r: auto, which loads back.
func TestRadiusAuto(t *testing.T) {
	p := writeTemp(t, "x.yaml", "dataset: {name: zinc, encoding: adj, r: auto}\n")
	for _, r := range []*Run{
		mustLoad(t, p),
		mustLoad(t, "", "dataset.name=cluster", "dataset.r=auto"),
	} {
		if r.Dataset.R != RAuto || !strings.HasSuffix(r.RunName(), "-rauto") {
			t.Errorf("r = %d, name %s; want RAuto and …-rauto", r.Dataset.R, r.RunName())
		}
		y, err := r.YAML()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(y), "  r: auto\n") {
			t.Errorf("written config lacks r: auto:\n%s", y)
		}
		back, err := Parse("config.yaml", y, nil)
		if err != nil || !reflect.DeepEqual(back.Dataset, r.Dataset) {
			t.Errorf("written config loads back as %+v (%v), not %+v", back.Dataset, err, r.Dataset)
		}
	}
	t.Setenv("REWIREGNN_DATASET_R", "auto")
	if r := mustLoad(t, "", "dataset.name=zinc"); r.Dataset.R != RAuto {
		t.Errorf("REWIREGNN_DATASET_R=auto: r = %d", r.Dataset.R)
	}
}
