// Package gpu trains a model on a device: Trainer puts an nn.Trainer's model on a
// gpuexec.Backend (a GPU, or the emulated GPU), lowers each bucket's net once (nn.Net.Program)
// and runs its program with the GPU executor (package gpuexec), with the parameters, Adam's
// moments and the batch-norm statistics resident on the device and the nn.Trainer as the host
// mirror; Compile gives a net's device plan (train -plan); Choose resolves -device
// cpu|cuda|emu|auto. It is the bridge from the front end (nn, lower) to the executor, which
// knows neither.
package gpu
