package download

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress draws a download's progress: name, bytes done / total, percent, rate.
type progress struct {
	w           io.Writer
	name        string
	total       int64 // -1 when unknown
	done, from  int64 // bytes in the file now, and when this transfer began
	began, last time.Time
	every       time.Duration
	now         func() time.Time
	term        bool // rewrite one line with \r
}

// newProgress starts a progress bar for a transfer that continues a file of from bytes; it is
// nil (and draws nothing) when o.Progress is nil.
func newProgress(o Options, name string, from, total int64) *progress {
	if o.Progress == nil {
		return nil
	}
	term := isTerminal(o.Progress)
	every := o.ProgressEvery
	if every <= 0 {
		every = 5 * time.Second
		if term {
			every = 200 * time.Millisecond
		}
	}
	t := o.Now()
	return &progress{w: o.Progress, name: name, total: total, done: from, from: from,
		began: t, last: t, every: every, now: o.Now, term: term}
}

// add counts n more bytes, drawing when the interval has passed.
func (p *progress) add(n int) {
	if p == nil {
		return
	}
	p.done += int64(n)
	if t := p.now(); t.Sub(p.last) >= p.every {
		p.last = t
		p.draw(t, false)
	}
}

// end draws the last state and ends the line.
func (p *progress) end() {
	if p != nil {
		p.draw(p.now(), true)
	}
}

// draw writes the progress line.
func (p *progress) draw(t time.Time, final bool) {
	line := p.line(t)
	switch {
	case p.term && final:
		fmt.Fprintf(p.w, "\r%s\x1b[K\n", line)
	case p.term:
		fmt.Fprintf(p.w, "\r%s\x1b[K", line)
	default:
		fmt.Fprintln(p.w, line)
	}
}

// line is the progress text at time t.
func (p *progress) line(t time.Time) string {
	var b strings.Builder
	b.WriteString(p.name + "  " + FormatSize(p.done))
	if p.total >= 0 {
		pct := int64(100)
		if p.total > 0 {
			pct = p.done * 100 / p.total
		}
		fmt.Fprintf(&b, " / %s  %d%%", FormatSize(p.total), pct)
	}
	if dt := t.Sub(p.began).Seconds(); dt > 0 {
		fmt.Fprintf(&b, "  %s/s", FormatSize(int64(float64(p.done-p.from)/dt)))
	}
	return b.String()
}

// isTerminal reports a writer that is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// FormatSize writes a byte count in binary units: 512 B, 1.5 KiB, 12.3 MiB, 1.1 GiB.
func FormatSize(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < 5 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[i])
}
