//go:build linux

package emu

// CUDA graphs on the emulated GPU. While the stream is being captured, each operation queued
// on it (a kernel launch, a fill, a device-to-device copy, a matrix product) is checked as it
// would be eagerly and recorded, with every argument value copied, instead of run; a graph is
// the list of records. A launch of its executable form runs them in order through the same
// functions as eager work, with the same checks at that time (a pointer argument must lie in
// a live buffer then), so a replay gives the bits eager work gives. As on a GPU, host copies
// and stream synchronisation during a capture fail and invalidate it.

import (
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/rewiregnn/rewiregnn/cuda/cudalib"
)

// emuOp is one recorded operation: run(true) only checks its arguments, run(false) runs it.
// It returns a CUresult, or a cuBLAS status for a matrix product (blas).
type emuOp struct {
	name string
	blas bool
	run  func(dry bool) int32
}

// emuGraphs is the capture state of the device's stream and the graphs made from captures.
type emuGraphs struct {
	capturing bool
	invalid   string  // the call that invalidated the capture ("" while it is valid)
	ops       []emuOp // recorded so far
	graphs    map[uintptr][]emuOp
	execs     map[uintptr][]emuOp
	next      uintptr
	ws        uint64 // the cuBLAS workspace set by cublasSetWorkspace (0: none)
}

// enqueue runs an operation now, or records it while the stream is being captured (after
// checking its arguments, so a bad one fails where it is queued, as eagerly).
func (e *GPU) enqueue(name string, run func(dry bool) int32) int32 {
	if !e.graphs.capturing {
		return run(false)
	}
	if r := run(true); r != cudalib.CUDASuccess {
		return r
	}
	e.graphs.ops = append(e.graphs.ops, emuOp{name: name, blas: strings.HasPrefix(name, "cublas"), run: run})
	return cudalib.CUDASuccess
}

// refuseInCapture fails call, and invalidates the capture, while the stream is being captured:
// what CUDA does with host copies and synchronisation on a capturing stream.
func (e *GPU) refuseInCapture(call string) int32 {
	if !e.graphs.capturing {
		return cudalib.CUDASuccess
	}
	if e.graphs.invalid == "" {
		e.graphs.invalid = call
	}
	return e.fail(emuErrCaptureUnsupp, "%s is not allowed while the stream is being captured (the capture is now invalidated)", call)
}

// lastMsg is the detail of the last error.
func (e *GPU) lastMsg() string { return strings.TrimSuffix(string(e.msg), "\x00") }

// graphDriver fills the graph entries of the driver table.
func (e *GPU) graphDriver(d *cudalib.Driver) {
	g := &e.graphs
	g.graphs, g.execs = map[uintptr][]emuOp{}, map[uintptr][]emuOp{}
	d.StreamBeginCapture = func(_ uintptr, mode uint32) int32 {
		if g.capturing {
			return e.fail(emuErrIllegalState, "cuStreamBeginCapture: the stream is already being captured")
		}
		if mode > cudalib.StreamCaptureModeRelaxed {
			return e.fail(emuErrInvalidValue, "cuStreamBeginCapture: capture mode %d", mode)
		}
		g.capturing, g.invalid, g.ops = true, "", nil
		return cudalib.CUDASuccess
	}
	d.StreamEndCapture = func(_ uintptr, graph unsafe.Pointer) int32 {
		*(*uintptr)(graph) = 0
		if !g.capturing {
			return e.fail(emuErrIllegalState, "cuStreamEndCapture: the stream is not being captured")
		}
		ops, invalid := g.ops, g.invalid
		g.capturing, g.invalid, g.ops = false, "", nil
		if invalid != "" {
			return e.fail(emuErrCaptureInval, "cuStreamEndCapture: the capture was invalidated by %s", invalid)
		}
		g.next++
		g.graphs[g.next] = ops
		*(*uintptr)(graph) = g.next
		return cudalib.CUDASuccess
	}
	d.GraphInstantiate = func(exec unsafe.Pointer, graph uintptr, _ uint64) int32 {
		ops, ok := g.graphs[graph]
		if !ok {
			return e.fail(emuErrInvalidHandle, "cuGraphInstantiate: no graph with handle %d", graph)
		}
		g.next++
		g.execs[g.next] = slices.Clone(ops)
		*(*uintptr)(exec) = g.next
		return cudalib.CUDASuccess
	}
	d.GraphLaunch = func(exec, _ uintptr) int32 {
		ops, ok := g.execs[exec]
		if !ok {
			return e.fail(emuErrInvalidHandle, "cuGraphLaunch: no executable graph with handle %d", exec)
		}
		if g.capturing {
			return e.fail(emuErrCaptureUnsupp, "cuGraphLaunch into a stream being captured (a child graph) is not emulated")
		}
		return e.replay(ops)
	}
	d.GraphExecDestroy = func(exec uintptr) int32 {
		if _, ok := g.execs[exec]; !ok {
			return e.fail(emuErrInvalidHandle, "cuGraphExecDestroy: no executable graph with handle %d", exec)
		}
		delete(g.execs, exec)
		return cudalib.CUDASuccess
	}
	d.GraphDestroy = func(graph uintptr) int32 {
		if _, ok := g.graphs[graph]; !ok {
			return e.fail(emuErrInvalidHandle, "cuGraphDestroy: no graph with handle %d", graph)
		}
		delete(g.graphs, graph)
		return cudalib.CUDASuccess
	}
}

// replay runs a graph's operations in order; the first failure ends it, named by its node.
func (e *GPU) replay(ops []emuOp) int32 {
	for i, op := range ops {
		r := op.run(false)
		if r == cudalib.CUDASuccess {
			continue
		}
		detail := e.lastMsg()
		if op.blas {
			detail = fmt.Sprintf("cuBLAS status %d: %s", r, detail)
			r = emuErrInvalidValue
		}
		return e.fail(r, "graph node %d of %d (%s): %s", i+1, len(ops), op.name, detail)
	}
	return cudalib.CUDASuccess
}

// setWorkspace is cublasSetWorkspace: ws must be size bytes of one live buffer (0, 0 unsets).
// Status 7 is CUBLAS_STATUS_INVALID_VALUE.
func (e *GPU) setWorkspace(_ uintptr, ws uint64, size uintptr) int32 {
	if ws == 0 && size == 0 {
		e.graphs.ws = 0
		return 0
	}
	if _, err := e.bytesAt(ws, uint64(size)); err != nil || ws == 0 {
		return 7
	}
	e.graphs.ws = ws
	return 0
}
