// Package diskfree says how many bytes a folder's file system has free for this user, where the
// system tells it.
package diskfree

import "errors"

// ErrUnknown is returned where the free space cannot be read (an unsupported system).
var ErrUnknown = errors.New("free disk space unknown on this system")

// Bytes is the space available to an unprivileged user on the file system holding dir.
func Bytes(dir string) (int64, error) { return bytesFree(dir) }
