package data

import "testing"

func TestRegistry(t *testing.T) {
	for _, tc := range []struct {
		name, split string
		n           int
	}{{"neighborsmatch-2", "train", 76}, {"neighborsmatch-2", "test", 20}, {"ERDOSRENYI", "train", 100}} {
		gs, spec, err := LoadSplit(testDataDir, tc.name, tc.split)
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
	for _, name := range []string{"cluster", "pattern", "mnist", "cifar10", "zinc"} {
		if _, err := OpenSpec(testDataDir, name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, _, err := LoadSplit(testDataDir, "imagenet", "train")
	wantErr(t, err, `unknown dataset "imagenet"`, "cluster", "neighborsmatch")
	_, _, err = LoadSplit(testDataDir, "neighborsmatch-12", "train")
	wantErr(t, err, "neighborsmatch-12", "1..9")
	_, _, err = LoadSplit(testDataDir, "neighborsmatch-3", "val")
	wantErr(t, err, `unknown split "val"`)
	_, _, err = LoadSplit(t.TempDir(), "cifar10", "test")
	wantErr(t, err, "test_batch.bin", "cifar-10-binary")
}
