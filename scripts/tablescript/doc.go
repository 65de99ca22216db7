// Package tablescript holds the tests of scripts/tables.sh as a fresh clone meets it: no runs/
// folder, committed tables in docs/results. It has no code of its own.
package tablescript
