// Package nn provides the layer-building side of the project's models: a Builder that adds
// layers (linear, embedding, norms, dropout, readout MLP, losses) to one Gorgonia graph on the
// ops of package ops, the parameters with their initialisation, the input layer (IO, Inputs:
// a batch loaded into index, mask and tensor holders sized for a shape bucket) and head, shape
// buckets, Adam, and a Trainer that compiles one net per bucket (Finish, on the CPU executor of
// package cpuexec) and reuses it; Net.Program lowers a net for the GPU executor (package lower).
//
// A Net holds a model compiled for one bucket: its graph, input holders, prediction, loss
// and, for training, the gradients of the parameters the loss depends on. Batches of any size
// up to a bucket's run in it: padding rows and edges are kept out of every result by the -1
// entries of the indices and by the masks and weights the holders carry.
package nn
