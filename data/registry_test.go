package data_test

import (
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
)

func TestRegistry(t *testing.T) {
	for _, tc := range []struct {
		name, split string
		n           int
	}{{"neighborsmatch-2", "train", 76}, {"neighborsmatch-2", "test", 20}, {"ERDOSRENYI", "train", 100}} {
		gs, spec, err := data.LoadSplit(t.TempDir(), tc.name, tc.split) // generated: no files needed
		if err != nil {
			t.Fatal(err)
		}
		if len(gs) != tc.n {
			t.Errorf("%s %s: %d graphs, want %d", tc.name, tc.split, len(gs), tc.n)
		}
		for _, g := range gs {
			if err := g.Validate(); err != nil {
				t.Fatal(err)
			}
			if !g.Edge.FitsRow(spec.EdgeConst) || !g.Node.FitsRow(spec.CLSNode) {
				t.Fatalf("%s: constants do not fit the features", tc.name)
			}
		}
	}
	dataDir := testdata.Dir(t)
	for _, name := range []string{"cluster", "pattern", "mnist", "cifar10", "zinc"} {
		if _, err := data.OpenSpec(dataDir, name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, _, err := data.LoadSplit(dataDir, "imagenet", "train")
	wantErr(t, err, `unknown dataset "imagenet"`, "cluster", "neighborsmatch")
	_, _, err = data.LoadSplit(dataDir, "neighborsmatch-12", "train")
	wantErr(t, err, "neighborsmatch-12", "1..9")
	_, _, err = data.LoadSplit(dataDir, "neighborsmatch-3", "val")
	wantErr(t, err, `unknown split "val"`)
	_, _, err = data.LoadSplit(t.TempDir(), "cifar10", "test")
	wantErr(t, err, "test_batch.bin", "cifar-10-binary")
}
