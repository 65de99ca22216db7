// Command recalibrate evaluates finished runs' final models on their training split in
// evaluation mode twice: with the batch-norm running statistics that training left (result.json's
// train_metric) and with statistics re-estimated from the training split with the parameters
// frozen (train.Recalibrate). It reads each run folder's config.yaml and checkpoint.bin under
// -runs, changes nothing there, and prints a Markdown table (or JSON) of both figures per seed
// and per run, mean ± population std over the seeds. A report's tool: training never
// recalibrates.
//
//	go run ./cmd/recalibrate -runs runs/erdos [-json] [-out FILE]
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rewiregnn/rewiregnn/report/results"
	"github.com/rewiregnn/rewiregnn/runfiles"
	"github.com/rewiregnn/rewiregnn/train"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "recalibrate:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("recalibrate", flag.ContinueOnError)
	runs := fl.String("runs", "", "folder of run folders (<run>/seed<seed>/ with config.yaml, checkpoint.bin and result.json)")
	asJSON := fl.Bool("json", false, "print a JSON array instead of Markdown")
	out := fl.String("out", "", "write to this file (replaced only on success) instead of standard output")
	workers := fl.Int("workers", 0, "preprocessing workers (0: all cores)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *runs == "" || fl.NArg() > 0 {
		return errors.New("usage: recalibrate -runs DIR [-json] [-out FILE]")
	}
	dirs, err := runDirs(*runs)
	if err != nil {
		return err
	}
	var rs []*train.Recalibration
	for _, d := range dirs {
		rc, err := train.RecalibrateRun(d, *workers, nil)
		if err != nil {
			return err
		}
		rs = append(rs, rc)
	}
	text := markdown(rs)
	if *asJSON {
		b, err := json.MarshalIndent(rs, "", "  ")
		if err != nil {
			return err
		}
		text = string(b) + "\n"
	}
	if *out == "" {
		_, err := io.WriteString(stdout, text)
		return err
	}
	return runfiles.WriteAtomic(*out, []byte(text), 0o644)
}

// runDirs lists, sorted, the folders under root that hold a finished run with its checkpoint.
func runDirs(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != runfiles.CheckpointFile {
			return err
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, runfiles.ResultFile)); err == nil {
			dirs = append(dirs, dir)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("runs %s: %w", root, err)
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("runs %s: no finished run with a %s", root, runfiles.CheckpointFile)
	}
	slices.Sort(dirs)
	return dirs, nil
}

// scale turns a result.json figure into the tables' unit: accuracies as fractions.
func scale(r *train.Recalibration, v float64) float64 {
	if !runfiles.IsAccuracy(r.Metric) {
		return v
	}
	return v / 100
}

// markdown is the per-run table (mean ± population std over seeds) and the per-seed one.
func markdown(rs []*train.Recalibration) string {
	var b strings.Builder
	b.WriteString("Training split in evaluation mode: with the batch-norm running statistics training left " +
		"(result.json's train_metric) and with statistics re-estimated from the training split, parameters frozen " +
		"(cmd/recalibrate); accuracies as fractions.\n\n")
	b.WriteString("| run | seeds | stored statistics | recalibrated |\n|---|---|---|---|\n")
	var names []string
	by := map[string][]*train.Recalibration{}
	for _, r := range rs {
		if by[r.Run] == nil {
			names = append(names, r.Run)
		}
		by[r.Run] = append(by[r.Run], r)
	}
	for _, name := range names {
		g := by[name]
		var st, rc []float64
		for _, r := range g {
			st, rc = append(st, scale(r, r.Stored)), append(rc, scale(r, r.Recalibrated))
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", name, len(g), meanStd(st), meanStd(rc))
	}
	b.WriteString("\n| run | seed | graphs | batches | stored statistics | recalibrated |\n|---|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.3f | %.3f |\n", r.Run, r.Seed, r.Graphs, r.Batches, scale(r, r.Stored), scale(r, r.Recalibrated))
	}
	return b.String()
}

// meanStd formats the mean ± population standard deviation (results.MeanStd).
func meanStd(v []float64) string {
	st := results.MeanStd(v)
	return fmt.Sprintf("%.3f ± %.3f", st.Mean, st.Std)
}
