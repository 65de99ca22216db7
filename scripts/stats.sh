#!/usr/bin/env bash
# stats.sh: preprocessing statistics of a dataset per hop radius r (cmd/stats): mean density
# (the paper's density column), mean nodes and edges after rewiring, time per graph for the
# rewiring with both edge encodings and for the Laplacian encoding, and the lossless-recovery
# check of every graph.
#
#   scripts/stats.sh [-d DATASET] [-s SPLIT] [-r RADII] [-j] [-o FILE] [-- STATS FLAGS …]
#
#   -d  dataset (default zinc): zinc, aqsol, cluster, pattern, pattern-v1, mnist, cifar10,
#       neighborsmatch-1 … neighborsmatch-9, erdosrenyi
#   -s  split: train, val, test or all (default test)
#   -r  radii: a range, a list or both, e.g. 1-10, 1,4, 1-3,6 (default 1-10)
#   -j  print JSON (the input of cmd/tables -stats) instead of a table
#   -o  write to FILE (replaced only when the command succeeds) instead of standard output
#   after --: more cmd/stats flags, e.g. -cls, -q 8, -self-loops=false, -repeat 1
#
# Examples:
#   scripts/stats.sh                                   # ZINC test, r = 1..10: the table in docs/usage.md
#   scripts/stats.sh -s all -r 1-4 -j -o /tmp/zinc-stats.json   # the input of tables -stats
#   scripts/stats.sh -d aqsol -s val -r 1-3 -- -repeat 1
#
# Environment: REWIREGNN_DATA or DATA (data folder, default ../shared/data), GO.
source "$(dirname "$0")/lib.sh"

dataset=zinc split=test radii=1-10 json=() outfile=
while getopts "d:s:r:jo:h" opt; do
	case $opt in
	d) dataset=$OPTARG ;;
	s) split=$OPTARG ;;
	r) radii=$OPTARG ;;
	j) json=(-json) ;;
	o) outfile=$OPTARG ;;
	h) usage; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))

cmd=("$GO" run ./cmd/stats -data "$DATA" -dataset "$dataset" -split "$split" -r "$radii" "${json[@]}" "$@")
if [[ -z $outfile ]]; then
	run "${cmd[@]}"
	exit 0
fi
mkdir -p "$(dirname "$outfile")"
tmp=$(mktemp "$outfile.XXXXXX")
trap 'rm -f "$tmp"' EXIT
run "${cmd[@]}" >"$tmp"
mv "$tmp" "$outfile"
trap - EXIT
echo "wrote $outfile" >&2
