// Package campaign holds the end-to-end test of scripts/campaign.sh, the GPU campaign runner:
// two windows of a tiny queue on the CPU (bundle, run, interrupt, pack, collect, resume, finish,
// tables) and one on the emulated GPU, so that the script is checked by go test ./... on machines
// without a GPU. It has no code of its own.
package campaign
