package rewire

import (
	"fmt"
	"testing"

	"github.com/rewiregnn/rewiregnn/data"
)

// FuzzRewire feeds arbitrary edge lists (endpoints possibly out of range, repeated, self-loops)
// and radii (possibly < 1). Rewire must either return an error or a valid graph from which
// the original is recovered exactly. Run with: go test -fuzz FuzzRewire ./rewire
func FuzzRewire(f *testing.F) {
	f.Add([]byte{5, 2, 0, 1, 1, 0, 1, 2, 2, 1})
	f.Add([]byte{3, 1, 0, 0})
	f.Add([]byte{0, 1})
	f.Add([]byte{4, 0, 0, 1})
	f.Add([]byte{2, 3, 0, 5})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		n := int(in[0] % 24)
		r := int(in[1]%12) - 1
		g := &data.Graph{N: n, Edge: data.Features{CatDim: 1}}
		for i := 2; i+1 < len(in); i += 2 {
			g.Src = append(g.Src, int32(in[i]%26)-1)
			g.Dst = append(g.Dst, int32(in[i+1]%26)-1)
			g.Edge.Cat = append(g.Edge.Cat, int32(i%3+1))
		}
		var rw Rewirer
		for _, cls := range []bool{false, true} {
			opt := Options{R: r, SelfLoops: in[1]&0x80 == 0, CLS: cls, SP: true, Adj: true,
				EdgeConst: data.Row{Cat: []int32{0}}, CLSNode: data.Row{}}
			out, err := rw.Rewire(g, opt)
			if err != nil {
				return
			}
			if err := out.Validate(); err != nil {
				t.Fatalf("invalid output: %v", err)
			}
			back, err := Recover(out, ByAdj)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(edgeSet(back)) != fmt.Sprint(edgeSet(g)) {
				t.Fatalf("recovered %v, want %v", edgeSet(back), edgeSet(g))
			}
		}
	})
}
