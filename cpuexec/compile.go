package cpuexec

import (
	"fmt"
	"slices"

	"github.com/rewiregnn/rewiregnn/prog"
)

// Compiling a program for the CPU: one step per node the outputs need, then the CPU's own
// policies, each a pass over the steps (docs/design.md says where they differ from the GPU's):
//   - a chain of gradient sums (GradSum nodes whose only reader is another) is one sum of all
//     its terms (sumChains);
//   - a product whose only reader is AddBias runs as one kernel with the bias (fuseBias);
//   - an op that can add a summand to its result takes over a two-term gradient sum whose
//     other term is ready before it runs (foldSums);
//   - a product's gradient pass also computes the bias gradient, the column sums of its g
//     (shareColSums);
//   - a product's two gradients are one pass, or its one needed gradient alone (pairProducts);
//     a gradient group whose first member's pass computes the others is one step
//     (joinMembers).
// The sums' terms and the ops given a summand are the choices of the graph executor this
// replaced (checked bit for bit before it went: docs/results/executor/README.md).

// compiler holds Compile's bookkeeping.
type compiler struct {
	p       *prog.Program
	steps   []Step
	users   []int   // by value: the nodes reading it (a member reading its first member's result only to run after it does not count)
	kept    []bool  // by value: read by the host after the run (loss, prediction, gradients)
	readers [][]int // by value: the nodes reading it
}

// summing reports whether node n's kernel can add a summand to its result (prog.Spec.Summand:
// member 0).
func summing(n *prog.Node) bool { return n.Op.Spec().Summand && n.Which == 0 }

// follows reports whether node n is a member, after the first, of a group whose first member's
// pass computes it (prog.Spec.Joined): its input 0 is that member's result, read only to run
// after it.
func follows(n *prog.Node) bool { return n.Op.Spec().Joined && n.Which > 0 }

// members is the number of results a step of op o has (Step.Outs).
func members(o prog.Op) int {
	switch o {
	case prog.MatMulGradX, prog.MatMulGradW:
		return 2
	}
	return max(o.Spec().Members, 1)
}

// product gradient member of a node: 0 dx, 1 dw.
func productWhich(o prog.Op) int {
	if o == prog.MatMulGradW {
		return 1
	}
	return 0
}

// newCompiler counts every value's readers among the needed nodes.
func newCompiler(p *prog.Program, need []bool) *compiler {
	c := &compiler{p: p, users: make([]int, len(p.Vals)), kept: make([]bool, len(p.Vals)), readers: make([][]int, len(p.Vals))}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		if !need[i] {
			continue
		}
		for k, v := range n.In {
			c.readers[v] = append(c.readers[v], i)
			if k > 0 || !follows(n) {
				c.users[v]++
			}
		}
	}
	for _, v := range p.Outputs() {
		c.kept[v] = true
	}
	return c
}

// steps makes one step per needed node, the gradient sums' chains joined (sumChains).
func (c *compiler) makeSteps(need []bool) {
	p := c.p
	folded := make([]bool, len(p.Vals))
	for i := range p.Nodes {
		n := p.Nodes[i]
		if !need[i] {
			continue
		}
		if n.Op != prog.GradSum {
			st := Step{Kind: n.Op, Node: n, Outs: make([]int, members(n.Op)), Ins: make([][]int, members(n.Op)), Summand: -1, ColSum: -1}
			for w := range st.Outs {
				st.Outs[w] = -1
			}
			w := n.Which
			if n.Op == prog.MatMulGradX || n.Op == prog.MatMulGradW {
				w = productWhich(n.Op)
			}
			st.Outs[w], st.Ins[w] = n.Out, n.In
			c.steps = append(c.steps, st)
			continue
		}
		if c.users[n.Out] == 1 && !c.kept[n.Out] && c.readBySumsOnly(n.Out) {
			folded[n.Out] = true // its reader adds its terms instead
			continue
		}
		var terms []int
		var expand func(in []int)
		expand = func(in []int) {
			for _, t := range in {
				if folded[t] {
					expand(p.Nodes[p.Vals[t].Node].In)
					continue
				}
				terms = append(terms, t)
			}
		}
		expand(n.In)
		c.steps = append(c.steps, Step{Kind: prog.GradSum, Node: n, Outs: []int{n.Out}, Ins: [][]int{terms}, Summand: -1, ColSum: -1})
	}
}

// readBySumsOnly reports whether every reader of value v is a gradient sum.
func (c *compiler) readBySumsOnly(v int) bool {
	for _, r := range c.readers[v] {
		if c.p.Nodes[r].Op != prog.GradSum {
			return false
		}
	}
	return true
}

// producers maps each value a step writes to the step.
func (c *compiler) producers() map[int]int {
	at := map[int]int{}
	for i, st := range c.steps {
		for _, o := range st.Outs {
			if o >= 0 {
				at[o] = i
			}
		}
	}
	return at
}

// out is the step's single (first) result.
func (st *Step) out() int { return st.Outs[firstOut(st)] }

// reads lists the values the step's kernel reads: every member's inputs but a joined member's
// first (its first member's result, computed by the same pass), and the summand.
func (st *Step) reads() []int {
	var out []int
	for w, in := range st.Ins {
		if w > 0 && follows(&prog.Node{Op: st.Kind, Which: w}) && len(in) > 0 {
			in = in[1:]
		}
		out = append(out, in...)
	}
	if st.Summand >= 0 {
		out = append(out, st.Summand)
	}
	return out
}

// ins is the step's primary member's inputs.
func (st *Step) ins() []int {
	for _, in := range st.Ins {
		if in != nil {
			return in
		}
	}
	return nil
}

// drop removes the steps marked gone.
func (c *compiler) drop(gone map[int]bool) {
	out := c.steps[:0]
	for i, st := range c.steps {
		if !gone[i] {
			out = append(out, st)
		}
	}
	c.steps = out
}

// fuseBias runs each product whose only reader is an AddBias as one step with it.
func (c *compiler) fuseBias() {
	at := c.producers()
	gone := map[int]bool{}
	for i := range c.steps {
		s := &c.steps[i]
		if s.Kind != prog.AddBias {
			continue
		}
		x := s.Ins[0][0]
		p, ok := at[x]
		if !ok || c.users[x] != 1 || c.kept[x] || c.steps[p].Kind != prog.MatMul || len(c.steps[p].Ins[0]) != 2 {
			continue
		}
		mm := c.steps[p]
		s.Kind, s.Node = prog.MatMul, mm.Node
		s.Node.Out = s.Outs[0]
		s.Ins[0] = []int{mm.Ins[0][0], mm.Ins[0][1], s.Ins[0][1]}
		gone[p] = true
	}
	c.drop(gone)
}

// pairOf returns the step computing the other gradient of the product whose gradient step i
// computes (-1: none).
func (c *compiler) pairOf(i int) int {
	s := &c.steps[i]
	for j := range c.steps {
		t := &c.steps[j]
		if j != i && (t.Kind == prog.MatMulGradX || t.Kind == prog.MatMulGradW) && t.Kind != s.Kind && t.Node.Group == s.Node.Group {
			return j
		}
	}
	return -1
}

// foldSums lets an op that can add a summand to its result compute a two-term sum step itself
// when it produces one of the terms for the sum alone and the other term is ready before it
// runs: one pass over the data instead of two. A product's dx pass taking a summand runs before
// its dw step (which it then computes too).
func (c *compiler) foldSums() {
	at := c.producers()
	gone := map[int]bool{}
	taken := map[int]bool{} // steps given a summand
	var follow [][2]int     // (pair group, kind of the step to move after the other)
	for i := range c.steps {
		s := &c.steps[i]
		if s.Kind != prog.GradSum || len(s.Ins[0]) != 2 {
			continue
		}
		terms := s.Ins[0]
		best := -1
		for t, term := range terms {
			p, ok := at[term]
			if !ok || gone[p] || c.users[term] != 1 || c.kept[term] || !slices.Equal(c.p.Vals[term].Shape, c.p.Vals[s.out()].Shape) || taken[p] {
				continue
			}
			ps := &c.steps[p]
			if ps.Outs[0] != term || !summing(&ps.Node) {
				continue
			}
			if q, ok := at[terms[1-t]]; ok && q > p {
				continue // the summand is not ready when the op runs
			}
			if ps.Kind == prog.MatMulGradX {
				if j := c.pairOf(p); j >= 0 && j < p && c.users[c.steps[j].out()] != 0 {
					continue
				}
			}
			if best < 0 || p > at[terms[best]] {
				best = t
			}
		}
		if best < 0 {
			continue
		}
		p := at[terms[best]]
		ps := &c.steps[p]
		ps.Summand = terms[1-best]
		ps.Outs[0] = s.out()
		at[s.out()] = p
		taken[p] = true
		gone[i] = true
		if ps.Kind == prog.MatMulGradX {
			follow = append(follow, [2]int{ps.Node.Group, int(prog.MatMulGradW)})
		}
	}
	c.drop(gone)
	for _, f := range follow {
		a, b := c.stepOfKind(f[0], prog.Op(f[1])), c.stepOfKind(f[0], prog.MatMulGradX)
		if a >= 0 && a < b {
			st := c.steps[a]
			copy(c.steps[a:b], c.steps[a+1:b+1])
			c.steps[b] = st
		}
	}
}

// stepOfKind returns the step of op o in group g (-1: none).
func (c *compiler) stepOfKind(g int, o prog.Op) int {
	for j := range c.steps {
		if c.steps[j].Kind == o && c.steps[j].Node.Group == g {
			return j
		}
	}
	return -1
}

// shareColSums lets a product's gradient pass also compute a ColSum of its g (the gradient of
// the bias added to the product) whose result nothing reads but the host: the ColSum step goes.
func (c *compiler) shareColSums() {
	lins := map[int]int{} // g → the product's group
	for _, s := range c.steps {
		switch s.Kind {
		case prog.MatMulGradX: // (g, w)
			lins[s.Ins[0][0]] = s.Node.Group
		case prog.MatMulGradW: // (x, g)
			lins[s.Ins[1][1]] = s.Node.Group
		}
	}
	claimed := map[int]bool{}
	gone := map[int]bool{}
	for i, s := range c.steps {
		if s.Kind != prog.ColSum || c.users[s.out()] != 0 {
			continue
		}
		g, ok := lins[s.Ins[0][0]]
		if !ok || claimed[g] {
			continue
		}
		a, b := c.stepOfKind(g, prog.MatMulGradX), c.stepOfKind(g, prog.MatMulGradW)
		if max(a, b) < 0 {
			continue
		}
		claimed[g] = true
		for _, j := range []int{a, b} {
			if j >= 0 {
				c.steps[j].ColSum = s.out()
			}
		}
		gone[i] = true
	}
	c.drop(gone)
}

// pairProducts makes a product's two gradient steps one: the first computes both (the second
// goes).
func (c *compiler) pairProducts() {
	gone := map[int]bool{}
	for i := range c.steps {
		s := &c.steps[i]
		if gone[i] || (s.Kind != prog.MatMulGradX && s.Kind != prog.MatMulGradW) {
			continue
		}
		j := c.pairOf(i)
		if j < i {
			continue
		}
		t := &c.steps[j]
		w := productWhich(t.Kind)
		s.Outs[w], s.Ins[w] = t.Outs[w], t.Ins[w]
		if t.Summand >= 0 {
			s.Summand = t.Summand
		}
		gone[j] = true
	}
	c.drop(gone)
}

// joinMembers makes the members of a gradient group that its first member's pass computes
// (follows) part of that member's step.
func (c *compiler) joinMembers() error {
	first := map[[2]int]int{} // (op, group) → step of member 0
	gone := map[int]bool{}
	for i := range c.steps {
		s := &c.steps[i]
		if s.Kind == prog.GradSum {
			continue
		}
		key := [2]int{int(s.Kind), s.Node.Group}
		if !follows(&s.Node) {
			if s.Ins[0] != nil && s.Node.Group >= 0 {
				first[key] = i
			}
			continue
		}
		f, ok := first[key]
		if !ok {
			return fmt.Errorf("cpu: %s: its group's first member is not computed before it", c.p.Describe(s.out()))
		}
		w := s.Node.Which
		c.steps[f].Outs[w], c.steps[f].Ins[w] = s.Outs[w], s.Ins[w]
		gone[i] = true
	}
	c.drop(gone)
	return nil
}

// recompute inserts, before the first backward step that reads an activation of a layer (a
// segment of forward steps from one checkpoint to the next), a replay of that segment's forward
// steps whose results the forward pass does not keep.
func (c *compiler) recompute() error {
	p := c.p
	check := map[int]bool{}
	for _, v := range p.Checkpoints {
		check[v] = true
	}
	if len(check) == 0 {
		return fmt.Errorf("recompute: the model declares no checkpoints (layer outputs)")
	}
	seg := map[int]int{} // value → segment of the forward step writing it
	ends := map[int]bool{}
	isFwd := make([]bool, len(c.steps))
	for i, s := range c.steps {
		if s.Kind == prog.GradSum || s.Node.Grad {
			continue
		}
		isFwd[i] = true
		k := 0
		for _, v := range s.reads() {
			if kv, ok := seg[v]; ok {
				if check[v] {
					kv++
				}
				k = max(k, kv)
			}
		}
		seg[s.out()] = k
		if check[s.out()] {
			ends[k] = true
		}
	}
	keep := map[int]bool{}
	for v := range check {
		keep[v] = true
	}
	for v, k := range c.kept {
		if k {
			keep[v] = true
		}
	}
	for i, s := range c.steps {
		if !isFwd[i] {
			continue
		}
		for _, v := range s.reads() {
			if kv, ok := seg[v]; ok && kv != seg[s.out()] {
				keep[v] = true
			}
		}
		if !ends[seg[s.out()]] {
			keep[s.out()] = true
		}
	}
	replayed := map[int]bool{}
	var out []Step
	for i, s := range c.steps {
		if !isFwd[i] {
			for _, v := range s.reads() {
				k, ok := seg[v]
				if !ok || keep[v] || replayed[k] {
					continue
				}
				replayed[k] = true
				for j, f := range c.steps {
					if isFwd[j] && seg[f.out()] == k && !keep[f.out()] {
						if j > i {
							return fmt.Errorf("recompute: forward step %s runs after a gradient step that needs it", p.Describe(f.out()))
						}
						f.Replay = true
						out = append(out, f)
					}
				}
			}
		}
		out = append(out, s)
	}
	c.steps = out
	return nil
}
