#!/usr/bin/env bash
# campaign.sh: turn short GPU windows into finished paper cells. A priority queue of (run, seed)
# jobs (configs/campaign/queue.txt) is bundled here, run there for a wall-clock budget with
# several trainers sharing the GPU, packed, and collected back here; a run that does not finish
# in one window is checkpointed (SIGTERM) and resumed in the next (docs/campaign.md).
#
#   scripts/campaign.sh jobs [-q QUEUE] [-n N]            # here: the next window's jobs and why
#   scripts/campaign.sh bundle DIR [-q QUEUE] [-n N]      # here: DIR/campaign, to carry there
#   campaign.sh run BUNDLE OUT -b SECONDS [-k K] [-m MARGIN] [-s MINSTART] [-d DEVICE]   # there
#   scripts/campaign.sh collect PACKDIR                   # here: merge what came back
#   scripts/campaign.sh adopt SRC GRID [RESULTS-DIR]      # here: merge CPU runs (train -out SRC)
#   scripts/campaign.sh cpu start (-b BUDGET | -u END) [-k K] [-q QUEUE]   # here, in the background
#   scripts/campaign.sh cpu status | cpu stop | cpu collect
#   scripts/campaign.sh cpu running                        # exit 0 while a CPU window runs
#
# jobs, bundle (need Go): the queue's lines expanded, in order, into (grid, run, seed) jobs; a job
# whose run is finished anywhere under the results root (RESULTS/*/runs/<run>/seed<seed>) or
# diverged (RESULTS/*/diverged/…) is skipped; a job parked unfinished (RESULTS/*/unfinished/…,
# with its checkpoint) is resumed; the rest are new. Resumed jobs come first, then new ones in
# queue order; at most N (default 40). bundle builds the trainer (CGO_ENABLED=0) and copies it,
# this script, the resolved configs (sweep -dry-run -write-configs), the parked runs and the data
# folders the jobs need into DIR/campaign, with DIR/campaign/jobs.txt and BUILD-INFO; it refuses
# a bundle over 60 MiB.
#
# run (no Go needed): from BUNDLE, starts the jobs in order, K trainers at once (default 6), each
# with -device DEVICE (default cuda) and its log in <run dir>/train.log; no job starts with less
# than MINSTART seconds left before the stop (default 150); every trainer still running gets
# SIGTERM MARGIN seconds (default 30) before the budget ends, checkpoints and exits (status 3).
# A CLUSTER or PATTERN run that finishes writes its test predictions (train -predict, for the
# homophily tables). Then it packs every run the window touched (config.yaml, metrics.jsonl,
# result.json, train.log, predictions.bin, and checkpoint.bin of the unfinished) with a SHA-256 manifest into OUT/pack.tar.gz.N (parts of
# at most 15 MiB, at most 6 of them), and writes OUT/campaign.log (one line per event) and
# OUT/summary.txt (per job: how it ended, epochs, seconds, preprocessing; the window's overhead).
#
# collect: checks a pack's manifest, then merges each run into its results folder
# (RESULTS/<grid> unless the queue line says results=DIR): a finished run into runs/ (only ever
# adding: a run already there is left as it is, and one that differs is reported and the
# collect fails), a diverged one (stopped_by nan) into diverged/, an interrupted one with its
# checkpoint into unfinished/ (replacing an older parked copy, never a newer one); a run that
# finishes leaves unfinished/. A run stopped at a wall-clock cap shorter than the protocol's (a CPU
# run given -max-time 60m) is parked too, and resumed with the grid's cap (-max-time 12h). The
# window's summary and log go to RESULTS/campaign/windows/. adopt merges the runs of a local runs
# folder the same way.
#
# cpu (the CPU mode, for a development machine's idle cores): start bundles the CPU queue
# (configs/campaign/cpu.txt; -q another) into CAMPAIGN_CPU_DIR (default .campaign/cpu) and runs
# it there in the background with -d cpu: K trainers (default 2, at most one per core) at nice 19,
# each single-threaded (GOMAXPROCS=1), until -b BUDGET (seconds, 90m, 2h30m: counted from the
# trainers' start, after the bundle) or -u END (a time date(1) reads: the window's end, bundle
# included); SIGTERM -m seconds before the end (default 60), no job starting with under -s seconds
# left (default 120), then the pack. Every trainer checkpoints after each epoch and at least every
# 10 minutes inside one. start is refused while a window runs (a flock held by the runner and its
# trainers) and while the last window is not collected. status: what runs, and each run's epochs.
# stop: SIGTERM now (the trainers checkpoint, the window packs). collect: merges the pack as
# collect does, and prints what changed; a window whose machine stopped abruptly (no pack) is
# packed first from each run's last checkpoint.
# Both unfinished/ and the windows are committed: a GPU window's next chance may come in another
# session, on a fresh clone. Both collects and adopt, into the repository's docs/results, then
# remake the table of each grid whose runs/ changed (scripts/tables.sh GRID) and rewrite the
# figures the docs quote (cmd/docfacts -w), printing what they rewrote: a doc left quoting an old
# figure fails the suite. The prose around the figures is the committer's to read.
#
# Queue lines: GRID RUN-REGEX [SEEDS] [key=value ...] [results=DIR]; GRID a grid of
# configs/grids (table-cluster …), RUN-REGEX an extended regular expression matched against the
# whole run name (cluster-gatedgcn-lp-r3, aqsol-gatedgcn-.*-r[1-4]), SEEDS comma-separated or
# "all" (the grid's seeds, the default); key=value are -set overrides given to sweep and trainer
# (meant for budget keys, recorded as departures; another key makes runs of another config); results=DIR a results folder other than
# RESULTS/GRID. '#' starts a comment.
#
# Environment: GO, REWIREGNN_DATA or DATA (data folder, default ../shared/data), CAMPAIGN_RESULTS
# (the results root, default docs/results), CAMPAIGN_QUEUE (default configs/campaign/queue.txt).
set -uo pipefail

MAX_BUNDLE=$((60 * 1024 * 1024)) # bytes
PART=$((15 * 1024 * 1024))        # bytes per pack part
MAX_PARTS=${CAMPAIGN_MAX_PARTS:-6} # OUT also holds campaign.log and summary.txt: 8 files back

die() {
	echo "campaign: $*" >&2
	exit 2
}
now() { date +%s; }
stamp() { date -u +%Y-%m-%dT%H:%M:%SZ; }

usage() {
	sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
}

# ------------------------------------------------------------------ here: jobs, bundle ----

# repo_root: the verbs run here take scripts/lib.sh (it moves to the repository root and gives
# GO, DATA, copy_run and held); the run verb needs nothing but this file.
repo_root() {
	# shellcheck source=lib.sh
	source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" || die "no scripts/lib.sh beside the script"
	set +e # lib.sh's strict mode; this script checks its commands itself
	RESULTS=${CAMPAIGN_RESULTS:-docs/results}
	QUEUE=${CAMPAIGN_QUEUE:-configs/campaign/queue.txt}
}

# find_run KIND NAME SEED: the first RESULTS/*/KIND/NAME/seedSEED folder, or nothing.
find_run() {
	local d
	for d in "$RESULTS"/*/"$1"/"$2"/seed"$3"; do
		[[ -d $d ]] && { echo "$d"; return 0; }
	done
	return 1
}

# finished DIR: whether DIR holds a finished run (a result not stopped by a signal or a NaN).
finished() {
	[[ -f $1/result.json ]] && ! grep -qE '"stopped_by": *"(signal|nan)"' "$1/result.json"
}

# plan_jobs WORKDIR: expands the queue into WORKDIR/jobs.txt, one job a line, tab-separated:
# grid, run, seed, mode (new|resume), results folder, the parked run's folder (resume) or "-",
# the trainer's arguments (relative to the bundle). Writes the resolved configs under
# WORKDIR/runs/<grid>/.sweep/configs. Prints one line per queue job with its state.
plan_jobs() {
	local work=$1 max=$2 sweepbin line where grid re seeds results sets tok
	queue_lines "$QUEUE" >"$work/queue.lines" || exit 2
	sweepbin=$work/.sweep-bin
	CGO_ENABLED=0 "$GO" build -o "$sweepbin" ./cmd/sweep || die "go build ./cmd/sweep failed"
	local resume=() fresh=() seen=" "
	while IFS=$'\t' read -r where line; do
		line=${line%%#*}
		read -r -a toks <<<"$line"
		[[ ${#toks[@]} -gt 0 ]] || continue
		[[ ${#toks[@]} -ge 2 ]] || die "$where: want GRID RUN-REGEX [SEEDS] [key=value ...] [results=DIR], or include FILE"
		grid=${toks[0]} re=${toks[1]} seeds=all results=$RESULTS/${toks[0]} sets=()
		[[ -f configs/grids/$grid.yaml ]] || die "$where: no grid configs/grids/$grid.yaml"
		for tok in "${toks[@]:2}"; do
			case $tok in
			results=*) results=${tok#results=} ;;
			*=*) sets+=(-set "$tok") ;;
			all | [0-9]*) seeds=$tok ;;
			*) die "$where: $tok is neither SEEDS, key=value nor results=DIR" ;;
			esac
		done
		[[ $seeds == all || $seeds =~ ^[0-9]+(,[0-9]+)*$ ]] || die "$where: seeds $seeds: want all or 41,95,…"
		local dry n=0
		dry=$(cd "$work" && "$sweepbin" -grid "$OLDPWD/configs/grids/$grid.yaml" -out "runs/$grid" "${sets[@]}" -dry-run -write-configs 2>&1) ||
			die "$where: sweep -grid configs/grids/$grid.yaml -dry-run failed: $dry"
		# Job lines and their trainer command lines alternate: "[i/n] state NAME seed S …", "train ARGS".
		local name= seed= args
		while IFS= read -r l; do
			if [[ $l =~ ^\[[0-9]+/[0-9]+\]\ +[a-z]+\ +([^ ]+)\ seed\ ([0-9]+)\  ]]; then
				name=${BASH_REMATCH[1]} seed=${BASH_REMATCH[2]}
				continue
			fi
			[[ -n $name && $l =~ ^\ +train\ (.*)$ ]] || continue
			args=${BASH_REMATCH[1]}
			local this=$name s=$seed
			name=
			[[ $this =~ ^($re)$ ]] || continue
			[[ $seeds == all || ",$seeds," == *",$s,"* ]] || continue
			n=$((n + 1))
			[[ $seen != *" $this/$s "* ]] || continue
			seen+="$this/$s "
			local d
			if d=$(find_run runs "$this" "$s") && finished "$d"; then
				echo "done      $grid $this seed $s ($d)"
			elif d=$(find_run diverged "$this" "$s"); then
				echo "diverged  $grid $this seed $s ($d: not retried)"
			elif d=$(find_run unfinished "$this" "$s") && [[ -f $d/checkpoint.bin ]]; then
				# A run parked at a shorter wall-clock cap (a CPU run's) resumes under the grid's.
				local cap want extend=
				cap=$(sed -n 's/^  max_time: *//p' "$d/config.yaml")
				want=$(sed -n 's/^  max_time: *//p' "$work/runs/$grid/.sweep/configs/$this.yaml")
				[[ -z $want || $cap == "$want" ]] || extend=" -max-time $want"
				echo "resume    $grid $this seed $s ($d, $(wc -l <"$d/metrics.jsonl") epochs${extend:+, cap $cap extended to $want})"
				resume+=("$(printf '%s\t%s\t%s\tresume\t%s\t%s\t-resume runs/%s/%s/seed%s%s' "$grid" "$this" "$s" "$results" "$d" "$grid" "$this" "$s" "$extend")")
			else
				echo "new       $grid $this seed $s"
				fresh+=("$(printf '%s\t%s\t%s\tnew\t%s\t-\t%s' "$grid" "$this" "$s" "$results" "$args")")
			fi
		done <<<"$dry"
		((n > 0)) || die "$where: no run of grid $grid matches ^($re)\$ with seeds $seeds"
	done <"$work/queue.lines"
	rm -f "$work/queue.lines"
	rm -f "$sweepbin"
	: >"$work/jobs.txt"
	local j k=0
	for j in "${resume[@]}" "${fresh[@]}"; do
		((k < max)) || break
		printf '%s\n' "$j" >>"$work/jobs.txt"
		k=$((k + 1))
	done
	echo "jobs: ${#resume[@]} to resume, ${#fresh[@]} new; the window's list holds $k (at most $max)"
}

# queue_lines FILE [DEPTH]: FILE's lines, each as "FILE:LINE<tab>text", with every "include OTHER"
# line replaced by OTHER's lines (OTHER relative to the repository root; nested at most 4 deep):
# the GPU queue takes the CPU queue's jobs first by including it.
queue_lines() {
	local f=$1 depth=${2:-0} n=0 line
	[[ -f $f ]] || die "no queue file $f"
	((depth <= 4)) || die "$f: includes nested more than 4 deep (an include cycle?)"
	while IFS= read -r line || [[ -n $line ]]; do
		n=$((n + 1))
		if [[ $line =~ ^[[:space:]]*include([[:space:]]+([^[:space:]#]*))?[[:space:]]*(#.*)?$ ]]; then
			[[ -n ${BASH_REMATCH[2]} ]] || die "$f:$n: include needs a FILE"
			[[ -f ${BASH_REMATCH[2]} ]] || die "$f:$n: no queue file ${BASH_REMATCH[2]} to include"
			queue_lines "${BASH_REMATCH[2]}" $((depth + 1))
			continue
		fi
		printf '%s:%d\t%s\n' "$f" "$n" "$line"
	done <"$f"
}

# queue_opts ARGS: the -q QUEUE and -n N of jobs and bundle, into QUEUE and MAX.
queue_opts() {
	local opt OPTIND=1
	MAX=40
	while getopts "q:n:" opt; do
		case $opt in
		q) QUEUE=$OPTARG ;;
		n) MAX=$OPTARG ;;
		*) exit 2 ;;
		esac
	done
	shift $((OPTIND - 1))
	[[ $# -eq 0 ]] || die "unexpected argument $1"
	[[ $MAX =~ ^[1-9][0-9]*$ ]] || die "-n $MAX: want a positive whole number"
}

cmd_jobs() {
	queue_opts "$@"
	local work
	work=$(mktemp -d "${TMPDIR:-/tmp}/campaign-jobs.XXXXXX") || die mktemp
	plan_jobs "$work" "$MAX"
	echo "the window's jobs, in order:"
	cut -f1-4 "$work/jobs.txt" | sed 's/^/  /'
	rm -rf "$work"
}

cmd_bundle() {
	[[ $# -ge 1 && $1 != -* ]] || die "bundle DIR [-q QUEUE] [-n N]"
	local dir=$1
	shift
	queue_opts "$@"
	local b=$dir/campaign
	[[ ! -e $b ]] || die "$b exists: remove it first (a bundle is built whole)"
	mkdir -p "$b/runs" "$b/data" || die "cannot create $b"
	b=$(cd "$b" && pwd)
	plan_jobs "$b" "$MAX" || exit
	echo "campaign: go build ./cmd/train (CGO_ENABLED=0)"
	CGO_ENABLED=0 "$GO" build -trimpath -ldflags='-s -w' -o "$b/train" ./cmd/train || die "go build ./cmd/train failed"
	gzip -6 "$b/train" || die "gzip the trainer" # 21 MB to 7.4 (-9: 7.36, three times as long); run unpacks it
	cp "${BASH_SOURCE[0]}" "$b/campaign.sh" && chmod +x "$b/campaign.sh" || die "copy the script"
	local grid name seed mode results parked args ds
	while IFS=$'\t' read -r grid name seed mode results parked args; do
		if [[ $mode == resume ]]; then
			mkdir -p "$b/runs/$grid/$name/seed$seed"
			cp "$parked"/* "$b/runs/$grid/$name/seed$seed/" || die "copy the parked run $parked"
		fi
		ds=$(sed -n 's/^  name: *//p' "$b/runs/$grid/.sweep/configs/$name.yaml" | head -1)
		[[ -n $ds ]] || die "no dataset.name in $b/runs/$grid/.sweep/configs/$name.yaml"
		if [[ -d $DATA/$ds && ! -d $b/data/$ds ]]; then
			cp -R "$DATA/$ds" "$b/data/$ds" || die "copy $DATA/$ds"
		fi
	done <"$b/jobs.txt"
	# A parked run's config names this machine's data folder; the bundle's wins there (run sets it).
	local size
	size=$(du -sb "$b" | cut -f1)
	{
		echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
		echo "built: $(stamp) on $(uname -n)"
		echo "go: $("$GO" version)"
		# a queue outside the repository is recorded by its lines, not by this machine's path
		local qrel qhash
		qrel=$(realpath --relative-to=. "$QUEUE")
		qhash=$(sha256sum <"$QUEUE" | cut -c1-16)
		if [[ $qrel == ../* ]]; then
			echo "queue: $(basename "$QUEUE"), outside the repository ($qhash); its lines:"
			sed 's/^/  /' "$QUEUE"
		else
			echo "queue: $qrel ($qhash)"
		fi
		echo "jobs: $(wc -l <"$b/jobs.txt") ($(grep -c $'\tresume\t' "$b/jobs.txt") to resume)"
		echo "data: $(cd "$b/data" && ls | tr '\n' ' ')"
		echo "bytes: $size"
	} >"$b/BUILD-INFO"
	if ((size > MAX_BUNDLE)); then
		du -sb "$b"/* "$b"/data/* >&2
		die "$b is $size bytes, over the limit of $MAX_BUNDLE"
	fi
	echo "campaign: bundle $b, $size bytes ($((size / 1024 / 1024)) MiB), $(wc -l <"$b/jobs.txt") jobs"
	echo "there: $b/campaign.sh run $b OUT -b SECONDS [-k K]"
}

# ------------------------------------------------------------------ there: run ----

log() {
	echo "$(stamp) $*" | tee -a "$LOG" >&2
}

# field FILE KEY: a scalar of a result.json (strings unquoted), or "-".
field() {
	local v
	v=$(sed -n "s/^ *\"$2\": *\"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$1" 2>/dev/null | head -1)
	echo "${v:--}"
}

cmd_run() {
	[[ $# -ge 2 && $1 != -* && $2 != -* ]] || die "run BUNDLE OUT -b SECONDS [-k K] [-m MARGIN] [-s MINSTART] [-d DEVICE]"
	local bundle out budget= k=6 margin=30 minstart=150 device=cuda opt OPTIND=3
	bundle=$(cd "$1" 2>/dev/null && pwd) || die "no bundle folder $1"
	out=$2
	while getopts "b:k:m:s:d:" opt; do
		case $opt in
		b) budget=$OPTARG ;;
		k) k=$OPTARG ;;
		m) margin=$OPTARG ;;
		s) minstart=$OPTARG ;;
		d) device=$OPTARG ;;
		*) exit 2 ;;
		esac
	done
	[[ -n $budget ]] || die "run needs -b SECONDS (the window's wall-clock budget)"
	((BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 1))) || die "run needs bash 5.1 or later (wait -n -p), this is $BASH_VERSION"
	local v
	for v in budget k margin minstart; do
		[[ ${!v} =~ ^[0-9]+$ ]] || die "-${v:0:1} ${!v}: want a whole number of seconds (or trainers)"
	done
	((k >= 1)) || die "-k $k: want at least one trainer"
	[[ -f $bundle/jobs.txt && (-x $bundle/train || -f $bundle/train.gz) ]] || die "$bundle is not a campaign bundle (no jobs.txt or train.gz)"
	if [[ ! -x $bundle/train ]]; then
		gzip -dc "$bundle/train.gz" >"$bundle/train.tmp" && chmod +x "$bundle/train.tmp" && mv "$bundle/train.tmp" "$bundle/train" ||
			die "cannot unpack $bundle/train.gz"
	fi
	mkdir -p "$out" || die "cannot create $out"
	out=$(cd "$out" && pwd)
	LOG=$out/campaign.log
	: >"$LOG"
	local t0 stop
	t0=$(now)
	stop=$((t0 + budget - margin))
	log "window: budget ${budget}s, SIGTERM at +$((budget - margin))s, $k trainers, device $device, $(wc -l <"$bundle/jobs.txt") jobs, host $(uname -n)"
	command -v nvidia-smi >/dev/null &&
		log "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
	cd "$bundle" || die "cd $bundle"
	touch .window-start
	echo $$ >"$out/runner.pid"
	export REWIREGNN_DATA=$bundle/data
	local cache=${CAMPAIGN_CACHE:-$bundle/cache}

	declare -A job_of start_of
	local running=0 grid name seed mode results parked args left pid rc
	# SIGTERM to the runner (cpu stop) is the budget's end brought forward: no job starts any
	# more, and every trainer gets SIGTERM through its timeout, checkpoints and exits; then the
	# window packs as at its planned end.
	STOPPING=0
	trap 'stop_now' TERM INT
	stop_now() {
		((STOPPING)) && return 0
		STOPPING=1
		log "stop  requested (SIGTERM to the runner): the trainers checkpoint, no job starts"
		local p
		for p in "${!job_of[@]}"; do pkill -TERM -P "$p" 2>/dev/null; done
	}
	finish_one() { # waits for one trainer and logs how it ended
		local p=
		wait -n -p p
		rc=$?
		[[ -n ${p:-} ]] || return 0
		running=$((running - 1))
		local j=${job_of[$p]} dir res
		unset "job_of[$p]"
		dir=runs/$j
		res=$dir/result.json
		log "end   $j rc $rc after $(($(now) - ${start_of[$p]}))s: stopped_by $(field "$res" stopped_by), epochs $(field "$res" epochs), test $(field "$res" test_metric), preprocess $(field "$res" preprocess_seconds)s"
	}
	while IFS=$'\t' read -r grid name seed mode results parked args; do
		while ((running >= k)); do finish_one; done
		left=$((stop - $(now)))
		if ((STOPPING)); then
			log "skip  $grid/$name/seed$seed: stopped"
			continue
		fi
		if ((left < minstart)); then
			log "skip  $grid/$name/seed$seed: ${left}s to the stop, under $minstart"
			continue
		fi
		local dir=runs/$grid/$name/seed$seed
		mkdir -p "$dir"
		# shellcheck disable=SC2086 # args is the trainer's argument list, as sweep printed it
		job "$dir" "$stop" $args -device "$device" -cache "$cache" -quiet &
		pid=$!
		job_of[$pid]=$grid/$name/seed$seed
		start_of[$pid]=$(now)
		running=$((running + 1))
		log "start $grid/$name/seed$seed ($mode), pid $pid, SIGTERM in ${left}s"
	done <jobs.txt
	while ((running > 0)); do finish_one; done
	log "trainers done at +$(($(now) - t0))s"
	pack "$out"
	log "packed at +$(($(now) - t0))s"
	summarize "$out" "$t0"
}

# node_task DIR: whether DIR's run is on CLUSTER or PATTERN (the homophily tables read its test
# predictions).
node_task() {
	grep -qE '"dataset": *"(cluster|pattern)"' "$1/result.json" 2>/dev/null
}

# job DIR STOP TRAINER-ARGS...: one trainer, sent SIGTERM at STOP (seconds since the epoch); a
# CLUSTER or PATTERN run that finishes then writes its test predictions (train -predict) while
# time is left, since its checkpoint does not travel back.
job() {
	local dir=$1 stop=$2 rc
	shift 2
	timeout --preserve-status -s TERM -k 45 $((stop - $(now))) ./train "$@" >>"$dir/train.log" 2>&1 </dev/null
	rc=$?
	if ((rc == 0)) && node_task "$dir"; then
		if ((stop - $(now) <= 5)); then
			log "predict ${dir#runs/}: no time left for train -predict; its checkpoint is packed instead"
		elif ! timeout -s TERM -k 10 $((stop - $(now))) ./train -predict "$dir" >>"$dir/train.log" 2>&1 </dev/null; then
			log "predict ${dir#runs/}: train -predict failed (its train.log says why); its checkpoint is packed instead"
		fi
	fi
	return $rc
}

# touched: the run folders the window touched (a trainer wrote their train.log), sorted.
touched() {
	find runs -path '*/.sweep' -prune -o -name train.log -newer .window-start -printf '%h\n' | sort
}

# pack OUT: every run folder the window touched, into OUT/pack.tar.gz.N with MANIFEST.sha256.
pack() {
	local out=$1 d files=() f
	while IFS= read -r d; do
		[[ -f $d/config.yaml ]] || continue
		for f in config.yaml metrics.jsonl result.json train.log predictions.bin; do
			[[ -f $d/$f ]] && files+=("$d/$f")
		done
		# the checkpoint of a run to resume, or of a finished CLUSTER/PATTERN run without predictions
		if [[ -f $d/checkpoint.bin ]] && { ! finished "$d" || capped "$d" || { node_task "$d" && [[ ! -f $d/predictions.bin ]]; }; }; then
			files+=("$d/checkpoint.bin")
		fi
	done < <(touched)
	files+=(jobs.txt BUILD-INFO)
	sha256sum "${files[@]}" >MANIFEST.sha256
	rm -f "$out"/pack.tar.gz.*
	tar -cf - MANIFEST.sha256 "${files[@]}" | gzip -1 | split -b "$PART" -d -a 1 - "$out/pack.tar.gz." ||
		log "PACK FAILED"
	local n
	n=$(ls "$out"/pack.tar.gz.* 2>/dev/null | wc -l)
	((n <= MAX_PARTS)) || log "PACK TOO LARGE: $n parts of $PART bytes, only $MAX_PARTS come back"
	log "pack: ${#files[@]} files, $(cat "$out"/pack.tar.gz.* | wc -c) bytes in $n parts"
}

# num X DIGITS: X rounded to DIGITS decimals, or X as it is when it is no number.
num() {
	[[ $1 =~ ^-?[0-9.]+([eE][-+]?[0-9]+)?$ ]] && printf "%.${2}f" "$1" || printf '%s' "$1"
}

summarize() {
	local out=$1 t0=$2
	{
		echo "campaign window $(date -u -d "@$t0" +%Y-%m-%dT%H:%M:%SZ), $(($(now) - t0))s"
		printf '%-52s %-9s %6s %9s %9s %8s %s\n' run stopped epochs seconds prep_s s/epoch test
		local d res
		while IFS= read -r d; do
			res=$d/result.json
			printf '%-52s %-9s %6s %9s %9s %8s %s\n' "${d#runs/}" "$(field "$res" stopped_by)" "$(field "$res" epochs)" \
				"$(num "$(field "$res" total_seconds)" 1)" "$(num "$(field "$res" preprocess_seconds)" 1)" \
				"$(num "$(field "$res" seconds_per_epoch)" 3)" "$(num "$(field "$res" test_metric)" 4)"
		done < <(touched)
		echo
		grep -E ' (window|gpu|start|end|skip|predict|trainers|packed|pack):? ' "$LOG"
	} >"$out/summary.txt"
	cat "$out/summary.txt"
}

# ------------------------------------------------------------------ here: collect ----

cmd_collect() {
	[[ $# -eq 1 ]] || die "collect PACKDIR"
	local src=$1
	ls "$src"/pack.tar.gz.* >/dev/null 2>&1 || die "no $src/pack.tar.gz.* to collect"
	TMPD=$(mktemp -d "${TMPDIR:-/tmp}/campaign-collect.XXXXXX") || die mktemp
	local tmp=$TMPD
	trap 'rm -rf "$TMPD"' EXIT
	cat "$src"/pack.tar.gz.* | tar -xzf - -C "$tmp" || die "$src: the pack does not unpack (a part missing or cut?)"
	(cd "$tmp" && sha256sum --quiet -c MANIFEST.sha256) || die "$src: the pack's files do not match its MANIFEST.sha256"
	local grid name seed mode results parked args
	BAD=0 NF=0 NU=0 ND=0
	while IFS=$'\t' read -r grid name seed mode results parked args; do
		merge_run "$tmp/runs/$grid/$name/seed$seed" "$results" "$name" "$seed" "$src"
	done <"$tmp/jobs.txt"
	local win
	win=$(window_dir "$src") || return 1
	mkdir -p "$win"
	for f in summary.txt campaign.log; do [[ -f $src/$f ]] && install -m 644 "$src/$f" "$win/$f"; done
	cp "$tmp/BUILD-INFO" "$win/BUILD-INFO"
	cut -f1-4 "$tmp/jobs.txt" >"$win/jobs.txt"
	echo "collected: $NF finished, $NU unfinished (parked), $ND diverged; window log in $win"
	return $BAD
}

# window_dir PACKDIR: the folder for the window's logs, named for the window's start (summary.txt's
# first line; the time of collecting where there is none), so that two windows collected in the
# same second keep both their logs; a window collected again keeps its folder; a different window
# with the same start gets a -2, -3, … suffix, never another's folder.
window_dir() {
	local src=$1 t base win n=1
	t=$(sed -nE '1s/^campaign window ([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z,.*/\1\2\3T\4\5\6Z/p' "$src/summary.txt" 2>/dev/null)
	[[ -n $t ]] || t=$(date -u +%Y%m%dT%H%M%SZ)
	base=$RESULTS/campaign/windows/$t
	win=$base
	while [[ -e $win ]]; do
		if [[ -f $src/summary.txt ]] && cmp -s "$src/summary.txt" "$win/summary.txt"; then
			echo "$win"
			return 0
		fi
		n=$((n + 1))
		win=$base-$n
	done
	echo "$win"
}

# capped DIR: whether DIR's run stopped at a wall-clock cap shorter than its protocol's (a CPU
# run given -max-time 60m, say): not a result, but a run to extend, on the GPU.
capped() {
	grep -qsE '"stopped_by": *"max_time"' "$1/result.json" && grep -qs '"key": *"train.max_time"' "$1/result.json"
}

# merge_run D RESULTS NAME SEED FROM: one run folder into RESULTS (counting into NF, NU, ND and
# BAD): finished into runs/ (only ever adding), diverged into diverged/, interrupted or capped
# (capped) with its checkpoint into unfinished/ (never over a parked copy with more epochs).
merge_run() {
	local d=$1 results=$2 name=$3 seed=$4 from=$5 to have
	# a run without result.json was killed without a word (its machine stopped): parked from its
	# last checkpoint like an interrupted one
	[[ -f $d/config.yaml && (-f $d/result.json || -f $d/checkpoint.bin) ]] || return 0
	# a run stopped (or diverged) inside its first epoch has written no metrics.jsonl yet
	[[ -f $d/metrics.jsonl ]] || : >"$d/metrics.jsonl"
	if finished "$d" && ! capped "$d"; then
		to=$results/runs/$name/seed$seed
		if [[ -e $to ]]; then
			if cmp -s "$d/result.json" "$to/result.json"; then
				echo "already collected: $to"
			else
				echo "REFUSED: $to exists with another result; the new run is in $from (not merged)" >&2
				BAD=1
			fi
			return 0
		fi
		copy_run "$d" "$to" predictions.bin
		# a CLUSTER/PATTERN run without its predictions keeps its checkpoint for train -predict
		if node_task "$d" && [[ ! -f $d/predictions.bin && -f $d/checkpoint.bin ]]; then cp "$d/checkpoint.bin" "$to/"; fi
		NF=$((NF + 1))
		echo "finished: $to ($(field "$d/result.json" stopped_by), $(field "$d/result.json" epochs) epochs, test $(field "$d/result.json" test_metric))"
		have=$results/unfinished/$name/seed$seed
		[[ ! -d $have ]] || { rm -r "$have"; echo "  unparked $have"; }
	elif grep -qsE '"stopped_by": *"nan"' "$d/result.json"; then
		to=$results/diverged/$name/seed$seed
		[[ -e $to ]] && { echo "already collected: $to"; return 0; }
		copy_run "$d" "$to" train.log
		ND=$((ND + 1))
		echo "DIVERGED: $to (not retried by later windows; see its train.log)"
	else
		[[ -f $d/checkpoint.bin ]] || { echo "no checkpoint: $d (stopped before its first; it starts afresh)"; return 0; }
		to=$results/unfinished/$name/seed$seed
		if [[ -f $to/metrics.jsonl ]] && (($(wc -l <"$to/metrics.jsonl") > $(wc -l <"$d/metrics.jsonl"))); then
			echo "kept the newer parked copy $to ($(wc -l <"$to/metrics.jsonl") epochs; $from has $(wc -l <"$d/metrics.jsonl"))"
			return 0
		fi
		rm -rf "$to"
		copy_run "$d" "$to" checkpoint.bin
		NU=$((NU + 1))
		echo "unfinished: $to ($(wc -l <"$d/metrics.jsonl") epochs so far$(capped "$d" && echo ', capped: the GPU queue extends it to the protocol cap'))"
	fi
}

# adopt SRC GRID [RESULTS-DIR]: the runs of a local runs folder (train -out SRC, on this machine's
# CPU) merged as collect merges a pack's: finished ones into RESULTS/GRID/runs, interrupted or
# capped ones into RESULTS/GRID/unfinished for the GPU queue. A run a trainer holds is skipped.
cmd_adopt() {
	[[ $# -ge 2 && $# -le 3 ]] || die "adopt SRC GRID [RESULTS-DIR]"
	local src=$1 grid=$2 results=${3:-$RESULTS/$2} d rel
	[[ -d $src ]] || die "no runs folder $src"
	[[ -f configs/grids/$grid.yaml ]] || die "no grid configs/grids/$grid.yaml"
	TMPD=$(mktemp -d "${TMPDIR:-/tmp}/campaign-adopt.XXXXXX") || die mktemp
	trap 'rm -rf "$TMPD"' EXIT
	CGO_ENABLED=0 "$GO" build -o "$TMPD/sweep" ./cmd/sweep || die "go build ./cmd/sweep failed"
	local names
	names=" $("$TMPD/sweep" -grid "configs/grids/$grid.yaml" -out "$TMPD/runs" -dry-run |
		sed -n 's/^\[[0-9]*\/[0-9]*\] *[a-z]* *\([^ ]*\) seed \([0-9]*\) .*/\1\/seed\2/p' | tr '\n' ' ')"
	BAD=0 NF=0 NU=0 ND=0
	for d in "$src"/*/seed*; do
		[[ -d $d ]] || continue
		[[ $names == *" ${d#"$src"/} "* ]] || continue # not a (run, seed) of this grid
		! held "$d" 2>&1 || continue
		rel=${d#"$src"/}
		merge_run "$d" "$results" "${rel%/seed*}" "${rel##*/seed}" "$src"
	done
	echo "adopted: $NF finished, $NU unfinished (parked), $ND diverged"
	return $BAD
}

# ------------------------------------------------------------------ here: the CPU mode ----

# The CPU mode runs the same windows on this machine's idle cores, in the background: a bundle
# of CPU_QUEUE's jobs in CPU_DIR/campaign, run with -d cpu by K single-threaded trainers at nice
# 19, packed into CPU_DIR/out; collect merges it as it merges a GPU window's pack. CPU_DIR/lock is
# held (flock) by the runner and its trainers for the window's life, so a second start is refused
# while one runs, and a runner killed with its machine leaves no stale lock.
CPU_QUEUE=configs/campaign/cpu.txt

cpu_dir() {
	CPU_DIR=${CAMPAIGN_CPU_DIR:-.campaign/cpu}
	mkdir -p "$CPU_DIR" || die "cannot create $CPU_DIR"
	CPU_DIR=$(cd "$CPU_DIR" && pwd)
}

# cpu_running: whether a CPU window holds CPU_DIR/lock.
cpu_running() {
	[[ -f $CPU_DIR/lock ]] && ! flock -n "$CPU_DIR/lock" true 2>/dev/null
}

# seconds_of SPEC: 5400, 90m, 1h30m or 2h as whole seconds, or nothing.
seconds_of() {
	local s=$1 t=0
	[[ $s =~ ^[0-9]+$ ]] && { echo "$s"; return 0; }
	[[ $s =~ ^(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?$ && -n $s ]] || return 1
	t=$((${BASH_REMATCH[2]:-0} * 3600 + ${BASH_REMATCH[4]:-0} * 60 + ${BASH_REMATCH[6]:-0}))
	echo "$t"
}

cmd_cpu() {
	[[ $# -ge 1 ]] || die "cpu start|status|stop|collect|running (-h prints the usage)"
	local verb=$1
	shift
	cpu_dir
	case $verb in
	start) cpu_start "$@" ;;
	status) [[ $# -eq 0 ]] || die "cpu status takes no argument"; cpu_status ;;
	stop) [[ $# -eq 0 ]] || die "cpu stop takes no argument"; cpu_stop ;;
	collect) [[ $# -eq 0 ]] || die "cpu collect takes no argument"; cpu_collect ;;
	running) [[ $# -eq 0 ]] || die "cpu running takes no argument"; cpu_running ;;
	*) die "cpu $verb: want cpu start, status, stop, collect or running" ;;
	esac
}

cpu_start() {
	local opt OPTIND=1 budget= until= k=2 margin=60 minstart=120 end v
	QUEUE=${CAMPAIGN_QUEUE:-$CPU_QUEUE} MAX=100
	while getopts "b:u:k:m:s:q:n:" opt; do
		case $opt in
		b) budget=$(seconds_of "$OPTARG") || die "-b $OPTARG: want seconds, or a span like 90m, 2h or 2h30m" ;;
		u)
			until=$(date -d "$OPTARG" +%s 2>/dev/null) || die "-u $OPTARG: not a time date(1) reads (try 01:05 or '2026-12-02 01:05')"
			# a time of day already past today is tomorrow's (01:05 said at 22:30)
			if ((until <= $(now))) && [[ $OPTARG =~ ^[0-9]{1,2}:[0-9]{2}(:[0-9]{2})?$ ]]; then
				until=$(date -d "$OPTARG tomorrow" +%s)
			fi
			;;
		k) k=$OPTARG ;;
		m) margin=$OPTARG ;;
		s) minstart=$OPTARG ;;
		q) QUEUE=$OPTARG ;;
		n) MAX=$OPTARG ;;
		*) exit 2 ;;
		esac
	done
	shift $((OPTIND - 1))
	[[ $# -eq 0 ]] || die "cpu start: unexpected argument $1"
	[[ -n $budget || -n $until ]] || die "cpu start needs -b BUDGET (seconds, 90m, 2h30m) or -u END-TIME: the time this machine stays in use, less 15 minutes"
	[[ -z $budget || -z $until ]] || die "cpu start: -b and -u both given; want one"
	for v in k margin minstart; do
		[[ ${!v} =~ ^[0-9]+$ ]] || die "-${v:0:1} ${!v}: want a whole number"
	done
	((k >= 1 && k <= $(nproc))) || die "-k $k: want 1 to $(nproc) trainers (one core each)"
	command -v flock >/dev/null || die "the CPU mode needs flock(1) (util-linux)"
	exec 9>>"$CPU_DIR/lock"
	flock -n 9 || die "a CPU campaign is running ($(<"$CPU_DIR/lock")); scripts/campaign.sh cpu status, or cpu stop"
	if [[ -d $CPU_DIR/campaign && ! -f $CPU_DIR/collected ]]; then
		die "the last CPU window in $CPU_DIR is not collected: scripts/campaign.sh cpu collect, then start again"
	fi
	# -b counts from the trainers' start (after the bundle); -u is the window's end, bundle included
	end=${until:-$(($(now) + budget))}
	((end - $(now) > margin + minstart)) || die "the window would end at $(date -d "@$end" +%H:%M:%S), too soon for a job (-m $margin -s $minstart)"
	echo "bundling since $(stamp) (cpu start, pid $$)" >"$CPU_DIR/lock"
	rm -rf "$CPU_DIR/campaign" "$CPU_DIR/out" "$CPU_DIR/collected"
	if ! (cmd_bundle "$CPU_DIR" -q "$QUEUE" -n "$MAX") | grep -v '^there: '; then
		rm -rf "$CPU_DIR/campaign" # nothing ran: no window to collect
		die "cpu start: the bundle failed"
	fi
	local b=$CPU_DIR/campaign left
	[[ -z $budget ]] || end=$(($(now) + budget))
	left=$((end - $(now)))
	((left > margin + minstart)) || die "cpu start: after bundling, ${left}s are left: too few"
	echo "runner started $(stamp), ends $(date -u -d "@$end" +%Y-%m-%dT%H:%M:%SZ), $k trainers, queue $QUEUE" >"$CPU_DIR/lock"
	# The runner inherits fd 9 (the lock) and gives it to its trainers; setsid keeps a terminal's
	# hangup or Ctrl-C from reaching it.
	(cd "$b" && exec setsid nice -n 19 env GOMAXPROCS=1 bash "$b/campaign.sh" run "$b" "$CPU_DIR/out" \
		-b "$left" -k "$k" -m "$margin" -s "$minstart" -d cpu) </dev/null >"$CPU_DIR/runner.log" 2>&1 &
	exec 9>&-
	echo "campaign: CPU window started in the background: $(wc -l <"$b/jobs.txt") jobs, $k trainers (nice 19, one thread each),"
	echo "  SIGTERM at $(date -d "@$((end - margin))" +%H:%M:%S), packed by $(date -d "@$end" +%H:%M:%S); its log: $CPU_DIR/out/campaign.log"
	echo "  scripts/campaign.sh cpu status | cpu stop | cpu collect"
}

cpu_status() {
	local b=$CPU_DIR/campaign d n
	if cpu_running; then
		echo "running: $(<"$CPU_DIR/lock")"
	elif [[ -d $b && ! -f $CPU_DIR/collected ]]; then
		echo "not running; the last window is not collected: scripts/campaign.sh cpu collect"
	elif [[ -d $b ]]; then
		echo "not running; the last window is collected ($(<"$CPU_DIR/collected"))"
		return 0
	else
		echo "no CPU window in $CPU_DIR"
		return 0
	fi
	[[ -f $CPU_DIR/out/campaign.log ]] && grep -E ' (start|end|stop|skip) ' "$CPU_DIR/out/campaign.log" | tail -n 12
	[[ -f $b/.window-start ]] || return 0
	echo "run folders of this window (epochs in metrics.jsonl; for a run still training, the fewest epochs"
	echo "and minutes its schedule leaves before min_lr):"
	while IFS= read -r d; do
		n=0
		[[ -f $b/$d/metrics.jsonl ]] && n=$(wc -l <"$b/$d/metrics.jsonl")
		printf '  %-60s %4s epochs  %s\n' "${d#runs/}" "$n" "$(tail -n 1 "$b/$d/train.log" 2>/dev/null | cut -c1-60)"
		finished "$b/$d" || left_at_least "$b/$d"
	done < <(cd "$b" && touched)
}

# left_at_least DIR: for a run still training, "at least E epochs (about M min) left": the
# learning rate must still halve k times before it falls below min_lr, and the schedule
# (train.Plateau) halves it only after patience + 1 epochs without a relative improvement of
# 1e-4 in the monitored loss, counted from the last halving; the epochs logged give the count so
# far (an epoch's "lr" is the rate it trained with; a halving after it is replayed here). M from
# the run's mean seconds an epoch (training and evaluation). Nothing when the config or the
# metrics do not say.
left_at_least() {
	local d=$1 f factor patience minlr monitor
	f=$d/metrics.jsonl
	[[ -s $f && -f $d/config.yaml ]] || return 0
	factor=$(sed -n 's/^ *lr_factor: *//p' "$d/config.yaml" | head -1)
	patience=$(sed -n 's/^ *patience: *//p' "$d/config.yaml" | head -1)
	minlr=$(sed -n 's/^ *min_lr: *//p' "$d/config.yaml" | head -1)
	monitor=$(sed -n 's/^ *monitor: *//p' "$d/config.yaml" | head -1)
	[[ -n $factor && -n $patience && -n $minlr ]] || return 0
	awk -v f="$factor" -v p="$patience" -v m="$minlr" -v key="\"${monitor:-val_loss}\":" '
		function num(k,   i, r) { i = index($0, k); if (!i) return ""; r = substr($0, i + length(k)); sub(/[,}].*/, "", r); return r + 0 }
		{ v = num(key); lr = num("\"lr\":"); s += num("\"seconds\":") + num("\"eval_seconds\":"); n++
		  if (n == 1 || v < best * (1 - 1e-4)) { best = v; bad = 0 } else if (++bad > p) { bad = 0; lr *= f } }
		END {
			if (!n || f <= 0 || f >= 1 || m <= 0 || lr < m) exit
			k = 0; while (lr >= m && k < 100) { lr *= f; k++ }
			e = (p + 1 - bad) + (k - 1) * (p + 1)
			printf "      at least %d epoch%s left (%d halving%s of the rate to come), about %.0f min at %.1f s an epoch\n", e, e == 1 ? "" : "s", k, k == 1 ? "" : "s", e * s / n / 60, s / n
		}' "$f"
}

cpu_stop() {
	cpu_running || die "no CPU window is running ($CPU_DIR)"
	local pid
	pid=$(<"$CPU_DIR/out/runner.pid") || die "no $CPU_DIR/out/runner.pid: the runner has not started yet; try again in a minute"
	kill -TERM "$pid" || die "kill -TERM $pid (the runner) failed"
	echo "campaign: stopping the CPU window (runner $pid): its trainers checkpoint, then it packs"
	exec 9>>"$CPU_DIR/lock"
	flock -w 180 9 || die "the window still runs 3 minutes after the stop; see $CPU_DIR/out/campaign.log"
	echo "campaign: stopped; scripts/campaign.sh cpu collect merges it"
}

cpu_collect() {
	local b=$CPU_DIR/campaign out=$CPU_DIR/out
	[[ -d $b ]] || die "no CPU window in $CPU_DIR to collect"
	exec 9>>"$CPU_DIR/lock"
	flock -n 9 || die "the CPU window is running ($(<"$CPU_DIR/lock")): cpu stop first, or collect after it ends"
	local d
	while IFS= read -r d; do
		held "$b/$d" 2>/dev/null && die "a trainer still holds $b/$d: the window is running (not started by cpu start?); stop it first"
	done < <(cd "$b" && touched 2>/dev/null)
	[[ ! -f $CPU_DIR/collected ]] || echo "campaign: this window was collected before ($(<"$CPU_DIR/collected")); collecting again changes nothing"
	if ! ls "$out"/pack.tar.gz.* >/dev/null 2>&1; then
		# The runner did not reach its pack: the machine (or the runner) was stopped abruptly.
		# Each run's last checkpoint is what is left: pack the run folders as the runner would.
		mkdir -p "$out"
		(
			cd "$b" || exit 2
			LOG=$out/campaign.log
			log "collect: the window ended without its pack (stopped abruptly); packing its run folders from their last checkpoints"
			pack "$out" >/dev/null 2>&1
			summarize "$out" "$(stat -c %Y .window-start)" >/dev/null
		) || die "cannot pack $b's run folders"
	fi
	local rc
	merge_report cmd_collect "$out"
	rc=$?
	stamp >"$CPU_DIR/collected"
	return $rc
}

# merge_report VERB ARGS...: a merge into RESULTS (cmd_collect, cmd_adopt) in a subshell, then
# what changed under RESULTS, and the docs refreshed (refresh_docs); collect, cpu collect and
# adopt all end here.
merge_report() {
	local before rc changed
	before=$(results_state)
	("$@")
	rc=$?
	((rc != 2)) || return 2 # refused (die): nothing was merged
	echo "what changed under $RESULTS (+ added or changed, - gone):"
	changed=$(diff <(echo "$before") <(results_state) | sed -n -e 's/^> /  + /p' -e 's/^< /  - /p')
	echo "$changed"
	refresh_docs "$changed"
	return $rc
}

# refresh_docs CHANGED: after a collect into the repository's docs/results (not a CAMPAIGN_RESULTS
# elsewhere), remakes the table of every grid whose own folder (docs/results/GRID/runs) gained or
# changed a finished run (scripts/tables.sh GRID), then rewrites the figures the docs quote from
# the committed runs (cmd/docfacts -w), which tables.sh does for its own grid: a doc that still
# quotes the old figure fails the suite (internal/docfacts). What it rewrites is printed; the prose
# around the figures is left for the person committing to read.
refresh_docs() {
	[[ $RESULTS == docs/results ]] || return 0
	local g grids
	grids=$(sed -n 's|^  + \([^/]*\)/runs/.*|\1|p' <<<"$1" | sort -u)
	for g in $grids; do
		[[ -f configs/grids/$g.yaml ]] || continue
		echo "campaign: remaking $g's table: scripts/tables.sh $g"
		scripts/tables.sh "$g" >/dev/null || echo "campaign: scripts/tables.sh $g failed; run it by hand before committing"
	done
	echo "campaign: the figures the docs quote (go run ./cmd/docfacts -w):"
	$GO run ./cmd/docfacts -w || echo "campaign: cmd/docfacts -w failed; run it by hand before committing"
}

# results_state: one line per run folder under RESULTS (kind, run, seed, epochs, result).
results_state() {
	local d
	for d in "$RESULTS"/*/{runs,unfinished,diverged}/*/seed*; do
		[[ -d $d ]] || continue
		printf '%s  %s epochs, %s, test %s\n' "${d#"$RESULTS"/}" "$(cat "$d/metrics.jsonl" 2>/dev/null | wc -l)" \
			"$(field "$d/result.json" stopped_by)" "$(num "$(field "$d/result.json" test_metric)" 4)"
	done
}

# ------------------------------------------------------------------ main ----

[[ $# -ge 1 ]] || { usage; exit 2; }
verb=$1
shift
case $verb in
jobs) repo_root; cmd_jobs "$@" ;;
bundle) repo_root; cmd_bundle "$@" ;;
run) cmd_run "$@" ;;
collect) repo_root; [[ $# -eq 1 ]] || die "collect PACKDIR"; merge_report cmd_collect "$1" ;;
adopt) repo_root; merge_report cmd_adopt "$@" ;;
cpu) repo_root; cmd_cpu "$@" ;;
-h | help) usage ;;
*) die "unknown verb $verb: want jobs, bundle, run, collect, adopt or cpu (-h prints the usage)" ;;
esac
