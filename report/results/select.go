package results

import (
	"fmt"
	"sort"

	"github.com/rewiregnn/rewiregnn/internal/plural"
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

// IncludeReducedFlag is cmd/tables' flag that includes reduced-budget runs; Select names it.
const IncludeReducedFlag = "-include-reduced"

// Select splits runs into those the tables aggregate and those they leave out, with the reason:
// a run stopped by a signal (not finished: resumable) or on a non-finite loss is always left out;
// a run with a reduced budget (runfiles.Result.Provenance Reduced: departures from the
// configured protocol or a config below the built-in budget; or Unknown: no config_hash) is
// left out unless includeReduced, and then kept and counted in its group's Reduced.
func Select(runs []*Run, includeReduced bool) (kept []*Run, left []LeftOut) {
	for _, r := range runs {
		res := r.Result
		why := ""
		switch {
		case res.StoppedBy == runfiles.StopSignal:
			why = fmt.Sprintf("stopped by a signal after %s (unfinished; resume it)", plural.Count(res.Epochs, "epoch"))
		case res.StoppedBy == runfiles.StopNaN:
			why = fmt.Sprintf("stopped on a non-finite loss after %s", plural.Count(res.Epochs, "epoch"))
		case res.Provenance() != runfiles.Protocol && !includeReduced:
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
