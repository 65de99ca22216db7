// Package exec runs the compiled graphs of the project's nets on the CPU: a small executor
// (Machine) used instead of gorgonia's TapeMachine, and Grad, gorgonia.Grad that also records
// the gradient sums it adds to the graph.
//
// Compile orders the ops topologically, skips gradient nodes no output needs, runs a product
// followed by AddBias as one kernel, computes gorgonia.Grad's chains of gradient additions (the
// sums Grad recorded) as one vectorised sum, lets an op that can add a summand to its result
// (ops.Func.SumsIn) take over a two-term sum whose other term is ready, saving a pass, and has
// a product's gradient pass compute the bias gradient too. These are choices of the executor
// only, kept in its steps: the graph, and what each op computes, are the same for any other
// executor.
package exec
