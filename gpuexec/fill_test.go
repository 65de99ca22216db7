package gpuexec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/rewiregnn/rewiregnn/prog"
)

// fillFeed is a feed of fixed values: one weighted index, one mask, one dense input.
type fillFeed struct {
	idx  []int32
	w    []float64
	keep []bool
	xs   []float32
}

func (f *fillFeed) Index(int) ([]int32, []float64) { return f.idx, f.w }
func (f *fillFeed) Mask(int) []bool                { return f.keep }
func (f *fillFeed) Input(int) any                  { return f.xs }
func (f *fillFeed) Training(int) bool              { return true }
func (f *fillFeed) DropSeed(int) uint64            { return 0 }

// fillCase is a program whose image has the four kinds of region, each several fillChunk
// pieces long (so the pieces run on several goroutines), and its feed.
func fillCase(n, rows int) (*Program, *fillFeed) {
	rng := rand.New(rand.NewPCG(7, 8))
	f := &fillFeed{idx: make([]int32, n), w: make([]float64, n), keep: make([]bool, n), xs: make([]float32, n)}
	for i := range f.idx {
		f.idx[i] = int32(rng.IntN(rows+1)) - 1
		f.w[i] = rng.NormFloat64()
		f.keep[i] = rng.IntN(2) == 0
		f.xs[i] = float32(rng.NormFloat64())
	}
	pl := &Plan{Prog: &prog.Program{Indexes: []prog.IndexInput{{Name: "src", Len: n, Weighted: true}}, Masks: []prog.MaskInput{{Name: "edges", Len: n}}},
		IndexRows: []int{rows}, Vals: []Value{{Name: "x", Src: FromInput, Elems: n}}}
	pr := &Program{Plan: pl, Feed: f}
	off := 0
	for _, k := range []regionKind{regIndex, regWeights, regMask, regInput} {
		pr.regions = append(pr.regions, region{kind: k, off: off, n: n})
		off += n + slotAlign
	}
	pr.size = off
	return pr, f
}

// TestFillImage: the image filled in pieces on several goroutines holds every entry, weight
// (as float32), mask (as 0/1) and input value in its place, whatever GOMAXPROCS; a bad entry
// is reported as the first one in the image, with its number.
func TestFillImage(t *testing.T) {
	const n, rows = 3*fillChunk + 123, 1000
	pr, f := fillCase(n, rows)
	want := make([]int32, pr.size)
	for i := 0; i < n; i++ {
		want[i] = f.idx[i]
		wf := float32(f.w[i])
		want[n+slotAlign+i] = int32(math.Float32bits(wf))
		if f.keep[i] {
			want[2*(n+slotAlign)+i] = 1
		}
		want[3*(n+slotAlign)+i] = int32(math.Float32bits(f.xs[i]))
	}
	for _, procs := range []int{1, 4} {
		old := runtime.GOMAXPROCS(procs)
		stage := make([]int32, pr.size)
		err := pr.fillImage(stage, float32View(stage))
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(stage, want) {
			t.Fatalf("GOMAXPROCS %d: the image differs from the feed", procs)
		}
	}
	f.idx[2*fillChunk+5], f.idx[fillChunk+9] = int32(rows), -2 // two bad entries in two pieces
	stage := make([]int32, pr.size)
	err := pr.fillImage(stage, float32View(stage))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("entry %d is -2", fillChunk+9)) {
		t.Fatalf("bad entries: %v, want the first (entry %d is -2)", err, fillChunk+9)
	}
	f.w = f.w[:n-1]
	if err := pr.fillImage(stage, float32View(stage)); err == nil || !strings.Contains(err.Error(), "weights for") {
		t.Fatalf("short weights: %v", err)
	}
}

// float32View is the memory of s as float32 values.
func float32View(s []int32) []float32 { return unsafe.Slice((*float32)(unsafe.Pointer(&s[0])), len(s)) }
