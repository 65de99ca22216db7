// Package cpuexec runs the compiled graphs of the project's nets on the CPU: a small executor
// (Machine) used instead of gorgonia's TapeMachine. (It still runs the front end's Gorgonia
// graph; moving it onto the lowered program, as the GPU executor gpuexec is, is the next step.)
//
// Compile orders the ops topologically, skips gradient nodes no output needs, runs a product
// followed by AddBias as one kernel, computes gorgonia.Grad's chains of gradient additions (the
// sums Grad recorded) as one vectorised sum, lets an op that can add a summand to its result
// (ops.Func.SumsIn) take over a two-term sum whose other term is ready, saving a pass, and has
// a product's gradient pass compute the bias gradient too. It then plans the activations
// (values.go, with prog.AssignSlots): every result it provides a buffer for lives from the step writing it
// to the last step reading it, and results whose lifetimes do not overlap share a buffer (the
// same planner lays out the GPU executor's slots), so a training step holds the activations
// live at its peak rather than every intermediate. These are choices of the executor
// only, kept in its steps: the graph, and what each op computes, are the same for any other
// executor.
package cpuexec
