// Package bitcheck compares two trees of run folders bit for bit, less the fields that hold
// wall-clock time: the comparer of scripts/bitcheck.sh (its command is ./cmp, a thin main over
// Main), and the tests of that script.
//
// A run folder is one that holds metrics.jsonl, result.json or checkpoint.bin (the trainer's
// <out>/<run name>/seed<seed>/). For every run folder of either tree, at the same relative path
// in the other, CompareTrees compares
//
//   - config.yaml line by line, less a key one revision adds at its zero value (config hashes
//     keys added since its first layout only away from zero, and a model reads zero as the
//     behaviour from before the key; a changed value still differs);
//   - metrics.jsonl epoch by epoch and key by key, less EpochTiming (numbers by their float64
//     bits; key order ignored);
//   - result.json key by key, less ResultTiming (and less "device", which names the thread
//     count, when Options.Threads is set);
//   - checkpoint.bin decoded as train.Checkpoint (the container's magic and CRC checked), every
//     field by reflection, floats by their bits, maps by sorted key, less CheckpointTiming; the
//     file's bytes cannot be compared as they are, since gob writes maps (parameters, Adam's
//     moments, batch-norm statistics) in Go's random map order and the loop state holds timings.
//
// Each differing file is reported once, at its first difference (run, file, epoch or key or
// parameter and index, both values), with the count of differing values.
package bitcheck
