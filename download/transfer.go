package download

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// attempt is one transfer into the .part file: it asks for the bytes past what the file holds
// and appends them (or starts over when the server sends the whole file). It returns nil when
// the .part is complete as far as the server tells. The .part is created only once the server
// answers with data.
func (f *fetcher) attempt(ctx context.Context) error {
	var off int64
	if fi, err := os.Stat(f.part); err == nil {
		off = fi.Size()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if f.a.Size > 0 && off == f.a.Size {
		f.resumed = true
		return nil
	}
	if f.a.Size > 0 && off > f.a.Size {
		off = 0
	}
	reqCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watch := newWatchdog(f.o.Stall, cancel)
	defer watch.stop()
	resp, off, complete, err := f.open(reqCtx, off)
	if errors.As(err, new(statusError)) {
		return err
	}
	if err != nil {
		return netError(ctx, reqCtx, err)
	}
	if complete {
		f.resumed = true
		return nil
	}
	defer resp.Body.Close()
	f.resumed = f.resumed || off > 0
	return f.write(ctx, reqCtx, resp, off, watch)
}

// write opens the .part, cuts it at off (0: a restart) and appends the response body.
func (f *fetcher) write(ctx, reqCtx context.Context, resp *http.Response, off int64, watch *watchdog) (err error) {
	file, err := os.OpenFile(f.part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}()
	if err := file.Truncate(off); err != nil {
		return err
	}
	if _, err := file.Seek(off, io.SeekStart); err != nil {
		return err
	}
	return f.copy(ctx, reqCtx, file, resp, off, watch)
}

// open requests the bytes from off on. It returns the response and the offset its body starts
// at: off for a 206 that continues the .part, 0 when the server sends the whole file (a 200, or
// a range it could not serve, requested again from the start). complete reports a 416 that says
// the .part already holds the whole file.
func (f *fetcher) open(ctx context.Context, off int64) (resp *http.Response, start int64, complete bool, err error) {
	resp, err = f.request(ctx, off)
	if err != nil {
		return nil, 0, false, err
	}
	code := resp.StatusCode
	switch {
	case code == http.StatusOK:
		if off > 0 {
			f.warn(fmt.Sprintf("%s: the server ignored the range request; downloading from the start", f.a.Name))
		}
		return resp, 0, false, nil
	case off > 0 && code == http.StatusPartialContent && rangeStart(resp) == off:
		return resp, off, false, nil
	case off > 0 && code == http.StatusRequestedRangeNotSatisfiable:
		resp.Body.Close()
		if total, ok := rangeTotal(resp); !ok || total == off {
			return nil, off, true, nil
		}
	case off > 0 && code == http.StatusPartialContent:
		resp.Body.Close()
	default:
		resp.Body.Close()
		return nil, 0, false, statusError{code: code, status: resp.Status}
	}
	f.warn(fmt.Sprintf("%s: the server did not continue the partial download of %d bytes (%s, Content-Range %q); downloading from the start",
		f.a.Name, off, resp.Status, resp.Header.Get("Content-Range")))
	return f.open(ctx, 0)
}

// request sends the GET for the bytes from off on, asking for the file as stored (no transfer
// compression, so that byte offsets are the file's).
func (f *fetcher) request(ctx context.Context, off int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.a.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept-Encoding", "identity")
	if off > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", off))
	}
	return f.o.Client.Do(req)
}

// copy appends the response body to the .part file at off, showing progress and keeping the
// lock fresh. A body that ends early is a transient error (the next attempt resumes).
func (f *fetcher) copy(ctx, reqCtx context.Context, file *os.File, resp *http.Response, off int64, watch *watchdog) error {
	total := int64(-1)
	if resp.ContentLength >= 0 {
		total = off + resp.ContentLength
	} else if f.a.Size > 0 {
		total = f.a.Size
	}
	var body io.Reader = resp.Body
	if f.a.Size > 0 {
		body = io.LimitReader(body, f.a.Size-off+1) // one byte too many is enough to fail the check
	}
	bar := newProgress(f.o, f.a.Name, off, total)
	defer bar.end()
	buf := make([]byte, 256<<10)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			watch.kick()
			if _, err := file.Write(buf[:n]); err != nil {
				return err
			}
			bar.add(n)
			f.lock.touch()
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return netError(ctx, reqCtx, rerr)
		}
	}
}

// rangeStart is the first byte of a 206 response's Content-Range (bytes START-END/TOTAL), or -1.
func rangeStart(resp *http.Response) int64 {
	spec, ok := strings.CutPrefix(resp.Header.Get("Content-Range"), "bytes ")
	if !ok {
		return -1
	}
	first, _, ok := strings.Cut(spec, "-")
	n, err := strconv.ParseInt(strings.TrimSpace(first), 10, 64)
	if !ok || err != nil {
		return -1
	}
	return n
}

// rangeTotal is the file size a 416 response states (Content-Range: bytes */TOTAL).
func rangeTotal(resp *http.Response) (int64, bool) {
	cr := resp.Header.Get("Content-Range")
	i := strings.LastIndexByte(cr, '/')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(cr[i+1:]), 10, 64)
	return n, err == nil
}

// statusError is an HTTP answer other than the file.
type statusError struct {
	code   int
	status string
}

// Error implements error.
func (e statusError) Error() string { return "HTTP " + e.status }

// transientError is a failure worth retrying: the network, not the file or the disk.
type transientError struct{ err error }

// Error implements error.
func (e transientError) Error() string { return e.err.Error() }

// Unwrap returns the underlying error.
func (e transientError) Unwrap() error { return e.err }

// stallError aborts a request that received nothing for a while.
type stallError struct{ d time.Duration }

// Error implements error.
func (e stallError) Error() string { return fmt.Sprintf("no data received for %v", e.d) }

// Timeout marks the stall as a timeout (the network is unavailable).
func (e stallError) Timeout() bool { return true }

// netError classifies an error of the request or of reading its body: the caller's
// cancellation is final, anything else from the network is transient (a stall says so).
func netError(ctx, reqCtx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var stall stallError
	if errors.As(context.Cause(reqCtx), &stall) {
		return transientError{stall}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return transientError{err}
}

// retryable reports a transient failure: the network, or a server error (5xx, 408, 429).
func retryable(err error) bool {
	var s statusError
	if errors.As(err, &s) {
		return s.code >= 500 || s.code == http.StatusRequestTimeout || s.code == http.StatusTooManyRequests
	}
	var t transientError
	return errors.As(err, &t)
}

// unreachable reports a network that is not there: a failed name lookup or connection, a
// timeout.
func unreachable(err error) bool {
	var dns *net.DNSError
	var op *net.OpError
	var to interface{ Timeout() bool }
	switch {
	case errors.As(err, &dns):
		return true
	case errors.As(err, &op) && op.Op == "dial":
		return true
	case errors.As(err, &to) && to.Timeout():
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH)
}

// watchdog cancels a request when no data arrives for a while.
type watchdog struct {
	t *time.Timer
	d time.Duration
}

// newWatchdog starts the countdown d before cancel is called with a stallError.
func newWatchdog(d time.Duration, cancel context.CancelCauseFunc) *watchdog {
	return &watchdog{d: d, t: time.AfterFunc(d, func() { cancel(stallError{d}) })}
}

// kick restarts the countdown: data arrived.
func (w *watchdog) kick() { w.t.Reset(w.d) }

// stop ends the countdown.
func (w *watchdog) stop() { w.t.Stop() }
