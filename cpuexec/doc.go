// Package cpuexec runs the project's programs (package prog) on the CPU: the CPU backend, as
// gpuexec is the GPU's. It knows neither Gorgonia nor the front end (internal/archtest): the
// parameters, a batch's inputs and the batch norms' running statistics come from a Host (the
// lowering's binding implements it).
//
// CompileProgram makes one step per node the outputs need and then applies the CPU's own
// policies as passes over the steps (compile.go): a chain of gradient sums is one sum of all its
// terms; a product whose only reader is AddBias runs with the bias in its kernel; an op that can
// add a summand to its result (a product's dx, a batch norm's and the gated aggregation's first
// gradient) takes over a two-term gradient sum whose other term is ready, saving a pass; a
// product's gradient pass also computes the bias gradient, and its dx and dw in one pass (or
// the one needed alone); the members of a gradient group its first pass computes join its
// step; and, asked for, activation recomputation replays each layer's forward steps before the
// backward pass needs them. It then plans the activations (runplan.go, prog.AssignSlots, the
// planner the GPU executor uses too): every value a step writes lives from that step to its
// last reader, and values whose lifetimes do not overlap share a buffer, so a training step
// holds the activations live at its peak rather than every intermediate. An Arena lets the
// runners of one trainer, which never run at once, share one set of buffers.
//
// Each step runs through the dispatch table (package dispatch, the one both executors use)
// into the CPU backend: call (call.go) gives the step's operands, its kernel methods
// (kernels.go, generic over float32 and float64) call the arithmetic in package kern; what a
// forward op keeps for its gradient lives with its group (prog.Node.Group). Gorgonia's own
// element-wise operators run on kern's twins of them, which give Gorgonia's bits.
package cpuexec
