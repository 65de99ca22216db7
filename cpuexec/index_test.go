package cpuexec

import (
	"slices"
	"strings"
	"testing"

	"github.com/rewiregnn/rewiregnn/prog"
)

// inputHost is a testHost that also gives the program's dense inputs.
type inputHost struct {
	testHost
	in map[int][]float32
}

func (h *inputHost) Input(v int) any { return h.in[v] }

// TestRunnerChecksIndexesOnce checks that a run reads a batch's index before its steps and
// refuses an entry outside the rows of what it indexes (prog.IndexBounds), naming the index,
// and that a valid one reaches the kernels.
func TestRunnerChecksIndexesOnce(t *testing.T) {
	m := func(r, c int) []int { return []int{r, c} }
	p := &prog.Program{
		Vals: []prog.Value{
			{Name: "x", Kind: prog.Input, Shape: m(3, 2), Node: -1},
			{Name: "g", Kind: prog.Computed, Shape: m(2, 2), Node: 0},
			{Name: "y", Kind: prog.Input, Shape: m(2, 2), Node: -1},
			{Name: "w", Kind: prog.Input, Shape: m(2, 2), Node: -1},
			{Name: "loss", Kind: prog.Computed, Node: 1},
		},
		Nodes: []prog.Node{
			{Op: prog.Gather, In: []int{0}, Out: 1, Index: 0, Src: -1, Dst: -1, Mask: -1, State: -1, Group: -1},
			{Op: prog.MaskedL1, In: []int{1, 2, 3}, Out: 4, Index: -1, Src: -1, Dst: -1, Mask: -1, State: -1, Group: -1},
		},
		Indexes: []prog.IndexInput{{Name: "src", Len: 2}},
		Loss:    4, Pred: 1,
	}
	h := &inputHost{in: map[int][]float32{0: {1, 2, 3, 4, 5, 6}, 2: make([]float32, 4), 3: {1, 1, 1, 1}}}
	h.idx, h.w = [][]int32{{2, -1}}, [][]float64{nil}
	r, err := CompileProgram(p, h, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(); err != nil {
		t.Fatal(err)
	}
	if got := r.Value(1).([]float32); !slices.Equal(got, []float32{5, 6, 0, 0}) {
		t.Errorf("gathered %v, want row 2 and a padding row", got)
	}
	h.idx[0] = []int32{3, 0}
	err = r.Run()
	if want := `index "src": entry 0 is 3, outside [-1, 3)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("an entry past x's 3 rows: %v, want an error saying %q", err, want)
	}
}
