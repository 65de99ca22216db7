package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// diskFull says whether err is a write refused for want of space (or quota).
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// notWritable says whether err is a write refused for permissions or a read-only file system.
func notWritable(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

// WayOut adds the way out to err, an error writing into the run directory dir (err names
// the file): free space or make the folder writable, then continue from the last checkpoint
// (savedAt, checkpointPlace) with -resume, or, when the run has none yet, run the command again
// or write the run elsewhere. Other errors are returned as they are.
func WayOut(err error, dir, savedAt string) error {
	var what, fix string
	switch {
	case err == nil:
		return nil
	case diskFull(err):
		what, fix = "the disk holding "+dir+" is full", "free space on it"
		if savedAt != "" {
			fix += " (or move " + dir + " to a disk with room and resume it there)"
		}
	case notWritable(err):
		what, fix = dir+" (or a folder above it) is not writable by this user", "make it writable (chmod u+w)"
	default:
		return err
	}
	if savedAt != "" {
		return fmt.Errorf("%w: %s; %s, then continue from its last checkpoint (%s) with %s", err, what, fix, savedAt, Suggest("-resume", dir))
	}
	return fmt.Errorf("%w: %s, and the run has no checkpoint yet; %s and run this command again, or add `-out OTHER` to it (a folder elsewhere) to write the run there",
		err, what, fix)
}

// lockFailed adds the way out to err, an error taking the lock of the run directory dir, which
// writes nothing else: free space, or make the folder writable, and run the command again.
func lockFailed(dir string, err error) error {
	switch {
	case diskFull(err):
		return fmt.Errorf("%w: the disk holding %s is full; free space on it and run this command again", err, dir)
	case notWritable(err):
		return fmt.Errorf("%w: %s is not writable by this user; make it writable (chmod u+w %s) and run this command again", err, dir, dir)
	}
	return err
}
