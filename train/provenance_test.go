package train

import (
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// TestRunsRecordProvenance: a run given -set train.max_epochs=1 records its config hash and the
// departure in result.json and on every metrics line; resumed with a larger budget, the
// departure keeps the protocol value and takes the new one.
func TestRunsRecordProvenance(t *testing.T) {
	c := nm2(t, "train.batch_size=32", "train.max_epochs=1")
	protocol := nm2(t).Train.MaxEpochs
	res, err := trainRun(t, c, 41, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []runfiles.Departure{{Key: "train.max_epochs", Protocol: strconv.Itoa(protocol), Used: "1"}}
	if res.ConfigHash != c.Hash() || !reflect.DeepEqual(res.Departures, want) || res.Provenance() != runfiles.Reduced {
		t.Fatalf("result hash %q departures %+v, want %q %+v", res.ConfigHash, res.Departures, c.Hash(), want)
	}
	dir := c.Dir(41)
	back, err := runfiles.ReadResult(filepath.Join(dir, runfiles.ResultFile))
	if err != nil || !reflect.DeepEqual(back.Departures, want) || back.ConfigHash != c.Hash() {
		t.Fatalf("result.json %+v (%v)", back, err)
	}
	// resumed from the run directory's config.yaml (which holds max_epochs 1) with 2 epochs
	c2, err := config.Load(filepath.Join(dir, runfiles.ConfigFile), []string{"train.max_epochs=2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trainRun(t, c2, 41, true, nil); err != nil {
		t.Fatal(err)
	}
	eps, err := runfiles.ReadMetrics(filepath.Join(dir, runfiles.MetricsFile))
	if err != nil || len(eps) != 2 {
		t.Fatalf("%d epochs (%v)", len(eps), err)
	}
	want2 := []runfiles.Departure{{Key: "train.max_epochs", Protocol: strconv.Itoa(protocol), Used: "2"}}
	if eps[0].ConfigHash != c.Hash() || !reflect.DeepEqual(eps[0].Departures, want) ||
		eps[1].ConfigHash != c2.Hash() || !reflect.DeepEqual(eps[1].Departures, want2) {
		t.Errorf("epochs' provenance %+v / %+v", eps[0], eps[1])
	}
	res2, err := runfiles.ReadResult(filepath.Join(dir, runfiles.ResultFile))
	if err != nil || !reflect.DeepEqual(res2.Departures, want2) || res2.ConfigHash != c2.Hash() || len(res2.Reductions) != 0 {
		t.Errorf("resumed result %+v (%v)", res2, err)
	}
}

// TestRunsRecordDataSource: a run that reads a public distribution (the miniature ZINC of
// data/testdata/pyg) records data_source "pyg"; one on the data folder's own files records none.
func TestRunsRecordDataSource(t *testing.T) {
	pyg, err := filepath.Abs(filepath.Join("..", "data", "testdata", "pyg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, mnist := range []bool{false, true} {
		name := "zinc"
		if mnist {
			name = "mnist"
		}
		c := load(t, "dataset.name="+name, "dataset.dir="+pyg, "dataset.encoding=adj", "dataset.r=1", "dataset.cache=off", "train.max_epochs=1", "train.batch_size=2")
		res, err := trainRun(t, c, 41, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.DataSource != "pyg" || res.TrainGraphs != 3 {
			t.Errorf("%s: data source %q, %d training graphs", name, res.DataSource, res.TrainGraphs)
		}
	}
	res, err := trainRun(t, nm2(t, "train.max_epochs=1"), 41, false, nil)
	if err != nil || res.DataSource != "" {
		t.Errorf("generated dataset: data source %q (%v)", res.DataSource, err)
	}
}

// TestResumeInTheFirstEpochKeepsDepartures: a run with a departure (train.max_epochs 3),
// interrupted inside its first epoch, has recorded no epoch; resumed from its config.yaml (which
// holds 3, so the loaded config departs from nothing), it records the departure from the
// protocol on every epoch and in its result all the same, as the uninterrupted run does: the
// checkpoint carries the departures in force.
func TestResumeInTheFirstEpochKeepsDepartures(t *testing.T) {
	sets := []string{"train.batch_size=8", "train.max_epochs=3"}
	whole := nm2(t, sets...)
	if _, err := trainRun(t, whole, 41, false, nil); err != nil {
		t.Fatal(err)
	}
	cut := nm2(t, sets...)
	dir := cut.Dir(41)
	interrupt(t, cut, 0, 0, false)
	c, err := config.Load(filepath.Join(dir, runfiles.ConfigFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Departures(); d != nil {
		t.Fatalf("the config.yaml reloaded departs by itself: %+v", d)
	}
	if _, err := trainRun(t, c, 41, true, nil); err != nil {
		t.Fatal(err)
	}
	sameRuns(t, whole.Dir(41), dir)
	eps, err := runfiles.ReadMetrics(filepath.Join(dir, runfiles.MetricsFile))
	want := []runfiles.Departure{{Key: "train.max_epochs", Protocol: strconv.Itoa(nm2(t).Train.MaxEpochs), Used: "3"}}
	if err != nil || len(eps) != 3 || !reflect.DeepEqual(eps[0].Departures, want) {
		t.Errorf("resumed run's first epoch: %+v (%v), want departures %+v", eps, err, want)
	}
}

// TestResumeBackToProtocolWithoutAnEpoch: a run that departs (train.max_epochs 1), is resumed at
// the protocol's value and interrupted before that session records an epoch, then resumed again
// from its config.yaml (which the interrupted session rewrote at the protocol's value), records
// no departure from then on: the interrupted session left no epoch to say the key was back.
func TestResumeBackToProtocolWithoutAnEpoch(t *testing.T) {
	c := nm2(t, "train.batch_size=32", "train.max_epochs=1")
	protocol := strconv.Itoa(nm2(t).Train.MaxEpochs)
	if _, err := trainRun(t, c, 41, false, nil); err != nil {
		t.Fatal(err)
	}
	dir := c.Dir(41)
	session := func(sets []string, stopEpoch int) *runfiles.Result {
		t.Helper()
		c, err := config.Load(filepath.Join(dir, runfiles.ConfigFile), sets)
		if err != nil {
			t.Fatal(err)
		}
		return interrupt(t, c, stopEpoch, 0, true)
	}
	session([]string{"train.max_epochs=" + protocol}, 1) // back at the protocol, no epoch recorded
	res := session(nil, 2)                               // from the rewritten config.yaml: one epoch
	eps, err := runfiles.ReadMetrics(filepath.Join(dir, runfiles.MetricsFile))
	if err != nil || len(eps) != 2 {
		t.Fatalf("%d epochs (%v), want 2", len(eps), err)
	}
	want := []runfiles.Departure{{Key: "train.max_epochs", Protocol: protocol, Used: "1"}}
	if !reflect.DeepEqual(eps[0].Departures, want) {
		t.Errorf("epoch 0 departures %+v, want %+v", eps[0].Departures, want)
	}
	if eps[1].Departures != nil || res.Departures != nil {
		t.Errorf("after the return to the protocol: epoch 1 departures %+v, result %+v; want none", eps[1].Departures, res.Departures)
	}
}
