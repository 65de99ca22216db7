// Package gpusim is a simulated device for the GPU executor (package gpu): host memory behind
// device addresses, and every op launcher of package cuda written out again as plain loops
// with the kernels' semantics (float32 storage, reductions in float64, padding and index
// rules, the dropout mask of cuda.DropoutKeep, Adam's float32 moments). It lets the executor's
// planning, buffer sharing, argument wiring and whole training steps be tested against the CPU
// trainer on machines without a GPU; the kernels themselves are tested against their CPU twins
// on a GPU by cuda's GPU tests.
//
// Freshly allocated memory is filled with NaN, and every launcher checks that each buffer it is
// given holds the elements it reads or writes, so a value read before it is written, or a
// buffer of the wrong size, shows up.
package gpusim

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/rewiregnn/rewiregnn/cuda"
)

// Device is the simulated GPU. It is not safe for concurrent use.
type Device struct {
	blocks map[cuda.DevPtr][]float32
	bases  []cuda.DevPtr // sorted
	next   cuda.DevPtr
	live   int64
	peak   int64
	// Launches counts launcher calls (copies and fills excluded).
	Launches int
}

// New returns an empty simulated device.
func New() *Device {
	return &Device{blocks: map[cuda.DevPtr][]float32{}, next: 1 << 20}
}

func (d *Device) String() string { return "simulated GPU (host memory, package gpusim)" }

// Alloc returns a buffer of n elements filled with NaN.
func (d *Device) Alloc(n int) (cuda.DevPtr, error) {
	if n < 0 {
		return 0, fmt.Errorf("gpusim: alloc of %d elements", n)
	}
	if n == 0 {
		return 0, nil
	}
	p := d.next
	d.next += cuda.DevPtr(4*n+4095) &^ 4095
	d.next += 4096 // a gap, so an overrun never lands in the next block
	b := make([]float32, n)
	nan := float32(math.NaN())
	for i := range b {
		b[i] = nan
	}
	d.blocks[p] = b
	i := sort.Search(len(d.bases), func(i int) bool { return d.bases[i] >= p })
	d.bases = append(d.bases, 0)
	copy(d.bases[i+1:], d.bases[i:])
	d.bases[i] = p
	d.live += 4 * int64(n)
	d.peak = max(d.peak, d.live)
	return p, nil
}

// Free releases a buffer from Alloc.
func (d *Device) Free(p cuda.DevPtr) error {
	if p == 0 {
		return nil
	}
	b, ok := d.blocks[p]
	if !ok {
		return fmt.Errorf("gpusim: free of %#x, which is not an allocated buffer", uint64(p))
	}
	d.live -= 4 * int64(len(b))
	delete(d.blocks, p)
	i := sort.Search(len(d.bases), func(i int) bool { return d.bases[i] >= p })
	d.bases = append(d.bases[:i], d.bases[i+1:]...)
	return nil
}

// Live is the number of bytes allocated now.
func (d *Device) Live() int64 { return d.live }

// Memory reports the allocator's high-water mark; a simulated device has no device memory.
func (d *Device) Memory() (peak, used, total int64, ok bool) { return d.peak, 0, 0, false }

// ResetPeak restarts the high-water mark.
func (d *Device) ResetPeak() { d.peak = d.live }

// Offset is the address of element i of the buffer at p.
func (d *Device) Offset(p cuda.DevPtr, i int) cuda.DevPtr { return p + cuda.DevPtr(4*i) }

// view returns n elements from address p, or an error naming what.
func (d *Device) view(what string, p cuda.DevPtr, n int) ([]float32, error) {
	if n <= 0 {
		return nil, nil
	}
	if p == 0 {
		return nil, fmt.Errorf("%s is nil (needs %d elements)", what, n)
	}
	i := sort.Search(len(d.bases), func(i int) bool { return d.bases[i] > p }) - 1
	if i < 0 {
		return nil, fmt.Errorf("%s: %#x is not in an allocated buffer", what, uint64(p))
	}
	base := d.bases[i]
	b := d.blocks[base]
	off := int(p-base) / 4
	if (p-base)%4 != 0 || off+n > len(b) {
		return nil, fmt.Errorf("%s: %d elements at offset %d of a buffer of %d", what, n, off, len(b))
	}
	return b[off : off+n], nil
}

// args collects the views of one launch and the first error.
type args struct {
	d   *Device
	op  string
	err []string
}

func (d *Device) args(op string) *args {
	d.Launches++
	return &args{d: d, op: op}
}

func (a *args) f(what string, p cuda.DevPtr, n int) []float32 {
	v, err := a.d.view(what, p, n)
	if err != nil {
		a.err = append(a.err, err.Error())
		return make([]float32, max(n, 0))
	}
	return v
}

// opt is f for an optional buffer (nil when p is 0).
func (a *args) opt(what string, p cuda.DevPtr, n int) []float32 {
	if p == 0 {
		return nil
	}
	return a.f(what, p, n)
}

// idx reads n int32 entries.
func (a *args) idx(what string, p cuda.DevPtr, n int) []int32 {
	v := a.f(what, p, n)
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(math.Float32bits(x))
	}
	return out
}

func (a *args) sizes(vals ...int) {
	for _, v := range vals {
		if v < 0 {
			a.err = append(a.err, fmt.Sprintf("size %d", v))
		}
	}
}

func (a *args) done() error {
	if len(a.err) == 0 {
		return nil
	}
	return fmt.Errorf("gpusim: %s: %s", a.op, strings.Join(a.err, "; "))
}

// valid maps an index entry outside [0, n) to -1, as the kernels do.
func valid(j int32, n int) int {
	if j < 0 || int(j) >= n {
		return -1
	}
	return int(j)
}

// UploadF32 copies src to the device.
func (d *Device) UploadF32(dst cuda.DevPtr, src []float32) error {
	v, err := d.view("upload destination", dst, len(src))
	if err != nil {
		return fmt.Errorf("gpusim: %w", err)
	}
	copy(v, src)
	return nil
}

// UploadI32 copies int32 entries to the device.
func (d *Device) UploadI32(dst cuda.DevPtr, src []int32) error {
	v, err := d.view("upload destination", dst, len(src))
	if err != nil {
		return fmt.Errorf("gpusim: %w", err)
	}
	for i, x := range src {
		v[i] = math.Float32frombits(uint32(x))
	}
	return nil
}

// Download copies len(dst) elements from the device.
func (d *Device) Download(dst []float32, src cuda.DevPtr) error {
	v, err := d.view("download source", src, len(dst))
	if err != nil {
		return fmt.Errorf("gpusim: %w", err)
	}
	copy(dst, v)
	return nil
}

// Copy copies n elements between device buffers.
func (d *Device) Copy(dst, src cuda.DevPtr, n int) error {
	a := d.args("copy")
	copy(a.f("dst", dst, n), a.f("src", src, n))
	return a.done()
}

// Fill sets n elements to v.
func (d *Device) Fill(p cuda.DevPtr, n int, v float32) error {
	a := d.args("fill")
	b := a.f("buffer", p, n)
	for i := range b {
		b[i] = v
	}
	return a.done()
}
