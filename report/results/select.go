package results

import (
	"sort"
	"strconv"

	"github.com/rewiregnn/rewiregnn/runfiles"
)

// LeftOut is a run the tables leave out, and why.
type LeftOut struct {
	Dir     string `json:"dir"`
	Name    string `json:"name"`
	Dataset string `json:"dataset"`
	Seed    int64  `json:"seed"`
	Reason  string `json:"reason"`
}

// SeedLabel is the seed for a listing, or "?" for an unreadable result (Scan), whose seed is unknown.
func (l LeftOut) SeedLabel() string {
	if l.Name == "" {
		return "?"
	}
	return strconv.FormatInt(l.Seed, 10)
}

// IncludeReducedFlag is cmd/tables' flag that includes reduced-budget runs; Select names it.
const IncludeReducedFlag = "-include-reduced"

// Select splits runs into those the tables aggregate and those they leave out, with the reason:
// a run without final metrics (runfiles.Result.Reportable: stopped by a signal, so unfinished,
// or diverged on a non-finite loss) is always left out; a run with a reduced budget
// (runfiles.Result.Provenance Reduced: departures from the configured protocol, a config below
// the built-in budget or a run on the emulated GPU; or Unknown: no config_hash) is left out
// unless includeReduced, and
// then kept and counted in its group's Reduced.
func Select(runs []*Run, includeReduced bool) (kept []*Run, left []LeftOut) {
	for _, r := range runs {
		res := r.Result
		why := res.Reportable()
		if why == "" && res.Provenance() != runfiles.Protocol && !includeReduced {
			why = "reduced budget: " + res.BudgetNote() + " (include with " + IncludeReducedFlag + ")"
		}
		if why == "" {
			kept = append(kept, r)
			continue
		}
		left = append(left, LeftOut{Dir: r.Dir, Name: res.Name, Dataset: res.Dataset, Seed: res.Seed, Reason: why})
	}
	sort.Slice(left, func(i, j int) bool { return left[i].Dir < left[j].Dir })
	return kept, left
}
