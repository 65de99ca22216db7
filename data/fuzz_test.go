package data

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// moleculeText writes gs as the JSON Lines of the shared data folder (one categorical node and
// bond feature, a float target), the inverse of parseMolecules for such graphs.
func moleculeText(gs []*Graph) string {
	var b strings.Builder
	ints := func(xs []int32) string {
		parts := make([]string, len(xs))
		for i, x := range xs {
			parts[i] = fmt.Sprint(x)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	for _, g := range gs {
		fmt.Fprintf(&b, `{"x":%s,"src":%s,"dst":%s,"edge_attr":%s,"y":%v,"smiles":"C"}`+"\n",
			ints(g.Node.Cat), ints(g.Src), ints(g.Dst), ints(g.Edge.Cat), g.Y[0])
	}
	return b.String()
}

// FuzzParseMolecules feeds arbitrary bytes to the JSON Lines reader: it must return graphs that
// validate or an error naming the file, never panic; what it accepts must read back the same
// after writing it out again.
func FuzzParseMolecules(f *testing.F) {
	f.Add([]byte(`{"x":[0,1,2],"src":[0,1,1,2],"dst":[1,0,2,1],"edge_attr":[1,1,2,2],"y":-0.5,"smiles":"CCO"}` + "\n"))
	f.Add([]byte(`{"x":[3],"src":[],"dst":[],"edge_attr":[],"y":1.25}` + "\n\n" + `{"x":[0,0],"src":[0],"dst":[1],"edge_attr":[0],"y":2}`))
	f.Add([]byte(`{"x":[0],"src":[0],"dst":[5],"edge_attr":[0],"y":1}`))
	f.Add([]byte(`{"x":[0],"src":[],"dst":[],"edge_attr":[],"y":1,"extra":3}`))
	f.Add([]byte(`{"x":[0],"src":[],"dst":[],"edge_attr":[]}{}`))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		const path = "fuzz.jsonl.gz"
		gs, err := parseMolecules(path, bytes.NewReader(b), 28, 4)
		if err != nil {
			if !strings.HasPrefix(err.Error(), path+": ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			if gs != nil {
				t.Fatalf("graphs returned with an error")
			}
			return
		}
		for i, g := range gs {
			if err := g.Validate(); err != nil {
				t.Fatalf("graph %d accepted but invalid: %v", i, err)
			}
		}
		again, err := parseMolecules(path, strings.NewReader(moleculeText(gs)), 28, 4)
		if err != nil {
			t.Fatalf("rewritten graphs do not parse: %v", err)
		}
		if !sameMolecules(gs, again) {
			t.Fatalf("round trip changed the graphs")
		}
	})
}

func sameMolecules(a, b []*Graph) bool {
	if len(a) != len(b) {
		return false
	}
	eq := func(x, y []int32) bool { return fmt.Sprint(x) == fmt.Sprint(y) }
	for i := range a {
		g, h := a[i], b[i]
		if g.N != h.N || !eq(g.Src, h.Src) || !eq(g.Dst, h.Dst) || !eq(g.Node.Cat, h.Node.Cat) ||
			!eq(g.Edge.Cat, h.Edge.Cat) || g.Y[0] != h.Y[0] {
			return false
		}
	}
	return true
}
