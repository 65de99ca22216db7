package download

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Defaults of Options.
const (
	DefaultBackoff   = time.Second      // wait before the first retry
	DefaultStall     = time.Minute      // a transfer receiving nothing for this long is aborted
	DefaultLockStale = time.Hour        // a lock untouched for this long is taken over
	maxBackoff       = 30 * time.Second // the doubled backoff stops growing here
)

// Options tunes Fetch. The zero value works: http.DefaultClient, no progress, no log, no retry.
type Options struct {
	// Client makes the requests; nil means http.DefaultClient.
	Client *http.Client
	// Progress receives the progress bar: one line rewritten with \r on a terminal, else a
	// plain line every ProgressEvery. Nil prints none.
	Progress io.Writer
	// Log receives warnings: a sum recorded on first use, a retry, a lock taken over. Nil
	// drops them (Result.Warnings keeps them).
	Log io.Writer
	// Retries is how many times a transient failure (connection error, truncated body, HTTP
	// 5xx) is retried, each retry resuming the partial download.
	Retries int
	// Backoff is the wait before the first retry, doubled after each (0: DefaultBackoff).
	Backoff time.Duration
	// Stall aborts a request that receives no data for this long (0: DefaultStall).
	Stall time.Duration
	// ProgressEvery is the least time between two progress lines (0: 200ms on a terminal, 5s
	// otherwise).
	ProgressEvery time.Duration
	// Now is the progress bar's clock (nil: time.Now).
	Now func() time.Time
	// LockStale is the age after which another run's lock is taken over (0: DefaultLockStale).
	LockStale time.Duration
}

// withDefaults fills in the zero fields.
func (o Options) withDefaults() Options {
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.Stall <= 0 {
		o.Stall = DefaultStall
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.LockStale <= 0 {
		o.LockStale = DefaultLockStale
	}
	return o
}

// Result is what Fetch did.
type Result struct {
	Path          string // the verified archive
	Size          int64  // its byte size
	SHA256        string // its hex digest
	Skipped       bool   // it was already present and verified: nothing was downloaded
	Resumed       bool   // the download continued a partial one (.part)
	Recorded      bool   // no sum was known: the computed one was recorded in SHA256SUMS
	Unpacked      bool   // the zip was extracted by this call
	UnpackSkipped bool   // the zip had been extracted already (its marker holds this sum)
	Warnings      []string
}

// Fetch downloads the archive a into <dataDir>/<a.Dest>/<a.Name>, verifies its size and
// SHA-256 (or records them when none is known: trust on first use) and, when a.Unzip is set,
// extracts it into that folder. A verified file already there is not downloaded again; an
// unfinished download (<Name>.part) is resumed. Failures are *Error values.
func Fetch(ctx context.Context, dataDir string, a Archive, o Options) (Result, error) {
	f := &fetcher{a: a, o: o.withDefaults(), dest: a.dir(dataDir), path: a.Path(dataDir)}
	f.part = f.path + partSuffix
	f.res.Path = f.path
	if err := f.fetch(ctx); err != nil {
		return f.res, &Error{Dataset: a.Dataset, URL: a.URL, Path: f.path, Manual: a.manual(), Err: err,
			Unreachable: ctx.Err() == nil && unreachable(err)}
	}
	return f.res, nil
}

// fetcher is the state of one Fetch.
type fetcher struct {
	a                Archive
	o                Options
	dest, path, part string
	lock             *lock
	resumed          bool // the .part being verified holds data of an earlier attempt
	res              Result
}

// warn records a warning and prints it on the log.
func (f *fetcher) warn(msg string) {
	f.res.Warnings = append(f.res.Warnings, msg)
	if f.o.Log != nil {
		fmt.Fprintln(f.o.Log, "warning:", msg)
	}
}

// fetch takes the folder's lock, makes sure the verified archive is in place and unpacks it.
func (f *fetcher) fetch(ctx context.Context) error {
	if err := f.a.validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(f.dest, 0o755); err != nil {
		return err
	}
	lk, err := acquireLock(filepath.Join(f.dest, lockName), f.o.LockStale, f.warn)
	if err != nil {
		return err
	}
	defer lk.release()
	f.lock = lk
	want, err := f.expected()
	if err != nil {
		return err
	}
	if err := f.obtain(ctx, want); err != nil {
		return err
	}
	if f.a.Unzip {
		return f.unpack(f.res.SHA256)
	}
	return nil
}

// expectation is the sum an archive is checked against.
type expectation struct {
	sum      string // hex digest; "" when none is known
	recorded bool   // sum comes from SHA256SUMS (recorded on the first download)
}

// expected returns the published sum, else the one recorded on the first download.
func (f *fetcher) expected() (expectation, error) {
	if f.a.SHA256 != "" {
		return expectation{sum: lower(f.a.SHA256)}, nil
	}
	sum, err := recordedSum(f.dest, f.a.Name)
	return expectation{sum: sum, recorded: sum != ""}, err
}

// obtain leaves the verified archive at f.path: the one present when it checks out, else a
// download.
func (f *fetcher) obtain(ctx context.Context, want expectation) error {
	size, sum, err := hashFile(f.path)
	switch {
	case err == nil:
		err = f.check(size, sum, want)
		if err == nil {
			f.res.Skipped, f.res.Size, f.res.SHA256 = true, size, sum
			return f.recordIfNew(want)
		}
		f.warn(fmt.Sprintf("%s is present but %v; downloading it again", f.path, err))
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := f.downloadVerified(ctx, want); err != nil {
		return err
	}
	if err := f.recordIfNew(want); err != nil {
		return err
	}
	return commit(f.part, f.path)
}

// check compares an archive's size and sum with the expected ones.
func (f *fetcher) check(size int64, sum string, want expectation) error {
	if f.a.Size > 0 && size != f.a.Size {
		return fmt.Errorf("size mismatch: expected %d bytes, got %d", f.a.Size, size)
	}
	if want.sum == "" || sum == want.sum {
		return nil
	}
	if want.recorded {
		return fmt.Errorf("checksum mismatch: expected sha256 %s (recorded in %s on the first download), got %s; "+
			"if the published file changed on purpose, delete its line from that file and run again",
			want.sum, filepath.Join(f.dest, SumsFile), sum)
	}
	return fmt.Errorf("checksum mismatch: expected sha256 %s, got %s", want.sum, sum)
}

// recordIfNew records the archive's sum when none was known (trust on first use).
func (f *fetcher) recordIfNew(want expectation) error {
	if want.sum != "" {
		return nil
	}
	sums := filepath.Join(f.dest, SumsFile)
	if err := recordSum(f.dest, f.a.Name, f.res.SHA256); err != nil {
		return err
	}
	f.res.Recorded = true
	f.warn(fmt.Sprintf("%s has no published SHA-256, so it could not be checked; recorded its sum %s (%d bytes) in %s, later runs check against it",
		f.path, f.res.SHA256, f.res.Size, sums))
	return nil
}

// downloadVerified downloads into the .part file and checks it. A wrong .part is deleted; when
// it held data of an earlier attempt, the download starts over once from the first byte.
func (f *fetcher) downloadVerified(ctx context.Context, want expectation) error {
	for again := false; ; again = true {
		f.resumed = false
		if err := f.download(ctx); err != nil {
			return err
		}
		size, sum, err := hashFile(f.part)
		if err != nil {
			return err
		}
		err = f.check(size, sum, want)
		if err == nil {
			f.res.Size, f.res.SHA256, f.res.Resumed = size, sum, f.res.Resumed || f.resumed
			return nil
		}
		if rerr := os.Remove(f.part); rerr != nil {
			return errors.Join(err, rerr)
		}
		if !f.resumed || again {
			return fmt.Errorf("%w (the download was deleted)", err)
		}
		f.warn(fmt.Sprintf("%s: the resumed download does not check out (%v); downloading it again from the start", f.a.Name, err))
	}
}

// download runs transfer attempts until one completes the .part, retrying transient failures
// up to Options.Retries times with a doubling backoff.
func (f *fetcher) download(ctx context.Context) error {
	wait := f.o.Backoff
	for try := 0; ; try++ {
		err := f.attempt(ctx)
		if err == nil || !retryable(err) || ctx.Err() != nil {
			return err
		}
		if try >= f.o.Retries {
			if try > 0 {
				err = fmt.Errorf("%w (gave up after %d retries)", err, try)
			}
			return err
		}
		f.warn(fmt.Sprintf("%s: %v; retrying in %v (%d of %d)", f.a.Name, err, wait, try+1, f.o.Retries))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, maxBackoff)
	}
}

// commit makes the verified .part the final file: flushed to disk, then renamed in the same
// folder so that the final name never holds a partial file.
func commit(part, path string) error {
	file, err := os.OpenFile(part, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := file.Sync(); err != nil {
		file.Close()
		return err
	}
	if err := file.Close(); err != nil {
		return err
	}
	if err := os.Rename(part, path); err != nil {
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}
