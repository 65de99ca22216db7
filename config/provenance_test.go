package config

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rewiregnn/rewiregnn/gpuopt"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// values is the run's keys alone, without what Load recorded about their layers.
func values(r *Run) Run {
	c := *r
	c.prov = nil
	return c
}

const zincFile = "dataset:\n  name: zinc\n  encoding: adj\n  r: 2\n"

func TestHashIsTheDigestOfTheDocumentedSerialisation(t *testing.T) {
	r := mustLoad(t, writeTemp(t, "c.yaml", zincFile))
	// the serialisation written out independently: every key but the excluded ones, in Run order
	lines := []string{
		"dataset.name=zinc", "dataset.r=2", "dataset.encoding=adj", "dataset.cls=false",
		"dataset.q=" + itoa(r.Dataset.Q), "dataset.self_loops=" + btoa(r.Dataset.SelfLoops), "dataset.val_fraction=0.0", "dataset.subset=0",
		"model.name=gatedgcn", "model.layers=" + itoa(r.Model.Layers), "model.hidden=" + itoa(r.Model.Hidden),
		"model.heads=" + itoa(r.Model.Int("heads")), "model.kernels=" + itoa(r.Model.Int("kernels")), "model.pseudo_dim=" + itoa(r.Model.Int("pseudo_dim")),
		"model.norm=" + r.Model.Str("norm"), "model.batch_norm=" + btoa(r.Model.BatchNorm), "model.residual=" + btoa(r.Model.Residual),
		"model.readout=" + r.Model.Readout, "model.edge_feat=" + btoa(r.Model.EdgeFeat),
		"model.dropout=" + ftoa(r.Model.Dropout), "model.in_feat_dropout=" + ftoa(r.Model.InFeatDropout), "model.sp_encoder=" + r.Model.SPEncoder,
		"train.batch_size=" + itoa(r.Train.BatchSize), "train.lr=0.001", "train.lr_factor=0.5", "train.patience=" + itoa(r.Train.Patience),
		"train.min_lr=1e-06", "train.max_epochs=1000", "train.max_time=12h", "train.buckets=" + itoa(r.Train.Buckets), "train.monitor=val_loss",
	}
	sum := sha256.Sum256([]byte("rewiregnn config hash v1\n" + strings.Join(lines, "\n") + "\n"))
	if got, want := r.Hash(), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("Hash %s, want %s", got, want)
	}
}

func itoa(n int) string  { return formatValue(n) }
func btoa(b bool) string { return formatValue(b) }
func ftoa(f float64) string {
	return formatValue(f)
}

func TestHashKeepsModelKeysAndIgnoresPlaces(t *testing.T) {
	file := writeTemp(t, "c.yaml", zincFile)
	base := mustLoad(t, file).Hash()
	for _, tc := range []struct {
		set  string
		same bool
	}{
		{"out=elsewhere", true},
		{"dataset.dir=/data", true},
		{"dataset.cache=/cache", true},
		{"train.seeds=1,2", true},
		{"name=my-run", true},
		{"device=cuda", true},
		{"train.lr=0.002", false},
		{"dataset.r=3", false},
		{"model.hidden=64", false},
		{"dataset.subset=1000", false},
		{"train.max_epochs=2", false},
		{"train.max_time=1h", false},
	} {
		got := mustLoad(t, file, tc.set).Hash()
		if (got == base) != tc.same {
			t.Errorf("-set %s: hash changed %v, want %v", tc.set, got != base, !tc.same)
		}
	}
	// stable: loading again, or reloading the written YAML, gives the same hash
	r := mustLoad(t, file, "train.max_time=90m")
	y, err := r.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("config.yaml", y, nil)
	if err != nil || back.Hash() != r.Hash() || mustLoad(t, file, "train.max_time=90m").Hash() != r.Hash() {
		t.Errorf("hash not stable: %v", err)
	}
}

func TestDeparturesFromEachLayer(t *testing.T) {
	file := writeTemp(t, "c.yaml", zincFile+"train:\n  max_epochs: 50\n")
	for _, tc := range []struct {
		name string
		env  map[string]string
		sets []string
		want []runfiles.Departure
	}{
		{name: "protocol"},
		{name: "set equal to the file", sets: []string{"train.max_epochs=50"}},
		{name: "subset flag", sets: []string{"dataset.subset=1000"},
			want: []runfiles.Departure{{Key: "dataset.subset", Protocol: "0", Used: "1000"}}},
		{name: "epochs over the file", sets: []string{"train.max_epochs=2"},
			want: []runfiles.Departure{{Key: "train.max_epochs", Protocol: "50", Used: "2"}}},
		{name: "environment", env: map[string]string{"REWIREGNN_TRAIN_MAX_TIME": "10m"},
			want: []runfiles.Departure{{Key: "train.max_time", Protocol: "12h", Used: "10m"}}},
		{name: "device", sets: []string{"device=cuda"},
			want: []runfiles.Departure{{Key: "device", Protocol: "cpu", Used: "cuda"}}},
		{name: "several, -set over environment", env: map[string]string{"REWIREGNN_DATASET_SUBSET": "10"},
			sets: []string{"dataset.subset=20", "train.max_time=24h"},
			want: []runfiles.Departure{{Key: "dataset.subset", Protocol: "0", Used: "20"}, {Key: "train.max_time", Protocol: "12h", Used: "24h"}}},
		{name: "not a budget key", sets: []string{"train.lr=0.01"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			r := mustLoad(t, file, tc.sets...)
			if got := r.Departures(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Departures %+v, want %+v", got, tc.want)
			}
			// the protocol copy has none, and it with DepartureSets loads back to the run
			p := r.Protocol()
			if d := p.Departures(); d != nil {
				t.Errorf("Protocol() still departs: %+v", d)
			}
			y, err := p.YAML()
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse("protocol.yaml", y, r.DepartureSets())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(values(back), values(r)) || !reflect.DeepEqual(back.Departures(), tc.want) {
				t.Errorf("protocol file + DepartureSets: departures %+v, want %+v", back.Departures(), tc.want)
			}
		})
	}
}

func TestReductionsAreConfiguredBelowTheDefaults(t *testing.T) {
	for _, tc := range []struct {
		file string
		sets []string
		want []runfiles.Reduction
	}{
		{file: zincFile},
		{file: zincFile + "train:\n  max_time: 10m\n",
			want: []runfiles.Reduction{{Key: "train.max_time", Default: "12h", Configured: "10m"}}},
		{file: zincFile + "train:\n  max_time: 24h\n  max_epochs: 10\n",
			want: []runfiles.Reduction{{Key: "train.max_epochs", Default: "1000", Configured: "10"}}},
		{file: zincFile + "  subset: 500\n",
			want: []runfiles.Reduction{{Key: "dataset.subset", Default: "0", Configured: "500"}}},
		// a -set is a departure, not a reduction
		{file: zincFile, sets: []string{"train.max_time=10m"}},
		{file: zincFile + "device: cuda\n"},
	} {
		r := mustLoad(t, writeTemp(t, "c.yaml", tc.file), tc.sets...)
		if got := r.Reductions(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q %q: Reductions %+v, want %+v", tc.file, tc.sets, got, tc.want)
		}
	}
}

func TestGridRunsRecordSetsAsDepartures(t *testing.T) {
	grid := writeTemp(t, "g.yaml", "datasets: [zinc]\nmodels: [gatedgcn]\nencodings: [adj]\ncls: [false]\nr: [1]\noverrides:\n  train:\n    max_time: 10m\n")
	g, err := LoadGrid(grid, []string{"train.max_epochs=2"})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	r := runs[0]
	wantD := []runfiles.Departure{{Key: "train.max_epochs", Protocol: "1000", Used: "2"}}
	wantR := []runfiles.Reduction{{Key: "train.max_time", Default: "12h", Configured: "10m"}}
	if !reflect.DeepEqual(r.Departures(), wantD) || !reflect.DeepEqual(r.Reductions(), wantR) {
		t.Errorf("departures %+v reductions %+v, want %+v %+v", r.Departures(), r.Reductions(), wantD, wantR)
	}
	if r.Protocol().Train.MaxEpochs != 1000 || r.Protocol().Train.MaxTime != 10*time.Minute {
		t.Errorf("Protocol() %+v", r.Protocol().Train)
	}
}

// TestHashOfLaterKeys: model.relative, added after the serialisation was fixed, is left out at its
// default (earlier results keep their hash) and hashed when set.
func TestHashOfLaterKeys(t *testing.T) {
	file := writeTemp(t, "c.yaml", "dataset: {name: zinc, encoding: short, r: 2}\nmodel: {name: transformer}\n")
	base := mustLoad(t, file)
	learned := mustLoad(t, file, "model.relative=learned")
	if base.Hash() == learned.Hash() {
		t.Error("model.relative=learned hashes like the plain Transformer")
	}
	if learned.Hash() == mustLoad(t, file, "model.relative=sinusoid").Hash() {
		t.Error("the two variants hash alike")
	}
	if _, err := Load(file, []string{"model.relative=sinusoid", "dataset.encoding=adj"}); err == nil || !strings.Contains(err.Error(), "needs dataset.encoding short") {
		t.Errorf("sinusoid with adj: %v", err)
	}
	if _, err := Load(file, []string{"model.relative=learned", "dataset.encoding=lp"}); err == nil || !strings.Contains(err.Error(), "pairwise encoding") {
		t.Errorf("learned with lp: %v", err)
	}
	if _, err := Load(file, []string{"model.relative=learned", "model.name=gatedgcn"}); err == nil || !strings.Contains(err.Error(), "is a transformer setting") {
		t.Errorf("relative on GatedGCN: %v", err)
	}
}

// TestPrecisionKey: train.precision defaults to fp32, which leaves the hash as it was before the
// key existed (the serialisation of TestHashIsTheDigestOfTheDocumentedSerialisation unchanged)
// while config.yaml writes it (precision: fp32); tf32 is hashed, written, read
// back, named by Diff (what a resume checks) and in the derived run name; bf16 hashes apart
// from both and is named …-bf16.
func TestPrecisionKey(t *testing.T) {
	file := writeTemp(t, "c.yaml", zincFile)
	fp32 := mustLoad(t, file)
	if fp32.Train.Precision != PrecisionFP32 {
		t.Fatalf("default train.precision %q, want %s", fp32.Train.Precision, PrecisionFP32)
	}
	if explicit := mustLoad(t, file, "train.precision=fp32"); explicit.Hash() != fp32.Hash() {
		t.Error("train.precision=fp32 hashes unlike the default")
	}
	y, err := fp32.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), "  stop_accuracy: 0.0\n  precision: fp32\n") {
		t.Errorf("config.yaml of an fp32 run: want precision: fp32 after the last train key:\n%s", y)
	}
	tf32 := mustLoad(t, file, "train.precision=tf32")
	if tf32.Hash() == fp32.Hash() {
		t.Error("tf32 hashes like fp32")
	}
	y, err = tf32.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), "  stop_accuracy: 0.0\n  precision: tf32\n") {
		t.Errorf("config.yaml of a tf32 run: want precision: tf32 after the last train key:\n%s", y)
	}
	back := mustLoad(t, writeTemp(t, "back.yaml", string(y)))
	if back.Train.Precision != string(gpuopt.TF32) || back.Hash() != tf32.Hash() {
		t.Errorf("reloaded: precision %q, hash equal %t", back.Train.Precision, back.Hash() == tf32.Hash())
	}
	if d := tf32.Diff(fp32); len(d) != 1 || d[0] != "train.precision tf32 (want fp32)" {
		t.Errorf("Diff %q", d)
	}
	if a, b := fp32.RunName(), tf32.RunName(); a != "zinc-gatedgcn-adj-r2" || b != "zinc-gatedgcn-adj-r2-tf32" {
		t.Errorf("run names %s (fp32), %s (tf32)", a, b)
	}
	bf16 := mustLoad(t, file, "train.precision=bf16")
	if bf16.Hash() == fp32.Hash() || bf16.Hash() == tf32.Hash() || bf16.RunName() != "zinc-gatedgcn-adj-r2-bf16" {
		t.Errorf("bf16: hash like fp32 %t, like tf32 %t; run name %s", bf16.Hash() == fp32.Hash(), bf16.Hash() == tf32.Hash(), bf16.RunName())
	}
	if d := bf16.Diff(tf32); len(d) != 1 || d[0] != "train.precision bf16 (want tf32)" {
		t.Errorf("Diff %q", d)
	}
}

// TestRWStepsKey: dataset.rw_steps defaults to 16, which leaves the hash as it was before the
// key existed while config.yaml writes it; another k is hashed, written, read back and named by
// Diff; the run name of an rwse run is <dataset>-<model>-rwse[-cls]-r<r>, with -rw<k> when k is
// not 16 (so that k = 8 and k = 16 do not share a folder); other encodings accept any k ≥ 0
// and ignore it, as they do dataset.q.
func TestRWStepsKey(t *testing.T) {
	file := writeTemp(t, "c.yaml", "dataset:\n  name: zinc\n  encoding: rwse\n  r: 2\n")
	k16 := mustLoad(t, file)
	if k16.Dataset.RWSteps != DefaultRWSteps || DefaultRWSteps != 16 {
		t.Fatalf("default dataset.rw_steps %d, want 16", k16.Dataset.RWSteps)
	}
	if explicit := mustLoad(t, file, "dataset.rw_steps=16"); explicit.Hash() != k16.Hash() {
		t.Error("dataset.rw_steps=16 hashes unlike the default")
	}
	y, err := k16.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), "  subset: 0\n  rw_steps: 16\nmodel:\n") {
		t.Errorf("config.yaml of a k = 16 run: want rw_steps: 16 after the last dataset key:\n%s", y)
	}
	k8 := mustLoad(t, file, "dataset.rw_steps=8")
	if k8.Hash() == k16.Hash() {
		t.Error("k = 8 hashes like k = 16")
	}
	if y, err = k8.YAML(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), "  subset: 0\n  rw_steps: 8\nmodel:\n") {
		t.Errorf("config.yaml of a k = 8 run: want rw_steps: 8 after the last dataset key:\n%s", y)
	}
	back := mustLoad(t, writeTemp(t, "back.yaml", string(y)))
	if back.Dataset.RWSteps != 8 || back.Hash() != k8.Hash() {
		t.Errorf("reloaded: rw_steps %d, hash equal %t", back.Dataset.RWSteps, back.Hash() == k8.Hash())
	}
	if d := k8.Diff(k16); len(d) != 1 || d[0] != "dataset.rw_steps 8 (want 16)" {
		t.Errorf("Diff %q", d)
	}
	if a, b := k16.RunName(), mustLoad(t, file, "dataset.cls=true").RunName(); a != "zinc-gatedgcn-rwse-r2" || b != "zinc-gatedgcn-rwse-cls-r2" {
		t.Errorf("run names %s, %s", a, b)
	}
	if a, b := k8.RunName(), mustLoad(t, file, "dataset.rw_steps=8", "train.precision=tf32").RunName(); a != "zinc-gatedgcn-rwse-r2-rw8" || b != "zinc-gatedgcn-rwse-r2-rw8-tf32" {
		t.Errorf("run names of k = 8: %s, with tf32 %s", a, b)
	}
	if adj := mustLoad(t, writeTemp(t, "adj.yaml", zincFile), "dataset.rw_steps=0"); adj.Dataset.RWSteps != 0 {
		t.Errorf("adj with rw_steps 0: %d", adj.Dataset.RWSteps)
	}
}
