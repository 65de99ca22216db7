package config

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestSetsFlag(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var sets Sets
	fs.Var(&sets, "set", "")
	if err := fs.Parse([]string{"-set", "dataset.name=zinc", "-set", "train.batch_size=1", "-set", "train.batch_size=2"}); err != nil {
		t.Fatal(err)
	}
	sets.Add("train.seeds", "7,8")
	want := Sets{"dataset.name=zinc", "train.batch_size=1", "train.batch_size=2", "train.seeds=7,8"}
	if !reflect.DeepEqual(sets, want) || sets.String() != strings.Join(want, " ") {
		t.Fatalf("sets %q", sets)
	}
	r := mustLoad(t, "", sets...)
	if r.Train.BatchSize != 2 || !reflect.DeepEqual(r.Train.Seeds, []int64{7, 8}) {
		t.Fatalf("batch %d seeds %v", r.Train.BatchSize, r.Train.Seeds)
	}
	// a malformed -set is collected as given and reported by Load
	if err := fs.Parse([]string{"-set", "train.batch_size"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Load("", sets); err == nil || !strings.Contains(err.Error(), `-set "train.batch_size": want key=value`) {
		t.Fatalf("error %v", err)
	}
}
