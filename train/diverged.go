package train

import (
	"fmt"
	"os"
	"strings"

	"github.com/rewiregnn/rewiregnn/rundir"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// checkpointPlace says where in the run a checkpoint of the loop lp stands: at the end of an
// epoch, or inside one before a batch (an interrupt's, or one written every
// Options.CheckpointEvery).
func checkpointPlace(lp Loop) string {
	if lp.Perm != nil {
		return fmt.Sprintf("epoch %d before batch %d", lp.Epoch, lp.Next)
	}
	return fmt.Sprintf("end of epoch %d", lp.Epoch-1)
}

// diverged is the error of a run stopped by a non-finite loss (err wraps ErrNaN): what the run
// directory keeps and how to go on. Resuming would repeat the divergence, so the way out is a
// lower learning rate (or mended data) and a fresh start.
func (r *run) diverged(err error) error {
	lr := r.cfg.Train.LR / 10
	retry := fmt.Sprintf("lower the learning rate or check the data, then start afresh: add `-set train.lr=%.2g -restart` to this command (%s)", lr, rundir.OldDirNote(r.o.Dir))
	if r.savedAt == "" {
		return fmt.Errorf("%w; nothing is resumable: no epoch finished and no checkpoint was written (%s holds %s and, once stopped, result.json with stopped_by nan); %s",
			err, r.o.Dir, r.dirContents(), retry)
	}
	return fmt.Errorf("%w; the last good checkpoint (%s) is kept, but resuming from it repeats the divergence; %s", err, r.savedAt, retry)
}

// dirContents lists what the run directory holds besides its lock and earlier restarts' files
// (folders with a slash), for a message.
func (r *run) dirContents() string {
	ents, err := os.ReadDir(r.o.Dir)
	var names []string
	for _, e := range ents {
		n := e.Name()
		if n == runfiles.LockFile || strings.HasPrefix(n, runfiles.OldPrefix) {
			continue
		}
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	if err != nil || len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ", ")
}
