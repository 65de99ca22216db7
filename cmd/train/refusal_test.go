package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// suggestionRE finds the ways out a refusal names: each in backquotes, either a whole command
// ("`train -resume DIR`") or flags to add to the refused command ("add `-restart`").
var suggestionRE = regexp.MustCompile("`([^`]+)`")

// nm2Base is NeighborsMatch-2 as the README's first command trains it, without a budget.
func nm2Base(out string) []string {
	return []string{"-set", "dataset.name=neighborsmatch-2", "-set", "dataset.encoding=adj", "-set", "dataset.r=2", "-seed", "41", "-quiet", "-out", out}
}

// nm2Dir is the run directory of nm2Base in out.
func nm2Dir(out string) string {
	return filepath.Join(out, "neighborsmatch-2-gatedgcn-adj-r2", "seed41")
}

// refusal is a situation in which the trainer refuses a command: setup builds it in out and
// returns the refused command's arguments; fill replaces placeholders of the suggestions.
type refusal struct {
	name     string
	setup    func(t *testing.T, out string) []string
	mentions []string // what the message must say besides its suggestions
	want     int      // how many suggestions it names
	fill     func(out string) map[string]string
}

// trained runs the command and fails unless it succeeds.
func trained(t *testing.T, args ...string) {
	t.Helper()
	if code, stderr := runCaptured(t, args...); code != 0 {
		t.Fatalf("%v: exit %d\n%s", args, code, stderr)
	}
}

// edit rewrites a file of the run directory with f.
func edit(t *testing.T, path string, f func(string) string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(f(string(b))), 0o600); err != nil {
		t.Fatal(err)
	}
}

func refusals() []refusal {
	short := func(t *testing.T, out string) {
		trained(t, append(nm2Base(out), "-epochs", "2")...)
	}
	return []refusal{
		{name: "a solved run, the same command again (README's first command)", want: 2,
			mentions: []string{"stopped by train_accuracy after ", "-set train.stop_accuracy=0"},
			setup: func(t *testing.T, out string) []string {
				trained(t, append(nm2Base(out), "-epochs", "100")...)
				return append(nm2Base(out), "-epochs", "100")
			}},
		{name: "a solved run resumed", want: 2, mentions: []string{"it is solved"},
			setup: func(t *testing.T, out string) []string {
				trained(t, append(nm2Base(out), "-epochs", "20", "-set", "train.stop_accuracy=20")...)
				return []string{"-resume", nm2Dir(out), "-epochs", "25"}
			}},
		{name: "a run at max_epochs, the same command again", want: 2, mentions: []string{"stopped by max_epochs after 2 epochs", "-epochs 5"},
			setup: func(t *testing.T, out string) []string {
				short(t, out)
				return append(nm2Base(out), "-epochs", "2")
			}},
		{name: "a run at max_epochs resumed", want: 2, mentions: []string{"train.max_epochs 2 is spent"},
			setup: func(t *testing.T, out string) []string {
				short(t, out)
				return []string{"-resume", nm2Dir(out)}
			}},
		{name: "a run at max_time, the same command again", want: 2, mentions: []string{"stopped by max_time", "-max-time 1m0s"},
			setup: func(t *testing.T, out string) []string {
				trained(t, append(nm2Base(out), "-epochs", "3", "-max-time", "1ms")...)
				return append(nm2Base(out), "-epochs", "3", "-max-time", "1ms")
			}},
		{name: "a run at min_lr resumed", want: 1, mentions: []string{"below train.min_lr", "neither -epochs nor -max-time"},
			setup: func(t *testing.T, out string) []string {
				trained(t, append(nm2Base(out), "-epochs", "30", "-set", "train.min_lr=0.001", "-set", "train.patience=0",
					"-set", "dataset.val_fraction=0.2", "-set", "train.monitor=val_loss")...)
				return []string{"-resume", nm2Dir(out), "-epochs", "60"}
			}},
		{name: "an interrupted run, the same command again", want: 2, mentions: []string{"of an unfinished run"},
			setup: func(t *testing.T, out string) []string {
				short(t, out)
				path := filepath.Join(nm2Dir(out), runfiles.ResultFile)
				res, err := runfiles.ReadResult(path)
				if err != nil {
					t.Fatal(err)
				}
				res.StoppedBy = runfiles.StopSignal
				if err := runfiles.WriteResult(path, res); err != nil {
					t.Fatal(err)
				}
				return append(nm2Base(out), "-epochs", "2")
			}},
		{name: "a corrupt checkpoint resumed", want: 1, mentions: []string{"checksum mismatch"},
			setup: func(t *testing.T, out string) []string {
				short(t, out)
				edit(t, filepath.Join(nm2Dir(out), runfiles.CheckpointFile), func(s string) string { return s[:len(s)/2] })
				return []string{"-resume", nm2Dir(out), "-epochs", "4"}
			}},
		{name: "config.yaml's dataset.r edited, resumed", want: 1, mentions: []string{"differs from the one its checkpoint was trained with: dataset.r 3 (want 2)"},
			setup: func(t *testing.T, out string) []string {
				short(t, out)
				edit(t, filepath.Join(nm2Dir(out), runfiles.ConfigFile), func(s string) string { return strings.Replace(s, "\n  r: 2\n", "\n  r: 3\n", 1) })
				return []string{"-resume", nm2Dir(out), "-epochs", "4"}
			}},
		{name: "another config over a finished run of the same name", want: 1, mentions: []string{"holds a run of another config", "model.dropout 0.1 (want 0.0)"},
			setup: func(t *testing.T, out string) []string {
				trained(t, append(nm2Base(out), "-epochs", "2", "-set", "model.dropout=0.1")...)
				return append(nm2Base(out), "-epochs", "2")
			}},
		{name: "-resume with another seed", want: 1, mentions: []string{"the checkpoint is of seed 41, not 12", "drop -seed 12"},
			setup: func(t *testing.T, out string) []string {
				short(t, out)
				return []string{"-resume", nm2Dir(out), "-seed", "12", "-epochs", "4"}
			}},
		{name: "metrics.jsonl lacks epochs the checkpoint covers", want: 1, mentions: []string{"holds the lines of 1 epoch, the checkpoint covers 2"},
			setup: func(t *testing.T, out string) []string {
				short(t, out)
				edit(t, filepath.Join(nm2Dir(out), runfiles.MetricsFile), func(s string) string { return s[:strings.IndexByte(s, '\n')+1] })
				return []string{"-resume", nm2Dir(out), "-epochs", "4"}
			}},
		{name: "a config.yaml that does not load", want: 1, mentions: []string{"bogus"},
			setup: func(t *testing.T, out string) []string {
				short(t, out)
				edit(t, filepath.Join(nm2Dir(out), runfiles.ConfigFile), func(s string) string { return s + "bogus: 1\n" })
				return []string{"-resume", nm2Dir(out)}
			},
			fill: func(out string) map[string]string {
				file := filepath.Join(out, "nm2.yaml")
				os.WriteFile(file, []byte("dataset: {name: neighborsmatch-2, encoding: adj, r: 2}\ntrain: {max_epochs: 3}\n"), 0o644)
				return map[string]string{"FILE": file}
			}},
		{name: "a run that diverged in its first epoch", want: 1, mentions: []string{"nothing is resumable", "no checkpoint was written", "config.yaml"},
			setup: func(t *testing.T, out string) []string {
				return append(nm2Base(out), "-epochs", "2", "-set", "train.lr=1e4") // 1e3 trains
			}},
		{name: "-restart of a folder not named seed<N>", want: 1, mentions: []string{"not seed<N>"},
			setup: func(t *testing.T, out string) []string {
				short(t, out)
				other := filepath.Join(out, "other")
				os.Mkdir(other, 0o755)
				b, _ := os.ReadFile(filepath.Join(nm2Dir(out), runfiles.ConfigFile))
				os.WriteFile(filepath.Join(other, runfiles.ConfigFile), b, 0o644)
				return []string{"-resume", other, "-restart"}
			},
			fill: func(string) map[string]string { return map[string]string{"N": "41"} }},
	}
}

// TestRefusalsAreFollowable: every refusal of the trainer that names a way out names it as a
// command, and each such command, followed in a fresh copy of the situation, succeeds.
func TestRefusalsAreFollowable(t *testing.T) {
	if testing.Short() {
		t.Skip("trains many short runs")
	}
	for _, c := range refusals() {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			args := c.setup(t, out)
			code, stderr := runCaptured(t, args...)
			if code == 0 {
				t.Fatalf("%v was not refused", args)
			}
			for _, m := range c.mentions {
				if !strings.Contains(stderr, m) {
					t.Errorf("the refusal does not say %q:\n%s", m, stderr)
				}
			}
			found := suggestionRE.FindAllStringSubmatch(stderr, -1)
			if len(found) != c.want {
				t.Fatalf("%d suggestions, want %d:\n%s", len(found), c.want, stderr)
			}
			for _, m := range found {
				follow(t, c, out, args, m[1])
			}
		})
	}
}

// follow copies the situation of c in out (the refused command refused) to a new folder and
// runs suggestion there: a whole command, or the refused command with the suggested flags added.
func follow(t *testing.T, c refusal, out string, refused []string, suggestion string) {
	t.Helper()
	fresh := filepath.Join(t.TempDir(), "out")
	if err := os.CopyFS(fresh, os.DirFS(out)); err != nil {
		t.Fatal(err)
	}
	var fill map[string]string
	if c.fill != nil {
		fill = c.fill(fresh)
	}
	var args []string
	if rest, ok := strings.CutPrefix(suggestion, "train "); ok {
		args = strings.Fields(rest)
	} else {
		args = append(slices.Clone(refused), strings.Fields(suggestion)...)
	}
	for i, a := range args {
		a = strings.ReplaceAll(a, out, fresh)
		if v, ok := fill[a]; ok {
			a = v
		}
		args[i] = a
	}
	if code, stderr := runCaptured(t, append(args, "-quiet")...); code != 0 {
		t.Errorf("following %q: %v exits %d\n%s", suggestion, args, code, stderr)
	}
}
