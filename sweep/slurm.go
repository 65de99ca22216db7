package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// Slurm describes the array job written for a plan.
type Slurm struct {
	Dir         string        // folder of the script, the run list, the configs and the task logs
	TrainBin    string        // the trainer binary, as the compute nodes see it
	Partition   string        // --partition ("" leaves it to the cluster's default)
	Account     string        // --account
	CPUs        int           // --cpus-per-task (≥ 1)
	Mem         string        // --mem, e.g. 16G
	GPU         string        // --gres: "auto" (gpu:1 when a job's device is cuda or auto), "none", or a literal gres such as gpu:a100:1
	Time        time.Duration // --time; 0 → the largest train.max_time + Margin
	Margin      time.Duration // added to max_time for preprocessing outside the cap, the last epoch's overrun and the final evaluation
	MaxParallel int           // --array=…%N: tasks at once (0: no limit)
	JobName     string        // --job-name
	Mismatch    string        // MismatchRefuse ("" too) or MismatchRerun, as Runner.Mismatch
}

// Script, list and folder names inside Slurm.Dir.
const (
	SlurmScript  = "sweep.sbatch"
	SlurmList    = "runs.tsv"
	SlurmConfigs = "configs"
	SlurmLogs    = "logs"
)

// DefaultMargin is the default time added to max_time.
const DefaultMargin = 30 * time.Minute

// SlurmTime formats a duration as Slurm's D-HH:MM:SS, rounded up to the minute.
func SlurmTime(d time.Duration) string {
	m := int64((d + time.Minute - 1) / time.Minute)
	days, m := m/(24*60), m%(24*60)
	return fmt.Sprintf("%d-%02d:%02d:00", days, m/60, m%60)
}

var gresRe = regexp.MustCompile(`^[A-Za-z0-9_:.\-,]+$`)
var memRe = regexp.MustCompile(`^[0-9]+[KMGT]?$`)
var plainRe = regexp.MustCompile(`^[A-Za-z0-9_.\-]+$`)

// resources checks the options against the jobs and returns the time limit and gres ("" for none).
func (s *Slurm) resources(jobs []Job) (time.Duration, string, error) {
	if s.CPUs < 1 {
		return 0, "", fmt.Errorf("-cpus %d: want ≥ 1", s.CPUs)
	}
	if !memRe.MatchString(s.Mem) {
		return 0, "", fmt.Errorf("-mem %q: want a number with an optional K, M, G or T suffix", s.Mem)
	}
	for flag, v := range map[string]string{"-partition": s.Partition, "-account": s.Account, "-job-name": s.JobName} {
		if v != "" && !plainRe.MatchString(v) {
			return 0, "", fmt.Errorf("%s %q: only letters, digits, '_', '.', '-'", flag, v)
		}
	}
	if s.MaxParallel < 0 {
		return 0, "", fmt.Errorf("-max-parallel %d: want ≥ 0", s.MaxParallel)
	}
	limit := s.Time
	if limit == 0 {
		var maxT time.Duration
		for _, j := range jobs {
			if j.Config == nil || j.Config.Train.MaxTime <= 0 {
				return 0, "", fmt.Errorf("run %s has no train.max_time: give -time", j.Name)
			}
			maxT = max(maxT, j.Config.Train.MaxTime)
		}
		limit = maxT + s.Margin
	}
	var gres string
	switch s.GPU {
	case "auto", "":
		for _, j := range jobs {
			if d := j.Device(); d == "cuda" || d == "auto" {
				gres = "gpu:1"
			}
		}
	case "none":
	default:
		if !gresRe.MatchString(s.GPU) {
			return 0, "", fmt.Errorf("-gres %q: not a gres specification", s.GPU)
		}
		gres = s.GPU
	}
	return limit, gres, nil
}

// WriteSlurm writes, into s.Dir, the resolved config of every run (configs/<name>.yaml, budget
// keys at their protocol values), the run list (runs.tsv: one line per array task,
// "config<TAB>seed<TAB>run dir<TAB>departures", absolute paths, the departures as key=value
// words passed to the trainer as -set) and the array-job script (sweep.sbatch). Jobs already
// finished, or diverged (see Inspect), are left out of the list; a Mismatch is refused (an error
// naming every such job) or, with s.Mismatch rerun, set aside (SetAside) and listed. It returns the
// script's path and the number of tasks (0: nothing to do, no script written).
func WriteSlurm(p *Plan, s Slurm, write ConfigWriter) (script string, tasks int, err error) {
	dir, err := filepath.Abs(s.Dir)
	if err != nil {
		return "", 0, err
	}
	var todo []Job
	var refused []string
	for _, j := range p.Jobs {
		st, note := Inspect(j)
		if st == Mismatch {
			if _, err := Settle(j, note, s.Mismatch, time.Now()); err != nil {
				refused = append(refused, fmt.Sprintf("%s: %v", j, err))
				continue
			}
		}
		if st != Finished && st != Diverged {
			j.ConfigPath = filepath.Join(dir, SlurmConfigs, j.Name+".yaml")
			if j.Out, err = filepath.Abs(j.Out); err != nil {
				return "", 0, err
			}
			if j.Dir, err = filepath.Abs(j.Dir); err != nil {
				return "", 0, err
			}
			if filepath.Dir(filepath.Dir(j.Dir)) != j.Out {
				return "", 0, fmt.Errorf("run %s: run dir %s is not <out>/<name>/seed<seed> under %s", j.Name, j.Dir, j.Out)
			}
			for _, f := range []string{j.ConfigPath, j.Dir} {
				if strings.ContainsAny(f, "\t\n") {
					return "", 0, fmt.Errorf("run %s: path %q has a tab or newline", j.Name, f)
				}
			}
			todo = append(todo, j)
		}
	}
	if len(refused) > 0 {
		return "", 0, fmt.Errorf("%d jobs not listed:\n  %s", len(refused), strings.Join(refused, "\n  "))
	}
	if len(todo) == 0 {
		return "", 0, nil
	}
	limit, gres, err := s.resources(todo)
	if err != nil {
		return "", 0, err
	}
	bin, err := filepath.Abs(s.TrainBin)
	if err != nil {
		return "", 0, err
	}
	if err := WriteConfigs(todo, write); err != nil {
		return "", 0, err
	}
	// Slurm does not create the folder of --output; a task without it fails silently.
	if err := os.MkdirAll(filepath.Join(dir, SlurmLogs), 0o755); err != nil {
		return "", 0, err
	}
	var list bytes.Buffer
	for _, j := range todo {
		fmt.Fprintf(&list, "%s\t%d\t%s\t%s\n", j.ConfigPath, j.Seed, j.Dir, strings.Join(j.Config.DepartureSets(), " "))
	}
	listPath := filepath.Join(dir, SlurmList)
	if err := runfiles.WriteAtomic(listPath, list.Bytes(), 0o644); err != nil {
		return "", 0, err
	}
	name := s.JobName
	if name == "" {
		name = plainRe.FindString(p.Grid)
		if name == "" {
			name = "sweep"
		}
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n", name)
	arr := fmt.Sprintf("0-%d", len(todo)-1)
	if s.MaxParallel > 0 {
		arr += fmt.Sprintf("%%%d", s.MaxParallel)
	}
	fmt.Fprintf(&b, "#SBATCH --array=%s\n", arr)
	fmt.Fprintf(&b, "#SBATCH --time=%s\n", SlurmTime(limit))
	fmt.Fprintf(&b, "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=%d\n#SBATCH --mem=%s\n", s.CPUs, s.Mem)
	if gres != "" {
		fmt.Fprintf(&b, "#SBATCH --gres=%s\n", gres)
	}
	if s.Partition != "" {
		fmt.Fprintf(&b, "#SBATCH --partition=%s\n", s.Partition)
	}
	if s.Account != "" {
		fmt.Fprintf(&b, "#SBATCH --account=%s\n", s.Account)
	}
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", shellWord(filepath.Join(dir, SlurmLogs, "%A_%a.out")))
	fmt.Fprintf(&b, `#
# Written by cmd/sweep for grid %q (%d tasks, one per run and seed). Task i runs line i+1 of
# the run list: config, seed, run dir. A task whose run already has a final result.json exits at
# once; one with a checkpoint resumes it (train -resume DIR reads the run's own config.yaml). The
# departures from the protocol (the sweep's -set on budget keys) are passed as -set, so that the
# trainer records them. Re-running "sweep -slurm" lists only the unfinished runs.
set -euo pipefail
LIST=%s
TRAIN=%s
: "${SLURM_ARRAY_TASK_ID:?run this script with sbatch (an array job)}"
line=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" "$LIST")
if [ -z "$line" ]; then
  echo "task $SLURM_ARRAY_TASK_ID: no line $((SLURM_ARRAY_TASK_ID + 1)) in $LIST" >&2
  exit 2
fi
IFS=$'\t' read -r config seed dir departures <<<"$line"
out=$(dirname "$(dirname "$dir")")
if [ -s "$dir/%s" ] && grep -Eq '"stopped_by": *"(min_lr|max_time|max_epochs)"' "$dir/%s"; then
  echo "task $SLURM_ARRAY_TASK_ID: $dir/%s exists, nothing to do"
  exit 0
fi
if [ -e "$dir/%s" ]; then
  args=(-resume "$dir")
else
  args=(-config "$config" -seed "$seed" -out "$out")
fi
for d in $departures; do
  args+=(-set "$d")
done
mkdir -p "$dir"
echo "task $SLURM_ARRAY_TASK_ID on $(hostname): $TRAIN ${args[*]}"
echo "==== $(date -Iseconds) $TRAIN ${args[*]} (slurm job ${SLURM_ARRAY_JOB_ID:-?}_$SLURM_ARRAY_TASK_ID)" >>"$dir/%s"
"$TRAIN" "${args[@]}" 2>&1 | tee -a "$dir/%s"
`, p.Grid, len(todo), shellWord(listPath), shellWord(bin),
		runfiles.ResultFile, runfiles.ResultFile, runfiles.ResultFile, runfiles.CheckpointFile, LogFile, LogFile)
	script = filepath.Join(dir, SlurmScript)
	if err := runfiles.WriteAtomic(script, []byte(b.String()), 0o755); err != nil {
		return "", 0, err
	}
	return script, len(todo), nil
}

// shellWord quotes s for bash.
func shellWord(s string) string {
	if plainPath.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var plainPath = regexp.MustCompile(`^[A-Za-z0-9_./%\-+=:,@]+$`)

// Submit runs sbatch on the script and returns the job id; env nil inherits this process's
// environment (which sbatch passes on to the tasks).
func Submit(sbatch, script string, env []string) (string, error) {
	cmd := exec.Command(sbatch, "--parsable", script)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || stderr.Len() > 0 {
			return "", fmt.Errorf("%s %s: %v: %s", sbatch, script, err, strings.TrimSpace(stderr.String()))
		}
		return "", fmt.Errorf("%s %s: %w", sbatch, script, err)
	}
	id := strings.TrimSpace(string(out))
	id, _, _ = strings.Cut(id, ";") // "jobid;cluster"
	if id == "" || strings.ContainsAny(id, " \n") {
		return "", fmt.Errorf("%s %s: unexpected output %q", sbatch, script, out)
	}
	return id, nil
}
