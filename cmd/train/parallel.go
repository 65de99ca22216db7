package main

// train -parallel K: up to K seeds of a config train at once in this process, each in its own
// goroutine with its own trainer, run directory and (on cuda, emu or auto) its own device: on
// one GPU K devices are K streams of one CUDA context, whose kernels may overlap, where K
// train processes would be K contexts taking turns. Each run is the run it would be alone:
// the same files, the same CPU bits (the kernels' chunks and sums are fixed by the data's
// shape, not by the threads or the other runs), the same emulated-GPU bits.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/rewiregnn/rewiregnn/config"
	"github.com/rewiregnn/rewiregnn/internal/memlimit"
	"github.com/rewiregnn/rewiregnn/train"
)

// outcome is one seed's end in a -parallel command.
type outcome struct {
	seed    int64
	code    int  // one's exit status; meaningless when !started
	started bool // false: the command was interrupted before the seed's turn
}

// runParallel trains seeds, k at a time (-parallel asked, capped at the number of seeds), with the configs load returns (one per run, so that
// no two runs share one), and returns the command's exit status: 1 if a run failed, else 4 if
// a run stopped on a non-finite loss, else 3 if the command was interrupted (its runs
// checkpointed, seeds not yet started left out), else 0. Every run is reported, naming its
// seed; a run's failure does not stop the others.
func runParallel(ctx context.Context, opt train.Options, load func() (*config.Run, error), seeds []int64, k, asked int) int {
	stderr := &lockedWriter{w: os.Stderr}
	stdout := &lockedWriter{w: os.Stdout}
	opt.Parallel = k
	opt.Progress = false // K bars would overwrite each other: the runs log lines only
	if opt.Memory <= 0 && !opt.NoMemoryGuard {
		// The budget is read once, before any run has loaded data, and split K ways by the
		// guard; a machine where it cannot be read leaves each run to say so.
		if l, err := memlimit.Available(); err == nil {
			opt.Memory, opt.MemorySource = l.Bytes, l.Source
		}
	}
	fmt.Fprintf(stderr, "train: -parallel %d: %d seeds, %d at once in this process\n", asked, len(seeds), k)
	todo := make(chan int, len(seeds))
	for i := range seeds {
		todo <- i
	}
	close(todo)
	outs := make([]outcome, len(seeds))
	var wg sync.WaitGroup
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range todo {
				s := seeds[i]
				outs[i].seed = s
				if ctx.Err() != nil {
					continue
				}
				outs[i].started = true
				outs[i].code = oneParallel(ctx, opt, load, s, stdout, stderr)
			}
		}()
	}
	wg.Wait()
	return summarize(stderr, outs, asked)
}

// oneParallel runs one seed of a -parallel command, its log lines prefixed with "seed N: ". A
// panic inside the run is that run's failure, not the command's.
func oneParallel(ctx context.Context, opt train.Options, load func() (*config.Run, error), s int64, stdout, stderr io.Writer) (code int) {
	log := &prefixWriter{w: stderr, prefix: fmt.Sprintf("seed %d: ", s)}
	defer log.Flush()
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(log, "train: internal error: %v\n%s", p, debug.Stack())
			code = 1
		}
	}()
	cfg, err := load()
	if err != nil {
		fmt.Fprintf(log, "train: %v\n", err)
		return 1
	}
	opt.Run, opt.Seed, opt.Dir, opt.Log = cfg, s, cfg.Dir(s), log
	return oneTo(ctx, opt, stdout, log)
}

// summarize writes one line for the -parallel command, naming every seed that did not finish,
// and returns its exit status.
func summarize(w io.Writer, outs []outcome, k int) int {
	var failed, diverged, stopped, unstarted []string
	for _, o := range outs {
		s := fmt.Sprint(o.seed)
		switch {
		case !o.started:
			unstarted = append(unstarted, s)
		case o.code == 1:
			failed = append(failed, s)
		case o.code == exitNaN:
			diverged = append(diverged, s)
		case o.code == exitSignal:
			stopped = append(stopped, s)
		}
	}
	done := len(outs) - len(failed) - len(diverged) - len(stopped) - len(unstarted)
	parts := []string{fmt.Sprintf("%d of %d seeds finished", done, len(outs))}
	for _, p := range []struct {
		what  string
		seeds []string
	}{{"failed", failed}, {"stopped on a non-finite loss", diverged}, {"interrupted (continue each with -resume DIR)", stopped},
		{"not started (interrupted first; train each with -seed N)", unstarted}} {
		if len(p.seeds) > 0 {
			parts = append(parts, fmt.Sprintf("%s: seed %s", p.what, strings.Join(p.seeds, ", ")))
		}
	}
	fmt.Fprintf(w, "train: -parallel %d: %s\n", k, strings.Join(parts, "; "))
	switch {
	case len(failed) > 0:
		return 1
	case len(diverged) > 0:
		return exitNaN
	case len(stopped) > 0 || len(unstarted) > 0:
		return exitSignal
	}
	return 0
}

// lockedWriter serialises the writes of the runs to one stream.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// prefixWriter writes whole lines, each with prefix, so that the lines of runs training at
// once interleave but never mix; Flush writes a last line that has no newline yet.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	var out []byte
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		out = append(append(out, p.prefix...), p.buf[:i+1]...)
		p.buf = p.buf[i+1:]
	}
	if len(out) > 0 {
		if _, err := p.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// Flush writes what is left of an unfinished line.
func (p *prefixWriter) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		p.w.Write(append(append([]byte(p.prefix), p.buf...), '\n'))
		p.buf = nil
	}
}
