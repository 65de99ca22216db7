package cuda

// CUDA graphs: the operations queued on the device's stream between BeginCapture and
// EndCapture are recorded, not run, and instantiated as a graph that Launch replays with one
// host call. A training step of fixed shapes costs hundreds of launches (each a few µs of host
// time); replayed as a graph it costs one.
//
// What a graph holds. Kernels, matrix products, fills and device-to-device copies, with their
// arguments as they were at capture: device addresses and sizes are baked in. So every buffer
// a graph uses must stay allocated (not freed to the cache, where another user may get it, and
// not trimmed) while the graph lives, and new data reaches it by being copied into the same
// buffers, outside the capture, before each Launch. The launchers' own scratch (freed to the
// cache as soon as its kernels are queued) is taken care of: blocks freed during the capture
// are kept out of the cache by EndCapture and held by the graph until Destroy.
//
// What is refused during a capture, with an error that names it and leaves the capture intact:
// uploads and downloads (host memory cannot be captured: a graph's inputs are copied in before
// Launch), Sync, Trim and Close (a synchronisation invalidates a capture), event records and
// StartProfile, a second BeginCapture, and launching a graph. Allocation and freeing through
// the caching allocator are allowed (the allocator does not fall back to trimming its cache
// on out-of-memory while capturing, as that synchronises).
//
// The capture uses CU_STREAM_CAPTURE_MODE_RELAXED: each Device call locks its goroutine to
// some OS thread for the call only, so successive calls of one capture may come from different
// threads, which the global and thread-local modes forbid for some calls (cuMemAlloc).

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
)

// capture is the state of a capture in progress.
type capture struct {
	nodes int      // the operations recorded
	freed []DevPtr // blocks freed to the cache during the capture, in order (with repeats)
}

// Graph is a captured sequence of the device's operations, instantiated: Launch replays it.
type Graph struct {
	d     *Device
	exec  uintptr  // CUgraphExec; 0 once destroyed
	nodes int      // operations captured
	held  []DevPtr // blocks freed during the capture, kept from the cache while the graph lives
}

// refuseInCaptureLocked fails op while the stream is being captured. The caller holds the
// device.
func (d *Device) refuseInCaptureLocked(op string) error {
	if d.capture == nil {
		return nil
	}
	return fmt.Errorf("cuda: %s while the stream is being captured (only device work can be captured; EndCapture first)", op)
}

// BeginCapture starts capturing the device's stream: operations queued until EndCapture are
// recorded, not run.
func (d *Device) BeginCapture() error {
	return d.do(func() error {
		if err := d.refuseInCaptureLocked("BeginCapture"); err != nil {
			return err
		}
		if d.prof != nil {
			return errors.New("cuda: BeginCapture while a profile runs (StopProfile first)")
		}
		if d.drv.StreamBeginCapture == nil {
			return fmt.Errorf("cuda: %s cannot capture CUDA graphs (it needs a driver for CUDA 11.4 or newer): %s", d.DriverPath, d.drv.GraphsMissing)
		}
		if err := d.drv.Check("cuStreamBeginCapture", d.drv.StreamBeginCapture(d.stream, cudalib.StreamCaptureModeRelaxed)); err != nil {
			return err
		}
		d.capture = &capture{}
		return nil
	})
}

// EndCapture ends the capture and instantiates the recorded operations as a graph. The capture
// ends even when this fails (a capture the driver invalidated, a failed instantiation).
func (d *Device) EndCapture() (*Graph, error) {
	var g *Graph
	err := d.do(func() error {
		c := d.capture
		if c == nil {
			return errors.New("cuda: EndCapture without BeginCapture")
		}
		d.capture = nil
		var graph uintptr
		if err := d.drv.Check("cuStreamEndCapture", d.drv.StreamEndCapture(d.stream, unsafe.Pointer(&graph))); err != nil {
			if graph != 0 {
				d.drv.GraphDestroy(graph)
			}
			return fmt.Errorf("cuda: capture of %d operations: %w", c.nodes, err)
		}
		// The executable graph does not need its template: it is released at once.
		var exec uintptr
		err := d.drv.Check("cuGraphInstantiate", d.drv.GraphInstantiate(unsafe.Pointer(&exec), graph, 0))
		err = errors.Join(err, d.drv.Check("cuGraphDestroy", d.drv.GraphDestroy(graph)))
		if err != nil {
			if exec != 0 {
				d.drv.GraphExecDestroy(exec)
			}
			return fmt.Errorf("cuda: instantiating a graph of %d operations: %w", c.nodes, err)
		}
		g = &Graph{d: d, exec: exec, nodes: c.nodes, held: d.holdLocked(c.freed)}
		return nil
	})
	return g, err
}

// holdLocked takes the blocks freed during a capture that are still in the cache out of it,
// for the graph: its replays write them (launchers' scratch), so nobody else may get them
// while it lives. They count as live bytes until Destroy.
func (d *Device) holdLocked(freed []DevPtr) []DevPtr {
	var held []DevPtr
	for _, p := range freed {
		sz := d.alloc.size[p]
		l := d.alloc.free[sz]
		i := slices.Index(l, p)
		if i < 0 {
			continue // handed out again during the capture, or a repeat
		}
		d.alloc.free[sz] = slices.Delete(l, i, i+1)
		d.alloc.cached -= int64(sz)
		d.alloc.live += int64(sz)
		d.alloc.peak = max(d.alloc.peak, d.alloc.live)
		held = append(held, p)
	}
	return held
}

// Nodes is the number of operations captured (kernels, matrix products, fills, device copies).
func (g *Graph) Nodes() int { return g.nodes }

// Launch queues one replay of the graph on the device's stream. It counts as 1 host call and
// Nodes() device operations in Device.Counts; in a profile it is one operation, "graph".
func (g *Graph) Launch() error {
	d := g.d
	return d.do(func() error {
		if g.exec == 0 {
			return errors.New("cuda: launch of a destroyed graph")
		}
		if err := d.refuseInCaptureLocked("graph launch"); err != nil {
			return err
		}
		return d.queueLocked("graph", int64(g.nodes), func() error {
			if err := d.drv.Check("cuGraphLaunch", d.drv.GraphLaunch(g.exec, d.stream)); err != nil {
				return fmt.Errorf("cuda: graph of %d operations: %w", g.nodes, err)
			}
			return nil
		})
	})
}

// Destroy releases the graph (after the replays queued have run: the driver defers the
// release of a graph in flight) and returns the blocks it held to the cache, which only work
// queued later can get.
func (g *Graph) Destroy() error {
	d := g.d
	return d.do(func() error {
		if g.exec == 0 {
			return errors.New("cuda: graph destroyed twice")
		}
		errs := []error{d.drv.Check("cuGraphExecDestroy", d.drv.GraphExecDestroy(g.exec))}
		g.exec = 0
		var n int
		if d.capture != nil {
			n = len(d.capture.freed)
		}
		for _, p := range g.held {
			errs = append(errs, d.freeLocked(p))
		}
		if d.capture != nil {
			d.capture.freed = d.capture.freed[:n] // not the capture's: no need to hold them for it
		}
		g.held = nil
		return errors.Join(errs...)
	})
}
