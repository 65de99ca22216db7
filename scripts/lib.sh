# lib.sh: helpers sourced by the reproduction scripts in this folder; not run on its own.
#
# Every script sources it first thing: it turns on strict mode, moves to the repository root
# (so the scripts work from any folder; relative paths given to them are then relative to the
# root), and defines:
#   GO      the go command (environment GO, default go)
#   DATA    the benchmark data folder (environment REWIREGNN_DATA or DATA, default ../shared/data)
#   run     prints a command (prefixed "+ ") on standard error, then runs it
#   die     prints a message on standard error and exits with status 2
#   usage   prints the calling script's header comment (its usage)
#   zinc_results SRC RESULTS GRID  keeps SRC's finished runs in RESULTS/runs, measures the ZINC
#           densities at r = 1 and 4 (RESULTS/zinc-stats.json) and writes GRID's tables from the
#           kept runs into RESULTS (zinc-gpu.sh, zinc-cpu.sh)
#   keep_runs SRC DST  copies each finished run's config.yaml (its data and cache folders reset to
#           the defaults), metrics.jsonl and result.json from SRC/<run>/seed<seed> to
#           DST/<run>/seed<seed> (the files the tables are made from)
#   held DIR  whether a trainer holds run folder DIR (its lock); keep_runs and park_runs skip it
#   park_runs SRC DST  copies each interrupted run's whole state (with its checkpoint) from SRC to
#           DST, to be committed, and drops from DST the parked runs that have since finished
#   unpark_runs DST SRC  copies each parked run from DST back to SRC where SRC lacks it, so that a
#           session on a fresh machine resumes what an earlier session parked
set -euo pipefail

SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! grep -q '^module github.com/rewiregnn/rewiregnn$' go.mod 2>/dev/null; then
	echo "$(basename "$0"): $(pwd) is not the rewiregnn repository root" >&2
	exit 2
fi

GO=${GO:-go}
DATA=${REWIREGNN_DATA:-${DATA:-../shared/data}}

run() {
	printf '+' >&2
	printf ' %q' "$@" >&2
	printf '\n' >&2
	"$@"
}

usage() {
	sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$SELF"
}

die() {
	echo "$(basename "$0"): $*" >&2
	exit 2
}

# need_data DATASET: fails early, naming the folder, when a file-backed dataset's files are missing.
need_data() {
	[[ -d "$DATA/$1" ]] || die "no $DATA/$1: point REWIREGNN_DATA (or DATA) at the benchmark data folder"
}

# copy_run FROM TO [FILE...]: a run folder's metrics.jsonl, result.json and those of the FILEs
# (named in FROM) that it has copied to TO, and its config.yaml with the data and cache folders, which are this
# machine's (and outside the config hash), reset to the defaults, and an absolute out folder to
# the default runs, so that the copy names no local path and resolves again wherever it is read
# (keep_runs, park_runs, campaign.sh collect and adopt).
copy_run() {
	local from=$1 to=$2 f extra=()
	shift 2
	# result.json too is optional: a trainer killed without a word (its machine stopped) leaves
	# only its metrics and its last checkpoint
	for f in result.json "$@"; do if [[ -f $from/$f ]]; then extra+=("$from/$f"); fi; done
	mkdir -p "$to"
	cp "$from/metrics.jsonl" "${extra[@]}" "$to/"
	sed -e 's#^  dir: .*#  dir: ""#' -e 's#^  cache: .*#  cache: auto#' -e 's#^out: /.*#out: runs#' "$from/config.yaml" >"$to/config.yaml"
}

# held DIR: whether a trainer holds the run folder DIR (the flock on its lock file), said on
# standard error; such a run is skipped by keep_runs and park_runs, since a resumed run keeps its
# last result.json while it trains and its files may be an epoch apart while it writes them. A lock
# file left by a killed trainer is not held (the kernel dropped its flock); without flock(1) any
# lock file counts as held.
held() {
	[[ -e $1/lock ]] || return 1
	if command -v flock >/dev/null && flock -n "$1/lock" true 2>/dev/null; then return 1; fi
	echo "skipping $1: a trainer holds it ($(<"$1/lock"))" >&2
}

# keep_runs SRC DST: the finished runs' small files, kept beside the tables made from them.
keep_runs() {
	local src=$1 dst=$2 n=0 d
	[[ -d $src ]] || die "no runs folder $src"
	for d in "$src"/*/seed*; do
		[[ -f $d/result.json ]] || continue
		! held "$d" || continue
		# an interrupted run (signal) or a failed one (nan) is not a result: it stays to be resumed
		! grep -qE '"stopped_by": "(signal|nan)"' "$d/result.json" || continue
		copy_run "$d" "$dst/${d#"$src"/}"
		n=$((n + 1))
	done
	echo "collected $n finished runs into $dst" >&2
}

# park_runs SRC DST: long runs outlive a session, and a session's machine (with its gitignored
# runs folder) does not outlive it. Each run in SRC stopped by a signal (interrupted, checkpointed)
# is copied whole, but for its lock, to DST/<run>/seed<seed>, where it can be committed and later
# resumed (unpark_runs); a run that has since finished, or diverged, is no longer parked; a run a
# trainer holds is left alone (held).
park_runs() {
	local src=$1 dst=$2 n=0 d to
	[[ -d $src ]] || die "no runs folder $src"
	for d in "$src"/*/seed*; do
		[[ -f $d/result.json ]] || continue
		! held "$d" || continue
		to=$dst/${d#"$src"/}
		if ! grep -q '"stopped_by": "signal"' "$d/result.json"; then
			[[ ! -d $to ]] || { rm -r "$to"; echo "unparked $to: its run has finished" >&2; }
			continue
		fi
		[[ -f $d/checkpoint.bin ]] || die "$d: interrupted but has no checkpoint.bin to park"
		copy_run "$d" "$to" checkpoint.bin
		n=$((n + 1))
	done
	# drop the run folders left empty by finished runs
	[[ ! -d $dst ]] || find "$dst" -mindepth 1 -type d -empty -delete
	echo "parked $n interrupted runs in $dst" >&2
}

# unpark_runs DST SRC: each run parked in DST copied to SRC/<run>/seed<seed> unless SRC already has
# that run folder (a local run is as new as the parked one or newer).
unpark_runs() {
	local dst=$1 src=$2 n=0 d to
	[[ -d $dst ]] || return 0
	for d in "$dst"/*/seed*; do
		[[ -f $d/checkpoint.bin ]] || continue
		to=$src/${d#"$dst"/}
		[[ ! -e $to ]] || continue
		mkdir -p "$to"
		cp "$d"/* "$to/"
		n=$((n + 1))
	done
	echo "restored $n parked runs into $src" >&2
}

# zinc_results SRC RESULTS GRID: a ZINC slice at r = 1 and 4 (zinc-gpu, zinc-cpu) from its runs to
# its results folder.
zinc_results() {
	local src=$1 results=$2 grid=$3 here
	here=$(dirname "$SELF")
	keep_runs "$src" "$results/runs"
	"$here/stats.sh" -d zinc -s all -r 1,4 -j -o "$results/zinc-stats.json"
	"$here/tables.sh" -r "$results/runs" -o "$results" "$grid"
}
