package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/train"
)

// TestMarkdown: per-run mean ± population std over seeds, accuracies as fractions, MAE as it is.
func TestMarkdown(t *testing.T) {
	got := markdown([]*train.Recalibration{
		{Run: "a", Seed: 1, Metric: "accuracy", Stored: 1, Recalibrated: 100, Graphs: 100, Batches: 1},
		{Run: "a", Seed: 2, Metric: "accuracy", Stored: 3, Recalibrated: 98, Graphs: 100, Batches: 1},
		{Run: "b", Seed: 1, Metric: "mae", Stored: 0.5, Recalibrated: 0.25, Graphs: 10, Batches: 2},
	})
	for _, want := range []string{
		"| a | 2 | 0.020 ± 0.010 | 0.990 ± 0.010 |",
		"| b | 1 | 0.500 ± 0.000 | 0.250 ± 0.000 |",
		"| a | 2 | 100 | 1 | 0.030 | 0.980 |",
		"| b | 1 | 10 | 2 | 0.500 | 0.250 |",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("missing line %q in\n%s", want, got)
		}
	}
}

// TestRunDirs lists only the folders with a checkpoint and a result, sorted.
func TestRunDirs(t *testing.T) {
	root := t.TempDir()
	for dir, files := range map[string][]string{
		"b/seed1": {"checkpoint.bin", "result.json"},
		"a/seed2": {"checkpoint.bin", "result.json"},
		"a/seed3": {"checkpoint.bin"}, // interrupted
		"c/seed1": {"result.json"},    // no checkpoint kept
	} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(root, dir, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := runDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "a/seed2"), filepath.Join(root, "b/seed1")}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("runDirs = %v, want %v", got, want)
	}
	if _, err := runDirs(filepath.Join(root, "c")); err == nil {
		t.Fatal("a folder without checkpoints accepted")
	}
}

// TestRunEndToEnd recalibrates a short trained run: its stored figure is result.json's.
func TestRunEndToEnd(t *testing.T) {
	out := t.TempDir()
	c, err := config.Load("", []string{"dataset.name=neighborsmatch-2", "dataset.encoding=adj", "dataset.r=2", "train.max_epochs=2", "out=" + out})
	if err != nil {
		t.Fatal(err)
	}
	res, err := train.Train(context.Background(), train.Options{Run: c, Seed: 41, Dir: c.Dir(41), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := run([]string{"-runs", out, "-workers", "1"}, &b); err != nil {
		t.Fatal(err)
	}
	if want := "| " + res.Name + " | 41 | "; !strings.Contains(b.String(), want) {
		t.Fatalf("no row %q in\n%s", want, b.String())
	}
	// The per-seed row: graphs | batches | stored | recalibrated.
	row := strings.Fields(strings.SplitN(strings.SplitN(b.String(), "| "+res.Name+" | 41 | ", 2)[1], "\n", 2)[0])
	if got, want := row[4], fmt.Sprintf("%.3f", res.TrainMetric/100); got != want {
		t.Fatalf("stored %s, result.json %s", got, want)
	}
}
