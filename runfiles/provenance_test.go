package runfiles

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var hash = strings.Repeat("0f", 32)

func TestProvenanceOfResults(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Result
		want Provenance
		note string
	}{
		{"legacy", Result{}, Unknown, "unknown provenance"},
		{"protocol", Result{ConfigHash: hash}, Protocol, ""},
		{"departed", Result{ConfigHash: hash, Departures: []Departure{{Key: "dataset.subset", Protocol: "0", Used: "1000"}}},
			Reduced, "dataset.subset 1000 (protocol 0)"},
		{"other device only", Result{ConfigHash: hash, Departures: []Departure{{Key: "device", Protocol: "cpu", Used: "cuda"}}}, Protocol, ""},
		{"emulated GPU", Result{ConfigHash: hash, Device: "emulated GPU (the real kernels on CPU threads; 1 SM, 16.0 GiB); kernels", Departures: []Departure{{Key: "device", Protocol: "cpu", Used: "emu"}}},
			Reduced, "device: the emulated GPU"},
		{"emulated GPU under cuda", Result{ConfigHash: hash, Device: "emulated GPU (the real kernels on CPU threads; 1 SM, 16.0 GiB)", Departures: []Departure{{Key: "dataset.subset", Protocol: "0", Used: "1000"}}},
			Reduced, "device: the emulated GPU (the CUDA kernels on CPU threads, a check of the GPU path; its timings are no GPU's); dataset.subset 1000 (protocol 0)"},
		{"GPU named emulated nowhere", Result{ConfigHash: hash, Device: "GPU 0: NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB; driver CUDA 13.0)"}, Protocol, ""},
		{"reduced grid", Result{ConfigHash: hash, Reductions: []Reduction{{Key: "train.max_time", Default: "12h", Configured: "10m"}}},
			Reduced, "train.max_time 10m in the config (default 12h)"},
	} {
		if got := tc.r.Provenance(); got != tc.want {
			t.Errorf("%s: Provenance %d, want %d", tc.name, got, tc.want)
		}
		if got := tc.r.BudgetNote(); (tc.note == "") != (got == "") || !strings.Contains(got, tc.note) {
			t.Errorf("%s: BudgetNote %q, want %q", tc.name, got, tc.note)
		}
	}
}

func TestReadersCheckProvenance(t *testing.T) {
	dir := t.TempDir()
	base := `{"name":"x","dataset":"zinc","model":"gatedgcn","r":1,"epochs":1,"metric":"mae","stopped_by":"min_lr"`
	for _, tc := range []struct {
		extra, err string
	}{
		{"", ""}, // an older file, without the fields
		{`,"config_hash":"` + hash + `"`, ""},
		{`,"config_hash":"abc"`, "config_hash"},
		{`,"departures":[{"key":"device","protocol":"cpu","used":"cuda"}]`, "without"},
		{`,"config_hash":"` + hash + `","departures":[{"key":"device","protocol":"cpu","used":"cpu"}]`, "no departure"},
		{`,"config_hash":"` + hash + `","reductions":[{"key":"","default":"1","configured":"2"}]`, "no key"},
	} {
		p := filepath.Join(dir, ResultFile)
		os.WriteFile(p, []byte(base+tc.extra+"}\n"), 0o600)
		_, err := ReadResult(p)
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: got %v, want an error with %q", tc.extra, err, tc.err)
		}
	}
	p := filepath.Join(dir, MetricsFile)
	os.WriteFile(p, []byte(`{"epoch":0}`+"\n"+`{"epoch":1,"config_hash":"xyz"}`+"\n"), 0o600)
	if _, err := ReadMetrics(p); err == nil || !strings.Contains(err.Error(), p+":2:") {
		t.Errorf("bad hash in metrics: got %v, want line 2 named", err)
	}
}

func TestRunDeparturesAcrossSessions(t *testing.T) {
	sub := func(p, u string) Departure { return Departure{Key: "dataset.subset", Protocol: p, Used: u} }
	ep := func(ds ...Departure) Epoch { return Epoch{ConfigHash: hash, Departures: ds} }
	for _, tc := range []struct {
		name    string
		earlier []Epoch
		now     []Departure
		want    []Departure
	}{
		{"first session", nil, []Departure{sub("0", "1000")}, []Departure{sub("0", "1000")}},
		{"resumed, value baked into config.yaml", []Epoch{ep(sub("0", "1000"))}, nil, []Departure{sub("0", "1000")}},
		{"resumed with a new value", []Epoch{ep(sub("0", "1000"))}, []Departure{sub("1000", "2000")}, []Departure{sub("0", "2000")}},
		{"resumed back to the protocol", []Epoch{ep(sub("0", "1000"))}, []Departure{sub("1000", "0")}, nil},
		{"legacy epochs", []Epoch{{}, {}}, nil, nil},
		{"extended back to the protocol in an earlier session", []Epoch{ep(sub("0", "1000")), ep()}, nil, nil},
		{"legacy epoch after a departure", []Epoch{ep(sub("0", "1000")), {}}, nil, []Departure{sub("0", "1000")}},
		{"a first session's keys at their protocol values", nil, []Departure{sub("0", "0")}, nil},
		{"resumed from a config.yaml put back at the protocol by a session that recorded no epoch",
			[]Epoch{ep(sub("0", "1000"))}, []Departure{sub("0", "0")}, nil},
		{"resumed, every key listed, the departure baked into config.yaml",
			[]Epoch{ep(sub("0", "1000"))}, []Departure{sub("1000", "1000")}, []Departure{sub("0", "1000")}},
		{"a new key on resume", []Epoch{ep(sub("0", "10"))}, []Departure{{Key: "device", Protocol: "cpu", Used: "cuda"}},
			[]Departure{sub("0", "10"), {Key: "device", Protocol: "cpu", Used: "cuda"}}},
	} {
		if got := RunDepartures(tc.earlier, tc.now); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	rs := []Reduction{{Key: "dataset.subset", Default: "0", Configured: "1000"}, {Key: "train.max_time", Default: "12h", Configured: "10m"}}
	if got := WithoutKeys(rs, []Departure{sub("0", "1000")}); !reflect.DeepEqual(got, rs[1:]) {
		t.Errorf("WithoutKeys %+v", got)
	}
}

// TestMaxTimeDepartureBindsOnlyWhereItCouldAct: a shorter (or longer) wall-clock cap changes
// nothing on a run that converged before either cap; it is a reduced budget where the run
// stopped by the cap, ran past the shorter cap, or departs on another key too.
func TestMaxTimeDepartureBindsOnlyWhereItCouldAct(t *testing.T) {
	mt := func(p, u string) Departure { return Departure{Key: MaxTimeKey, Protocol: p, Used: u} }
	for _, tc := range []struct {
		name  string
		stop  string
		secs  float64
		deps  []Departure
		prov  Provenance
		binds bool
	}{
		{"60-minute cap, converged in 15 minutes", StopMinLR, 900, []Departure{mt("12h", "1h")}, Protocol, false},
		{"60-minute cap, stopped by it", StopMaxTime, 3600, []Departure{mt("12h", "1h")}, Reduced, true},
		{"24-hour cap, converged after 13 hours", StopMinLR, 13 * 3600, []Departure{mt("12h", "24h")}, Reduced, true},
		{"24-hour cap, converged in 2 hours", StopMaxEpochs, 7200, []Departure{mt("12h", "24h")}, Protocol, false},
		{"interrupted", StopSignal, 100, []Departure{mt("12h", "1h")}, Reduced, true},
		{"unreadable duration", StopMinLR, 100, []Departure{mt("12h", "soon")}, Reduced, true},
		{"another key too", StopMinLR, 900, []Departure{mt("12h", "1h"), {Key: "train.max_epochs", Protocol: "1000", Used: "5"}}, Reduced, false},
	} {
		r := &Result{ConfigHash: hash, StoppedBy: tc.stop, TotalSeconds: tc.secs, Departures: tc.deps}
		if got := r.Provenance(); got != tc.prov {
			t.Errorf("%s: Provenance %v, want %v", tc.name, got, tc.prov)
		}
		if got := r.Binds(tc.deps[0]); got != tc.binds {
			t.Errorf("%s: Binds %v, want %v", tc.name, got, tc.binds)
		}
	}
}
