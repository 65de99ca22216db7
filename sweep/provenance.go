package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// What a sweep does with a job whose run directory holds a run of another config (Mismatch).
const (
	MismatchRefuse = "refuse" // leave it, report the job as failed (the default)
	MismatchRerun  = "rerun"  // move the directory aside (SetAside) and train the job afresh
)

// CheckMismatch verifies a -mismatch value.
func CheckMismatch(policy string) error {
	if policy != MismatchRefuse && policy != MismatchRerun {
		return fmt.Errorf("-mismatch %q: want %s or %s", policy, MismatchRefuse, MismatchRerun)
	}
	return nil
}

// SupersededDir is the folder, inside a run's folder, where SetAside moves run directories of
// other configs: hidden, so that tables (results.Scan) never reads them.
const SupersededDir = ".superseded"

// SetAside moves a job's run directory to <out>/<name>/.superseded/seed<S>-<UTC time> and
// returns the new path; the job's directory is then free for a fresh run.
func SetAside(j Job, now time.Time) (string, error) {
	dst := filepath.Join(filepath.Dir(j.Dir), SupersededDir, filepath.Base(j.Dir)+"-"+now.UTC().Format("20060102T150405Z"))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("setting %s aside: %w", j.Dir, err)
	}
	if err := os.Rename(j.Dir, dst); err != nil {
		return "", fmt.Errorf("setting %s aside: %w", j.Dir, err)
	}
	return dst, nil
}

// Settle applies the -mismatch policy to a job whose directory holds a run of another config
// (Inspect's Mismatch, why saying what differs): refuse is an error naming the flag that gets
// out of it; rerun moves the directory aside (SetAside) and returns where to, leaving the job
// to start afresh.
func Settle(j Job, why, policy string, now time.Time) (string, error) {
	if policy != MismatchRerun {
		return "", fmt.Errorf("%s holds a run of another config: %s (pass -mismatch %s to set it aside and train the job again)", j.Dir, why, MismatchRerun)
	}
	return SetAside(j, now)
}

// resultMismatch says why a finished result is not the job's run ("" when it is): another
// config hash (naming the keys, from the run directory's config.yaml), other departures, or no
// hash at all (a result written before runs recorded it) and a config.yaml that differs. A
// legacy result whose config.yaml matches is the job's (legacy says so).
func resultMismatch(j Job, res *runfiles.Result) (why string, legacy bool) {
	want := j.Config.Hash()
	if res.ConfigHash == "" {
		if d := configMismatch(j); d != "" {
			return "the result has no config_hash (an older run) and " + d, true
		}
		return "", true
	}
	if res.ConfigHash != want && !idleCapOnly(j, res) {
		d := configMismatch(j)
		if d == "" {
			d = "its config.yaml was changed after the run"
		}
		return "the result's config hash differs from the grid's: " + d, false
	}
	// the emulated GPU is a check of the GPU path, not a device to report from: its run is the
	// job's only when the grid asks for it
	if res.Emulated() && j.Device() != "emu" {
		return fmt.Sprintf("the result was trained on the emulated GPU (%s), a check of the GPU path; the grid's run is on device %s", res.Device, j.Device()), false
	}
	// otherwise the device is left out, as from the hash: the same run on another device is the
	// same run; so is a wall-clock cap that never acted (idleCapOnly)
	gridDeps := runfiles.BudgetDepartures(j.Config.Departures())
	if got, w := departuresText(actedDepartures(res, gridDeps)), departuresText(gridDeps); got != w {
		return fmt.Sprintf("the result departs from the protocol in %s, the grid's run in %s", got, w), false
	}
	return "", false
}

// idleCapOnly reports whether a result whose config hash differs from the job's is the job's run
// under another wall-clock cap that never acted (runfiles.Result.Binds): its config.yaml, which
// the hash was taken of, differs from the job's config in train.max_time alone, and the result
// records that departure as one that did not bind (a CPU run given -max-time 60m that converged
// in 15 minutes trained exactly as the grid's run).
func idleCapOnly(j Job, res *runfiles.Result) bool {
	run, err := config.Load(filepath.Join(j.Dir, runfiles.ConfigFile), nil)
	if err != nil || run.Hash() != res.ConfigHash {
		return false
	}
	if k := run.DiffKeys(j.Config); len(k) != 1 || k[0] != runfiles.MaxTimeKey {
		return false
	}
	for _, d := range res.Departures {
		if d.Key == runfiles.MaxTimeKey {
			return !res.Binds(d)
		}
	}
	return false
}

// actedDepartures are a result's budget departures less a wall-clock cap that never acted,
// unless the grid's run departs on that key too (then the two are compared as they are).
func actedDepartures(res *runfiles.Result, grid []runfiles.Departure) []runfiles.Departure {
	gridKeys := map[string]bool{}
	for _, d := range grid {
		gridKeys[d.Key] = true
	}
	var out []runfiles.Departure
	for _, d := range runfiles.BudgetDepartures(res.Departures) {
		if !gridKeys[d.Key] && !res.Binds(d) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// configMismatch compares the run directory's config.yaml with the job's config: "" when they
// hash alike, else what differs (or why the file cannot be read).
func configMismatch(j Job) string {
	p := filepath.Join(j.Dir, runfiles.ConfigFile)
	run, err := config.Load(p, nil)
	if err != nil {
		return fmt.Sprintf("its %s cannot be read (%v)", runfiles.ConfigFile, err)
	}
	if run.Hash() == j.Config.Hash() {
		return ""
	}
	return fmt.Sprintf("its %s has %s", runfiles.ConfigFile, strings.Join(run.Diff(j.Config), ", "))
}

// departuresText is a list, sorted, of departures as "key protocol→used, …", or "nothing".
func departuresText(ds []runfiles.Departure) string {
	if len(ds) == 0 {
		return "nothing"
	}
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%s %s→%s", d.Key, d.Protocol, d.Used)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
