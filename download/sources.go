package download

import (
	"fmt"
	"strings"
)

// Manual instructions of the registry's archives (Archive.Manual).
const (
	manualPlain   = "download it by hand from that URL"
	manualDropbox = "download it by hand from that URL (a Dropbox link: in a browser, open it without ?dl=1 and press Download)"
	manualGitHub  = "download it by hand from that URL (a raw GitHub file: save the page as is)"
)

// benchmarkingGNNs is the folder of the split indices of ZINC in the benchmarking-gnns
// repository.
const benchmarkingGNNs = "https://raw.githubusercontent.com/graphdeeplearning/benchmarking-gnns/master/data/molecules/"

// sources is the registry: every archive of every dataset, in the order they are fetched. Size
// and SHA256 are filled in where a published value is known; where they are empty, Fetch
// records them in <data>/<Dest>/SHA256SUMS on the first download (trust on first use).
var sources = []Archive{
	// ZINC 12k: PyG torch_geometric/datasets/zinc.py, ZINC.url.
	{Dataset: "zinc", Name: "molecules.zip", URL: "https://www.dropbox.com/s/feo9qle74kg48gy/molecules.zip?dl=1",
		Unzip: true, Dest: "zinc/pyg", Manual: manualDropbox},
	// ZINC 12k split indices: PyG torch_geometric/datasets/zinc.py, ZINC.split_url.
	{Dataset: "zinc", Name: "train.index", URL: benchmarkingGNNs + "train.index", Dest: "zinc/pyg", Manual: manualGitHub},
	// ZINC 12k split indices: PyG torch_geometric/datasets/zinc.py, ZINC.split_url.
	{Dataset: "zinc", Name: "val.index", URL: benchmarkingGNNs + "val.index", Dest: "zinc/pyg", Manual: manualGitHub},
	// ZINC 12k split indices: PyG torch_geometric/datasets/zinc.py, ZINC.split_url.
	{Dataset: "zinc", Name: "test.index", URL: benchmarkingGNNs + "test.index", Dest: "zinc/pyg", Manual: manualGitHub},
	// AQSOL: PyG torch_geometric/datasets/aqsol.py, AQSOL.url.
	{Dataset: "aqsol", Name: "aqsol_graph_raw.zip", URL: "https://www.dropbox.com/s/lzu9lmukwov12kt/aqsol_graph_raw.zip?dl=1",
		Unzip: true, Dest: "aqsol/pyg", Manual: manualDropbox},
	// MNIST superpixels: PyG torch_geometric/datasets/gnn_benchmark_dataset.py, GNNBenchmarkDataset.url.
	{Dataset: "mnist", Name: "MNIST_v2.zip", URL: "https://data.pyg.org/datasets/benchmarking-gnns/MNIST_v2.zip",
		Unzip: true, Dest: "mnist/pyg", Manual: manualPlain},
	// CIFAR-10 superpixels: PyG torch_geometric/datasets/gnn_benchmark_dataset.py, GNNBenchmarkDataset.url.
	{Dataset: "cifar10", Name: "CIFAR10_v2.zip", URL: "https://data.pyg.org/datasets/benchmarking-gnns/CIFAR10_v2.zip",
		Unzip: true, Dest: "cifar10/pyg", Manual: manualPlain},
}

// Datasets lists the datasets of the registry in the order Archives knows them.
func Datasets() []string {
	var names []string
	seen := map[string]bool{}
	for _, a := range sources {
		if !seen[a.Dataset] {
			seen[a.Dataset] = true
			names = append(names, a.Dataset)
		}
	}
	return names
}

// Archives returns the archives of a dataset of the registry (a copy), in the order they are
// fetched. An unknown name is an error that lists the known ones.
func Archives(dataset string) ([]Archive, error) {
	var out []Archive
	for _, a := range sources {
		if a.Dataset == dataset {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("unknown dataset %q: want one of %s", dataset, strings.Join(Datasets(), ", "))
	}
	return out, nil
}
