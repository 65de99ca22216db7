package train

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress redraws one status line per epoch on a terminal: a bar, the batch count, the
// running loss and the time left in the epoch. It draws nothing when off.
type progress struct {
	w         io.Writer
	on        bool
	epoch, nb int
	first     int // batches of this epoch done before this session (a resumed epoch)
	last      time.Time
	drawn     bool
}

func newProgress(w io.Writer, on bool, epoch, nb, first int) *progress {
	return &progress{w: w, on: on, epoch: epoch, nb: nb, first: first}
}

// update shows done of nb batches after secs seconds of this session's part of the epoch.
func (p *progress) update(done int, secs, loss float64) {
	if !p.on || (time.Since(p.last) < 200*time.Millisecond && done < p.nb) {
		return
	}
	p.last = time.Now()
	const width = 30
	fill := width * done / max(p.nb, 1)
	eta := secs / float64(max(done-p.first, 1)) * float64(p.nb-done)
	fmt.Fprintf(p.w, "\r\033[Kepoch %d [%s%s] %d/%d loss %.4f ETA %s", p.epoch,
		strings.Repeat("=", fill), strings.Repeat(" ", width-fill), done, p.nb, loss, time.Duration(eta*float64(time.Second)).Round(time.Second))
	p.drawn = true
}

// clear removes the status line.
func (p *progress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}
