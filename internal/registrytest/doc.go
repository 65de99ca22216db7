// Package registrytest holds the test that a new encoding and a new dataset are each one
// registration: data.RegisterEncoding (with prep.RegisterNodeEncoder for a node encoding's
// computation) and data.RegisterDataset, and nothing else to edit. It has no code of its own.
package registrytest
