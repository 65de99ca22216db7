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
