package cuda

// A profile of the device's stream: while one is on, every kernel, matrix product, fill and
// copy queued on the stream gets a pair of events around it, so their GPU times can be summed
// by name and set against the wall time of the work profiled. The stream stays in order, so
// the time from the first event to the last (the span) minus the operations' time is the time
// the GPU waited for the host between them (launch gaps and host work done mid-step).

import (
	"fmt"
	"sort"
	"time"
	"unsafe"
)

// profile is the events of a profile in progress, in queue order.
type profile struct {
	marks []profMark
	t0    time.Time
	c0    Counts
}

type profMark struct {
	name       string
	start, end uintptr
}

// OpTime is the GPU time of the operations of one name.
type OpTime struct {
	Name  string
	Count int
	Ms    float64
}

// ProfileReport is what a profile measured: Ops operations, their GPU time (BusyMs), the time
// from the first one's start to the last one's end on the GPU (SpanMs), the host's wall time
// from StartProfile to StopProfile (WallMs), and the time per operation name, most first.
//
// Counts is what was queued meanwhile (Device.Counts): a replayed graph is one operation of
// the profile but its nodes are device operations here.
type ProfileReport struct {
	Ops                    int
	BusyMs, SpanMs, WallMs float64
	ByName                 []OpTime
	Counts                 Counts
}

func (r *ProfileReport) String() string {
	return fmt.Sprintf("%d operations (%d device operations, %d host calls): GPU busy %.2f ms, GPU span %.2f ms (gaps %.2f ms), wall %.2f ms",
		r.Ops, r.Counts.DeviceOps, r.Counts.HostCalls, r.BusyMs, r.SpanMs, r.SpanMs-r.BusyMs, r.WallMs)
}

// StartProfile starts timing every operation queued on the stream.
func (d *Device) StartProfile() error {
	return d.do(func() error {
		if d.drv.EventCreate == nil {
			return fmt.Errorf("cuda: %s has no usable event functions", d.DriverPath)
		}
		if d.prof != nil {
			return fmt.Errorf("cuda: a profile is already running")
		}
		if err := d.refuseInCaptureLocked("profile"); err != nil {
			return err
		}
		d.prof = &profile{t0: time.Now(), c0: d.counts}
		return nil
	})
}

// StopProfile waits for the profiled work and reports it.
func (d *Device) StopProfile() (*ProfileReport, error) {
	rep := &ProfileReport{}
	err := d.do(func() error {
		p := d.prof
		if p == nil {
			return fmt.Errorf("cuda: no profile is running")
		}
		d.prof = nil
		defer func() {
			for _, m := range p.marks {
				d.drv.EventDestroy(m.start)
				d.drv.EventDestroy(m.end)
			}
		}()
		if err := d.syncLocked(); err != nil {
			return err
		}
		rep.WallMs = float64(time.Since(p.t0).Microseconds()) / 1e3
		rep.Ops = len(p.marks)
		rep.Counts = d.counts.Sub(p.c0)
		by := map[string]*OpTime{}
		elapsed := func(a, b uintptr) (float64, error) {
			var ms float32
			err := d.drv.Check("cuEventElapsedTime", d.drv.EventElapsedTime(unsafe.Pointer(&ms), a, b))
			return float64(ms), err
		}
		for _, m := range p.marks {
			ms, err := elapsed(m.start, m.end)
			if err != nil {
				return err
			}
			rep.BusyMs += ms
			o := by[m.name]
			if o == nil {
				o = &OpTime{Name: m.name}
				by[m.name] = o
			}
			o.Count++
			o.Ms += ms
		}
		if n := len(p.marks); n > 0 {
			ms, err := elapsed(p.marks[0].start, p.marks[n-1].end)
			if err != nil {
				return err
			}
			rep.SpanMs = ms
		}
		for _, o := range by {
			rep.ByName = append(rep.ByName, *o)
		}
		sort.Slice(rep.ByName, func(i, j int) bool {
			if rep.ByName[i].Ms != rep.ByName[j].Ms {
				return rep.ByName[i].Ms > rep.ByName[j].Ms
			}
			return rep.ByName[i].Name < rep.ByName[j].Name
		})
		return nil
	})
	return rep, err
}

// Counts is what was queued on the device's stream: HostCalls, the calls into the driver or
// cuBLAS that each queue work (a kernel launch, a matrix product, a fill, a copy, an upload, a
// download, a graph launch); DeviceOps, the operations the device runs for them (one each; a
// graph launch, the graph's Nodes). Operations captured into a graph are counted at each of its
// launches, not at capture. Events, stream synchronisation and allocation are not counted.
type Counts struct {
	HostCalls, DeviceOps int64
}

// Sub returns c − o, the counts of the work queued between two readings.
func (c Counts) Sub(o Counts) Counts {
	return Counts{HostCalls: c.HostCalls - o.HostCalls, DeviceOps: c.DeviceOps - o.DeviceOps}
}

// Counts returns what was queued since Open (take the difference of two readings for a step).
func (d *Device) Counts() Counts {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counts
}

// timedLocked runs f, which queues one operation called name: it counts it and, while a profile
// runs, puts it between a pair of events. The caller holds the device.
func (d *Device) timedLocked(name string, f func() error) error { return d.queueLocked(name, 1, f) }

// queueLocked runs f, which makes one host call that queues ops device operations (a graph
// launch queues its nodes). While the stream is being captured f records its operation into
// the graph instead of queuing it: nothing runs, so nothing is counted on the device; the
// graph counts its operations at each launch (graph.go).
func (d *Device) queueLocked(name string, ops int64, f func() error) error {
	return d.queueOnLocked(d.stream, name, ops, f)
}

// queueOnLocked is queueLocked for an operation queued on stream s (the device's stream or its
// side stream, whose operations are never captured).
func (d *Device) queueOnLocked(s uintptr, name string, ops int64, f func() error) error {
	if c := d.capture; c != nil && s == d.stream {
		if err := f(); err != nil {
			return err
		}
		c.nodes++
		return nil
	}
	d.counts.HostCalls++
	d.counts.DeviceOps += ops
	p := d.prof
	if p == nil {
		return f()
	}
	var m profMark
	m.name = name
	if err := d.drv.Check("cuEventCreate", d.drv.EventCreate(unsafe.Pointer(&m.start), 0)); err != nil {
		return err
	}
	if err := d.drv.Check("cuEventCreate", d.drv.EventCreate(unsafe.Pointer(&m.end), 0)); err != nil {
		d.drv.EventDestroy(m.start)
		return err
	}
	p.marks = append(p.marks, m)
	if err := d.drv.Check("cuEventRecord", d.drv.EventRecord(m.start, s)); err != nil {
		return err
	}
	if err := f(); err != nil {
		return err
	}
	return d.drv.Check("cuEventRecord", d.drv.EventRecord(m.end, s))
}
