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
// and SHA256 are filled in where a published value is known (the ZINC index files); no sum or
// size of the other archives is published by PyG, benchmarking-gnns or LRGB, so for them Fetch records
// both in <data>/<Dest>/SHA256SUMS on the first download (trust on first use) and checks every
// later copy against that record.
var sources = []Archive{
	// ZINC 12k: PyG torch_geometric/datasets/zinc.py, ZINC.url.
	{Dataset: "zinc", Name: "molecules.zip", URL: "https://www.dropbox.com/s/feo9qle74kg48gy/molecules.zip?dl=1",
		Unzip: true, Dest: "zinc/pyg", Manual: manualDropbox},
	// ZINC 12k split indices: PyG torch_geometric/datasets/zinc.py, ZINC.split_url. Sizes and
	// sums are those of the git blobs of benchmarking-gnns (unchanged since its first commit,
	// 7125b402), and the same SHA-256 sums are registered by JuliaML/MLDatasets.jl
	// (src/datasets/graphs/zinc.jl).
	{Dataset: "zinc", Name: "train.index", URL: benchmarkingGNNs + "train.index", Dest: "zinc/pyg", Manual: manualGitHub,
		Size: 65110, SHA256: "575d6acd72ac207a95947e2bdd16411ef6fc3faa88c2f55a2c496ea43022a6d8"},
	{Dataset: "zinc", Name: "val.index", URL: benchmarkingGNNs + "val.index", Dest: "zinc/pyg", Manual: manualGitHub,
		Size: 5541, SHA256: "fe48c38157f0d38e7fc441903a143392eda080511a79e8fb8f60f5c1b0a9c164"},
	{Dataset: "zinc", Name: "test.index", URL: benchmarkingGNNs + "test.index", Dest: "zinc/pyg", Manual: manualGitHub,
		Size: 4782, SHA256: "6aa50d98976044fb36089afef5b4c991b429ca1c8e009d33a0319e42a2d9b525"},
	// AQSOL: PyG torch_geometric/datasets/aqsol.py, AQSOL.url.
	{Dataset: "aqsol", Name: "aqsol_graph_raw.zip", URL: "https://www.dropbox.com/s/lzu9lmukwov12kt/aqsol_graph_raw.zip?dl=1",
		Unzip: true, Dest: "aqsol/pyg", Manual: manualDropbox},
	// MNIST superpixels: PyG torch_geometric/datasets/gnn_benchmark_dataset.py, GNNBenchmarkDataset.url.
	{Dataset: "mnist", Name: "MNIST_v2.zip", URL: "https://data.pyg.org/datasets/benchmarking-gnns/MNIST_v2.zip",
		Unzip: true, Dest: "mnist/pyg", Manual: manualPlain},
	// CIFAR-10 superpixels: PyG torch_geometric/datasets/gnn_benchmark_dataset.py, GNNBenchmarkDataset.url.
	{Dataset: "cifar10", Name: "CIFAR10_v2.zip", URL: "https://data.pyg.org/datasets/benchmarking-gnns/CIFAR10_v2.zip",
		Unzip: true, Dest: "cifar10/pyg", Manual: manualPlain},
	// LRGB Peptides-func and Peptides-struct: PyG torch_geometric/datasets/lrgb.py,
	// LRGBDataset.urls; each unpacks to a folder peptidesfunc/ (peptidesstruct/) of train.pt,
	// val.pt and test.pt. Neither PyG nor LRGB publishes a size or sum.
	{Dataset: "peptides-func", Name: "peptidesfunc.zip", URL: "https://www.dropbox.com/s/ycsq37q8sxs1ou8/peptidesfunc.zip?dl=1",
		Unzip: true, Dest: "peptides-func/pyg", Manual: manualDropbox},
	{Dataset: "peptides-struct", Name: "peptidesstruct.zip", URL: "https://www.dropbox.com/s/zgv4z8fcpmknhs8/peptidesstruct.zip?dl=1",
		Unzip: true, Dest: "peptides-struct/pyg", Manual: manualDropbox},
}

// beyondPaper are the datasets of the registry that the paper does not use (issue 46's LRGB
// peptides): cmd/data fetches them when named, not for "all".
var beyondPaper = map[string]bool{"peptides-func": true, "peptides-struct": true}

// PaperDatasets lists the datasets of the paper's tables ("all" of cmd/data get), in the
// order of Datasets.
func PaperDatasets() []string {
	var names []string
	for _, n := range Datasets() {
		if !beyondPaper[n] {
			names = append(names, n)
		}
	}
	return names
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
