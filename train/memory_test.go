package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/internal/memlimit"
	"github.com/rewiregnn/rewiregnn/internal/testdata"
	"github.com/rewiregnn/rewiregnn/memplan"
	"github.com/rewiregnn/rewiregnn/models"
	"github.com/rewiregnn/rewiregnn/nn"
)

// childEnv makes the test binary a training child (TestMemoryChild): it holds the -set
// overrides, separated by spaces.
const childEnv = "REWIREGNN_MEMORY_CHILD"

// TestMemoryChild trains the config of childEnv and prints the process's peak resident set
// (VmHWM); it does nothing in a normal test run.
func TestMemoryChild(t *testing.T) {
	sets := os.Getenv(childEnv)
	if sets == "" {
		t.Skip("only as the child of TestMemoryEstimateMatchesPeak")
	}
	c, err := config.Load("", strings.Fields(sets))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Train(context.Background(), Options{Run: c, Seed: 41, Dir: c.Dir(41), Workers: 1}); err != nil {
		t.Fatal(err)
	}
	hwm, err := memlimit.Peak()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("peak %d\n", hwm)
}

// estimateOf loads cfg's data and returns the guard's estimate at its batch size.
func estimateOf(t *testing.T, c *config.Run) memplan.Estimate {
	t.Helper()
	r := &run{o: Options{Run: c, Seed: 41, Workers: 1}, cfg: c, log: io.Discard}
	if err := r.loadData(); err != nil {
		t.Fatal(err)
	}
	var build nn.BuildFunc
	var err error
	if r.io, build, r.params, err = models.FromConfig(c, r.spec); err != nil {
		t.Fatal(err)
	}
	est, err := r.mem().Estimate(build, c.Train.BatchSize, c.Model.Recompute)
	if err != nil {
		t.Fatal(err)
	}
	return est
}

// TestMemoryEstimateMatchesPeak: the guard's estimate of a run's live memory is within 25% of
// the peak resident set of a child process that trains it (one epoch, so the garbage
// collector's share stays small), on a ZINC subset (r = 4, CLS) and on CLUSTER (generated, r = 1,
// Laplacian encoding).
// One bucket, so that every batch uses the net the estimate counts.
func TestMemoryEstimateMatchesPeak(t *testing.T) {
	if testing.Short() {
		t.Skip("trains in child processes")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc/self/status (Linux)")
	}
	dir := testdata.Dir(t)
	for _, tc := range []struct {
		name string
		sets []string
	}{
		{"zinc", []string{"dataset.name=zinc", "dataset.dir=" + dir, "dataset.subset=400", "dataset.encoding=adj", "dataset.cls=true", "dataset.r=4"}},
		{"cluster", []string{"dataset.name=cluster", "dataset.subset=48", "dataset.encoding=lp", "dataset.r=1", "train.batch_size=8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sets := append(tc.sets, "train.buckets=1", "train.max_epochs=1", "train.seeds=41", "out="+t.TempDir())
			c, err := config.Load("", sets)
			if err != nil {
				t.Fatal(err)
			}
			est := estimateOf(t, c)
			cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryChild$", "-test.v")
			cmd.Env = append(os.Environ(), childEnv+"="+strings.Join(sets, " "))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			var peak int64
			for _, l := range strings.Split(string(out), "\n") {
				if v, ok := strings.CutPrefix(l, "peak "); ok {
					peak, _ = strconv.ParseInt(v, 10, 64)
				}
			}
			if peak == 0 {
				t.Fatalf("child printed no peak:\n%s", out)
			}
			ratio := float64(est.Total()) / float64(peak)
			t.Logf("estimate %s (%s), measured peak %s, ratio %.2f", memlimit.Format(est.Total()), est.Parts(), memlimit.Format(peak), ratio)
			if ratio < 0.75 || ratio > 1.25 {
				t.Errorf("estimate %s is not within 25%% of the measured peak %s", memlimit.Format(est.Total()), memlimit.Format(peak))
			}
		})
	}
}

// TestMemoryRefusal: with a budget far below the estimate the run stops before building the
// trainer, with an error naming the estimate and its parts, the budget's source and a batch
// size that its own estimate fits; the run directory holds no checkpoint.
func TestMemoryRefusal(t *testing.T) {
	c := nm2(t, "train.batch_size=64", "train.max_epochs=1")
	est := estimateOf(t, c)
	budget := int64(float64(est.Total()-(est.Train+est.Eval)/2) * (1 + memplan.GCRoom)) // half the nets' room
	o := Options{Run: c, Seed: 41, Dir: c.Dir(41), Workers: 1, Memory: budget}
	_, err := Train(context.Background(), o)
	var me *memplan.MemoryError
	if !errors.As(err, &me) {
		t.Fatalf("got %v, want a MemoryError", err)
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{memlimit.Format(est.Need()), memlimit.Format(budget), "(-memory)", "training nets", "evaluation nets",
		fmt.Sprintf("-set train.batch_size=%d", me.Fits), "-no-memory-guard"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message lacks %q", want)
		}
	}
	if me.Fits < 1 || me.Fits >= 64 || me.FitEst.Need() > budget || me.FitEst.BatchSize != me.Fits {
		t.Fatalf("suggested batch size %d (needs %d, budget %d)", me.Fits, me.FitEst.Need(), budget)
	}
	// The suggestion is the largest that fits: one more does not.
	c2 := nm2(t, fmt.Sprintf("train.batch_size=%d", me.Fits+1))
	if next := estimateOf(t, c2); next.Need() <= budget {
		t.Errorf("batch size %d fits too (%d ≤ %d)", me.Fits+1, next.Need(), budget)
	}
	if _, err := os.Stat(c.Dir(41) + "/checkpoint.bin"); err == nil {
		t.Error("a refused run wrote a checkpoint")
	}
	// The guard skipped, the same run trains.
	o.NoMemoryGuard = true
	if _, err := Train(context.Background(), o); err != nil {
		t.Fatalf("without the guard: %v", err)
	}
}

// TestMemoryLimitPerRun: a run sets the Go memory limit to its estimate plus the collector's
// room, and a later run (here with the guard skipped) does not inherit it.
func TestMemoryLimitPerRun(t *testing.T) {
	defer debug.SetMemoryLimit(startLimit)
	c := nm2(t, "train.max_epochs=1")
	est := estimateOf(t, c)
	if _, err := Train(context.Background(), Options{Run: c, Seed: 41, Dir: c.Dir(41), Workers: 1}); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != min(est.Need(), startLimit) {
		t.Errorf("memory limit %d after a guarded run, want %d", got, est.Need())
	}
	c2 := nm2(t, "train.max_epochs=1")
	if _, err := Train(context.Background(), Options{Run: c2, Seed: 41, Dir: c2.Dir(41), Workers: 1, NoMemoryGuard: true}); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != startLimit {
		t.Errorf("memory limit %d after an unguarded run, want the process's %d", got, startLimit)
	}
}
