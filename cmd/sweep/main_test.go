package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "-grid is required"},
		{[]string{"-grid", "g.yaml", "-workers", "0"}, "-workers 0"},
		{[]string{"-grid", "g.yaml", "-submit"}, "-submit needs -slurm"},
		{[]string{"-grid", "g.yaml", "x"}, `unexpected argument "x"`},
		{[]string{"-bogus"}, "-bogus"},
		{[]string{"-grid", "g.yaml", "-write-configs"}, "-write-configs needs -dry-run"},
	} {
		var so, se bytes.Buffer
		if code := run(context.Background(), c.args, &so, &se); code != 2 || !strings.Contains(se.String(), c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, se.String())
		}
	}
}

func TestGPUIDs(t *testing.T) {
	t.Setenv("CUDA_VISIBLE_DEVICES", "2,3")
	if ids, err := gpuIDs(""); err != nil || strings.Join(ids, ",") != "2,3" {
		t.Errorf("env: %v %v", ids, err)
	}
	if ids, err := gpuIDs("0, 1"); err != nil || strings.Join(ids, ",") != "0,1" {
		t.Errorf("flag: %v %v", ids, err)
	}
	if ids, err := gpuIDs("none"); err != nil || len(ids) != 0 {
		t.Errorf("none: %v %v", ids, err)
	}
	if _, err := gpuIDs("0;rm"); err == nil || !strings.Contains(err.Error(), "-gpus") {
		t.Errorf("bad id: %v", err)
	}
}

// fakeTrainer builds the sweep package's fake trainer (../../sweep/testdata/faketrain).
func fakeTrainer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "faketrain")
	if out, err := exec.Command("go", "build", "-o", bin, "../../sweep/testdata/faketrain").CombinedOutput(); err != nil {
		t.Fatalf("building the fake trainer: %v\n%s", err, out)
	}
	return bin
}

const tinyGrid = `name: tiny
table: "table:zinc"
datasets: [zinc]
models: [gatedgcn]
encodings: [adj]
cls: [false, true]
r: [1, 2]
seeds: [41, 95]
overrides:
  train:
    max_time: 20m
`

// The command end to end: a real grid file (config.LoadGrid), the fake trainer, a failure, the
// second invocation finishing the job by resuming it, -dry-run, and -slurm.
// sweepSetup writes tinyGrid into a temporary folder and returns the fake trainer, the folder,
// the grid file, the runs folder and the arguments of a local sweep of it (the fake trainer set
// to sleep 1 ms and to check the configs it is given).
func sweepSetup(t *testing.T) (bin, dir, grid, out string, args []string) {
	t.Helper()
	bin, dir = fakeTrainer(t), t.TempDir()
	grid = filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(grid, []byte(tinyGrid), 0o644); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(dir, "runs")
	t.Setenv("FAKE_SLEEP_MS", "1")
	t.Setenv("FAKE_CONFIG_HASH", "load")
	return bin, dir, grid, out, []string{"-grid", grid, "-out", out, "-train-bin", bin, "-workers", "2"}
}

func TestSweepCommand(t *testing.T) {
	bin, dir, grid, out, args := sweepSetup(t)
	t.Setenv("FAKE_FAIL", "zinc-gatedgcn-adj-cls-r2/95")
	var so, se bytes.Buffer
	if code := run(context.Background(), args, &so, &se); code != 1 {
		t.Fatalf("first sweep: exit %d, want 1\n%s\n%s", code, so.String(), se.String())
	}
	if !strings.Contains(se.String(), "1 failed job:\n  zinc-gatedgcn-adj-cls-r2 seed 95: exit status 5 after") {
		t.Errorf("failure list:\n%s", se.String())
	}
	if !strings.Contains(so.String(), "8 jobs: 0 already finished, 8 run (0 resumed): 7 finished, 1 failed") {
		t.Errorf("summary:\n%s", so.String())
	}
	// the resolved config the trainer got is a loadable config
	if _, err := os.Stat(filepath.Join(out, ".sweep", "configs", "zinc-gatedgcn-adj-cls-r2.yaml")); err != nil {
		t.Error(err)
	}
	so.Reset()
	if code := run(context.Background(), append(args, "-dry-run"), &so, &se); code != 0 ||
		!strings.Contains(so.String(), "7 finished, 1 resumable, 0 pending, 0 of another config") ||
		!strings.Contains(so.String(), "train -resume "+filepath.Join(out, "zinc-gatedgcn-adj-cls-r2", "seed95")) {
		t.Errorf("dry run: exit %d\n%s", code, so.String())
	}
	so.Reset()
	se.Reset()
	if code := run(context.Background(), args, &so, &se); code != 0 {
		t.Fatalf("second sweep: exit %d\n%s\n%s", code, so.String(), se.String())
	}
	if !strings.Contains(so.String(), "8 jobs: 7 already finished, 1 run (1 resumed): 1 finished, 0 failed") {
		t.Errorf("second summary:\n%s", so.String())
	}
	// -slurm for a grid with everything finished, then with -set making new runs
	so.Reset()
	sdir := filepath.Join(dir, "slurm")
	if code := run(context.Background(), []string{"-grid", grid, "-out", out, "-train-bin", bin, "-slurm", sdir}, &so, &se); code != 0 ||
		!strings.Contains(so.String(), "nothing to submit") {
		t.Errorf("slurm, all finished: exit %d %s %s", code, so.String(), se.String())
	}
	so.Reset()
	out2 := filepath.Join(dir, "runs2")
	code := run(context.Background(), []string{"-grid", grid, "-out", out2, "-train-bin", bin, "-slurm", sdir,
		"-set", "device=cuda", "-partition", "gpu", "-max-parallel", "3"}, &so, &se)
	if code != 0 || !strings.Contains(so.String(), "(8 tasks of 8 jobs") {
		t.Fatalf("slurm: exit %d %s %s", code, so.String(), se.String())
	}
	b, _ := os.ReadFile(filepath.Join(sdir, "sweep.sbatch"))
	for _, want := range []string{"--array=0-7%3", "--time=0-00:50:00", "--gres=gpu:1", "--partition=gpu", "--job-name=tiny"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("script lacks %s:\n%s", want, b)
		}
	}
	// a grid error names the file
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("datasets: [zinc]\nmodles: [gatedgcn]\n"), 0o644)
	se.Reset()
	if code := run(context.Background(), []string{"-grid", bad}, &so, &se); code != 1 || !strings.Contains(se.String(), "bad.yaml") {
		t.Errorf("bad grid: exit %d %s", code, se.String())
	}
}

// The case: runs of a reduced budget (-set dataset.subset, train.max_epochs) are not
// finished runs of the grid: -dry-run says why, the sweep refuses them, naming -mismatch, and
// -mismatch rerun sets them aside and trains the grid's runs.
func TestSweepReducedRunsAreNotFinished(t *testing.T) {
	_, _, grid, out, args := sweepSetup(t)
	var so, se bytes.Buffer
	reduced := append(args[:len(args):len(args)], "-set", "dataset.subset=1000", "-set", "train.max_epochs=2")
	if code := run(context.Background(), reduced, &so, &se); code != 0 {
		t.Fatalf("reduced sweep: exit %d\n%s\n%s", code, so.String(), se.String())
	}
	res, err := runfiles.ReadResult(filepath.Join(out, "zinc-gatedgcn-adj-r1", "seed41", runfiles.ResultFile))
	if err != nil || len(res.Departures) != 2 || res.Departures[0].Key != "dataset.subset" || res.Departures[1].Used != "2" {
		t.Fatalf("the reduced run's result: %+v %v", res, err)
	}
	// the same -set: finished
	so.Reset()
	if code := run(context.Background(), append(reduced, "-dry-run"), &so, &se); code != 0 || !strings.Contains(so.String(), "8 finished, 0 resumable") {
		t.Errorf("dry run with the same -set: %d\n%s", code, so.String())
	}
	// the grid itself: nothing is finished
	so.Reset()
	if code := run(context.Background(), append(args, "-dry-run"), &so, &se); code != 0 ||
		!strings.Contains(so.String(), "0 finished, 0 resumable, 0 pending, 8 of another config (mismatch: refuse)") ||
		!strings.Contains(so.String(), "dataset.subset 1000 (want 0)") || !strings.Contains(so.String(), "-mismatch rerun") {
		t.Errorf("dry run of the grid: %d\n%s", code, so.String())
	}
	so.Reset()
	se.Reset()
	if code := run(context.Background(), args, &so, &se); code != 1 || !strings.Contains(se.String(), "8 failed jobs") ||
		!strings.Contains(se.String(), "pass -mismatch rerun") {
		t.Errorf("refused: exit %d\n%s\n%s", code, so.String(), se.String())
	}
	so.Reset()
	se.Reset()
	if code := run(context.Background(), append(args, "-mismatch", "rerun"), &so, &se); code != 0 ||
		!strings.Contains(so.String(), "8 run (0 resumed): 8 finished, 0 failed; 8 run directories of another config set aside") {
		t.Fatalf("rerun: exit %d\n%s\n%s", code, so.String(), se.String())
	}
	res, err = runfiles.ReadResult(filepath.Join(out, "zinc-gatedgcn-adj-r1", "seed41", runfiles.ResultFile))
	if err != nil || len(res.Departures) != 0 || res.Provenance() != runfiles.Reduced || res.Reductions[0].Key != "train.max_time" {
		t.Errorf("the rerun's result: %+v %v", res, err)
	}
	if old, _ := filepath.Glob(filepath.Join(out, "*", ".superseded", "seed*", runfiles.ResultFile)); len(old) != 8 {
		t.Errorf("%d results set aside, want 8", len(old))
	}
	if code := run(context.Background(), []string{"-grid", grid, "-mismatch", "keep"}, &so, &se); code != 2 {
		t.Errorf("-mismatch keep: exit %d", code)
	}
}

// TestGridOut: without -out the runs go where the grid's overrides put them (its trainer config
// folder too); -out replaces it.
func TestGridOut(t *testing.T) {
	dir := t.TempDir()
	grid := filepath.Join(dir, "g.yaml")
	gridOut := filepath.Join(dir, "gridruns")
	if err := os.WriteFile(grid, []byte("datasets: [neighborsmatch-1]\nmodels: [gatedgcn]\nencodings: [adj]\ncls: [false]\nr: 1\nseeds: [1]\noverrides:\n  out: "+gridOut+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, filepath.Join(gridOut, "neighborsmatch-1-gatedgcn-adj-r1", "seed1")},
		{[]string{"-out", filepath.Join(dir, "other")}, filepath.Join(dir, "other", "neighborsmatch-1-gatedgcn-adj-r1", "seed1")},
	} {
		var so, se bytes.Buffer
		if code := run(context.Background(), append([]string{"-grid", grid, "-dry-run"}, c.args...), &so, &se); code != 0 || !strings.Contains(so.String(), "→ "+c.want) {
			t.Errorf("%v: exit %d, %s%s; want the run in %s", c.args, code, so.String(), se.String(), c.want)
		}
	}
}

// TestDryRunWritesConfigs: -dry-run -write-configs writes the resolved config every printed
// trainer command line names (what scripts/campaign.sh bundles), and -dry-run alone writes none.
func TestDryRunWritesConfigs(t *testing.T) {
	_, _, grid, out, _ := sweepSetup(t)
	var so, se bytes.Buffer
	if code := run(context.Background(), []string{"-grid", grid, "-out", out, "-dry-run"}, &so, &se); code != 0 {
		t.Fatalf("dry run: exit %d\n%s", code, se.String())
	}
	if _, err := os.Stat(filepath.Join(out, ".sweep")); !os.IsNotExist(err) {
		t.Errorf("-dry-run alone wrote %s (%v)", filepath.Join(out, ".sweep"), err)
	}
	checkUnwritten(t, so.String(), 8, filepath.Join(out, ".sweep", "configs"))
	so.Reset()
	if code := run(context.Background(), []string{"-grid", grid, "-out", out, "-dry-run", "-write-configs"}, &so, &se); code != 0 {
		t.Fatalf("dry run -write-configs: exit %d\n%s", code, se.String())
	}
	checkCampaignParse(t, so.String(), 8)
	if strings.Contains(so.String(), unwrittenConfig) || strings.Contains(so.String(), "note: -dry-run") {
		t.Errorf("-write-configs printed the unwritten-config form:\n%s", so.String())
	}
	n := 0
	for _, line := range strings.Split(so.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "train" || f[1] != "-config" {
			continue
		}
		n++
		if _, err := config.Load(f[2], nil); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
	if n != 8 {
		t.Errorf("%d trainer command lines name a config, want 8:\n%s", n, so.String())
	}
}

// checkUnwritten: a dry run without -write-configs names no config file that does not exist;
// its trainer lines show unwrittenConfig instead, and a note says that -write-configs writes
// the configs into dir.
func checkUnwritten(t *testing.T, out string, want int, dir string) {
	t.Helper()
	n := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "-config" && !strings.HasPrefix(f[i+1], "<") {
				if _, err := os.Stat(f[i+1]); err != nil {
					t.Errorf("line names a config that is not there: %s (%v)", line, err)
				}
			}
		}
		if strings.HasPrefix(strings.TrimSpace(line), "train -config "+unwrittenConfig+" -seed ") {
			n++
		}
	}
	if n != want {
		t.Errorf("%d trainer lines show %s, want %d:\n%s", n, unwrittenConfig, want, out)
	}
	note := fmt.Sprintf("note: -dry-run writes no files, so %d trainer command lines show %s where their run config goes; add -write-configs to this command to write the configs into %s", want, unwrittenConfig, dir)
	if want > 0 && !strings.Contains(out, note) {
		t.Errorf("no note %q in:\n%s", note, out)
	}
	if want == 0 && strings.Contains(out, "note: -dry-run") {
		t.Errorf("a note though every config is written:\n%s", out)
	}
}

// checkCampaignParse reads the dry run's output as scripts/campaign.sh does (job lines
// "[i/n] state NAME seed S …", each followed by "  train ARGS") and wants n (job, trainer
// line) pairs whose -config names a loadable file.
func checkCampaignParse(t *testing.T, out string, want int) {
	t.Helper()
	jobRE := regexp.MustCompile(`^\[[0-9]+/[0-9]+\] +[a-z]+ +([^ ]+) seed ([0-9]+) `)
	trainRE := regexp.MustCompile(`^ +train (.*)$`)
	name, n := "", 0
	for _, l := range strings.Split(out, "\n") {
		if m := jobRE.FindStringSubmatch(l); m != nil {
			name = m[1]
			continue
		}
		m := trainRE.FindStringSubmatch(l)
		if name == "" || m == nil {
			continue
		}
		f := strings.Fields(m[1])
		if len(f) < 2 || f[0] != "-config" {
			t.Errorf("%s: trainer line %q has no -config", name, l)
			continue
		}
		if _, err := config.Load(f[1], nil); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		name = ""
		n++
	}
	if n != want {
		t.Errorf("campaign parse: %d jobs with trainer lines, want %d:\n%s", n, want, out)
	}
}

// TestDryRunNamesOnlyCurrentConfigs: once the configs are written, a plain -dry-run prints
// their lines as they are; a config file that no longer matches its run (the grid changed, or it
// was edited) is not named.
func TestDryRunNamesOnlyCurrentConfigs(t *testing.T) {
	_, _, grid, out, _ := sweepSetup(t)
	var so, se bytes.Buffer
	if code := run(context.Background(), []string{"-grid", grid, "-out", out, "-dry-run", "-write-configs"}, &so, &se); code != 0 {
		t.Fatalf("dry run -write-configs: exit %d\n%s", code, se.String())
	}
	so.Reset()
	if code := run(context.Background(), []string{"-grid", grid, "-out", out, "-dry-run"}, &so, &se); code != 0 {
		t.Fatalf("dry run: exit %d\n%s", code, se.String())
	}
	checkUnwritten(t, so.String(), 0, "")
	checkCampaignParse(t, so.String(), 8)
	stale := filepath.Join(out, ".sweep", "configs", "zinc-gatedgcn-adj-r1.yaml")
	if err := os.WriteFile(stale, []byte("dataset: {name: zinc}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	so.Reset()
	if code := run(context.Background(), []string{"-grid", grid, "-out", out, "-dry-run"}, &so, &se); code != 0 {
		t.Fatalf("dry run: exit %d\n%s", code, se.String())
	}
	checkUnwritten(t, so.String(), 2, filepath.Join(out, ".sweep", "configs"))
	if strings.Contains(so.String(), "-config "+stale) {
		t.Errorf("the stale config is named:\n%s", so.String())
	}
}
