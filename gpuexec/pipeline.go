package gpuexec

// Pipelined inputs. A program's batch inputs have two sides, each a device buffer with a host
// image (page-locked where the device has it): while a run reads one side, the host writes
// the next batch into the other's image and the side stream uploads it, so the upload and the
// host's work overlap the device's. Three events order them:
//
//	Stage (side k): host waits uploaded[k] (its image is free again), fills the image;
//	                side stream waits consumed[k] (the last run that read side k is done),
//	                copies, records uploaded[k].
//	Run (side k):   device stream waits uploaded[k], runs, records consumed[k].
//
// On a device without a side stream the same calls queue everything on the one stream.

import (
	"fmt"

	"github.com/rewiregnn/rewiregnn/cuda"
)

// inputSide is one of a program's two input buffers, its host image and its events.
type inputSide struct {
	dev    cuda.DevPtr
	host   *cuda.HostBuf
	stage  []int32   // the host image
	stageF []float32 // the same memory as float32, for weights and dense inputs
	// uploaded and consumed: waiting for one not yet recorded returns at once (the driver's
	// rule), as a side not yet uploaded or read needs.
	uploaded, consumed *cuda.Event
}

// newSides allocates both input sides of pr (pr.size elements each).
func (e *Exec) newSides(pr *Program) error {
	for k := range pr.sides {
		sd := &pr.sides[k]
		var err error
		if sd.dev, err = e.B.Alloc(max(pr.size, 1)); err != nil {
			return fmt.Errorf("the batch's inputs (%d elements): %w", pr.size, err)
		}
		if sd.host, err = e.B.HostAlloc(4 * max(pr.size, 1)); err != nil {
			return fmt.Errorf("the host image of the batch's inputs (%d elements): %w", pr.size, err)
		}
		sd.stage, sd.stageF = sd.host.Int32s()[:pr.size], sd.host.Float32s()[:pr.size]
		// A driver without events has one stream and pageable images: the order of the calls
		// is the order of the work, and the events stay nil (no waits).
		if sd.uploaded, err = e.B.NewEvent(); err != nil {
			continue
		}
		if sd.consumed, err = e.B.NewEvent(); err != nil {
			return err
		}
	}
	return nil
}

// freeSides frees both input sides. The allocator hands a freed block out at once, to work
// queued on the device's stream after the work that used it; an upload on the side stream is
// not ordered so, hence the wait for it first.
func (e *Exec) freeSides(pr *Program) {
	for k := range pr.sides {
		sd := &pr.sides[k]
		_ = sd.uploaded.Sync()
		if sd.dev != 0 {
			_ = e.B.Free(sd.dev)
		}
		_ = sd.host.Free()
		for _, ev := range []*cuda.Event{sd.uploaded, sd.consumed} {
			if ev != nil {
				_ = ev.Destroy()
			}
		}
		*sd = inputSide{}
	}
}

// bindSide points the program's index, mask and input values at side k's device buffer.
func (pr *Program) bindSide(b Backend, k int) {
	in := pr.sides[k].dev
	for _, r := range pr.regions {
		p := b.Offset(in, r.off)
		switch r.kind {
		case regIndex:
			pr.idx[r.i] = p
		case regWeights:
			pr.idxW[r.i] = p
		case regMask:
			pr.mask[r.i] = p
		case regInput:
			pr.vals[r.i] = p
		}
	}
}

// nextSide returns the side the last Stage did not fill, once its host image may be written
// (its last upload has run). Stage makes it current when its upload is queued.
func (e *Exec) nextSide(pr *Program) (int, error) {
	k := pr.cur ^ 1
	if err := pr.sides[k].uploaded.Sync(); err != nil {
		return 0, fmt.Errorf("gpu: %s: waiting for the last upload from the input image: %w", pr.Label, err)
	}
	return k, nil
}

// beginRun points the program at its current side and makes the device's stream wait for
// that side's upload.
func (e *Exec) beginRun(pr *Program) error {
	pr.bindSide(e.B, pr.cur)
	return e.B.WaitEvent(pr.sides[pr.cur].uploaded)
}

// endRun records that the runs queued so far have read the current side.
func (e *Exec) endRun(pr *Program) error {
	return e.B.RecordEvent(pr.sides[pr.cur].consumed)
}
