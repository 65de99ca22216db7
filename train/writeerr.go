package train

import (
	"github.com/rewiregnn/rewiregnn/rundir"
	"github.com/rewiregnn/rewiregnn/runfiles"
)

// writeCheckpointFile writes a checkpoint file; tests replace it to fail as a full disk does.
var writeCheckpointFile = runfiles.WriteCheckpoint

// wrote is rundir.WayOut for this run's directory and last checkpoint.
func (r *run) wrote(err error) error { return rundir.WayOut(err, r.o.Dir, r.savedAt) }
