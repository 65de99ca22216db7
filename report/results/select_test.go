package results

import (
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

var hash = strings.Repeat("ab", 32)

func TestSelectLeavesOutUnfinishedAndReducedRuns(t *testing.T) {
	mk := func(dir string, seed int64, stop string, edit func(*runfiles.Result)) *Run {
		res := &runfiles.Result{Name: "zinc-gatedgcn-adj-r1", Dataset: "zinc", Model: "gatedgcn", Encoding: "adj", R: 1, Seed: seed,
			Metric: runfiles.MetricMAE, TestMetric: float64(seed) / 100, Epochs: 5, StoppedBy: stop, ConfigHash: hash}
		if edit != nil {
			edit(res)
		}
		return &Run{Dir: dir, Result: res}
	}
	subset := func(r *runfiles.Result) {
		r.Departures = []runfiles.Departure{{Key: "dataset.subset", Protocol: "0", Used: "1000"}}
	}
	grid := func(r *runfiles.Result) {
		r.Reductions = []runfiles.Reduction{{Key: "train.max_time", Default: "12h", Configured: "10m"}}
	}
	legacy := func(r *runfiles.Result) { r.ConfigHash = "" }
	emulated := func(r *runfiles.Result) { // train -device emu at the full budget
		r.Device = runfiles.EmulatedDevice + " (the real kernels on CPU threads; 1 SM, 16.0 GiB)"
		r.Departures = []runfiles.Departure{{Key: "device", Protocol: "cpu", Used: "emu"}}
	}
	runs := []*Run{
		mk("a", 41, runfiles.StopMinLR, nil),
		mk("b", 95, runfiles.StopMaxEpochs, subset),
		mk("c", 12, runfiles.StopSignal, nil),
		mk("d", 35, runfiles.StopNaN, nil),
		mk("e", 7, runfiles.StopMaxTime, grid),
		mk("f", 8, runfiles.StopMinLR, legacy),
		mk("g", 9, runfiles.StopSignal, subset),
		mk("h", 10, runfiles.StopMinLR, emulated),
	}
	for _, tc := range []struct {
		include bool
		kept    string
		reasons map[string]string
	}{
		{false, "a", map[string]string{"b": "dataset.subset 1000 (protocol 0)", "c": "signal", "d": "diverged", "e": "train.max_time 10m in the config",
			"f": "unknown provenance", "g": "signal", "h": "the emulated GPU"}},
		{true, "a b e f h", map[string]string{"c": "signal", "d": "diverged", "g": "signal"}},
	} {
		kept, left := Select(runs, tc.include)
		var names []string
		for _, r := range kept {
			names = append(names, r.Dir)
		}
		if strings.Join(names, " ") != tc.kept {
			t.Errorf("include %v: kept %v, want %s", tc.include, names, tc.kept)
		}
		if len(left) != len(tc.reasons) {
			t.Errorf("include %v: left out %+v", tc.include, left)
		}
		for _, l := range left {
			if want := tc.reasons[l.Dir]; want == "" || !strings.Contains(l.Reason, want) {
				t.Errorf("include %v: %s left out because %q, want %q", tc.include, l.Dir, l.Reason, want)
			}
			if strings.Contains(l.Reason, "reduced budget") && !strings.Contains(l.Reason, IncludeReducedFlag) {
				t.Errorf("%s: the reason does not name %s: %s", l.Dir, IncludeReducedFlag, l.Reason)
			}
		}
		if tc.include {
			gs, err := Aggregate(kept, Options{})
			if err != nil || len(gs) != 1 || gs[0].Reduced != 4 || len(gs[0].Budgets) != 4 {
				t.Errorf("aggregate of the included runs: %+v %v", gs, err)
			}
		}
	}
}
