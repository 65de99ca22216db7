package data

import (
	"fmt"
	"strconv"
	"strings"
)

// otherSpec describes the datasets that are not molecule files (their task and splits are the
// registry's, datasets.go). ok is false for a name it does not know.
func otherSpec(name string) (spec *Spec, ok bool, err error) {
	name = strings.ToLower(name)
	one := Row{Float: []float32{1}}
	switch name {
	case "cluster":
		return &Spec{Name: name, NodeVocab: 7, EdgeConst: one, CLSNode: Row{Cat: []int32{7}}, LapQ: 20, Classes: 6}, true, nil
	case "pattern":
		return &Spec{Name: name, NodeVocab: 3, EdgeConst: one, CLSNode: Row{Cat: []int32{3}}, LapQ: 2, Classes: 2}, true, nil
	case "mnist":
		return &Spec{Name: name, EdgeConst: Row{Float: []float32{0}}, CLSNode: Row{Float: make([]float32, 3)}, LapQ: 8, Directed: true, Classes: 10}, true, nil
	case "cifar10":
		return &Spec{Name: name, EdgeConst: Row{Float: []float32{0}}, CLSNode: Row{Float: make([]float32, 5)}, LapQ: 8, Directed: true, Classes: 10}, true, nil
	case "pattern-v1":
		return &Spec{Name: name, NodeVocab: 3, EdgeConst: one, CLSNode: Row{Cat: []int32{3}}, LapQ: 2, Classes: 2}, true, nil
	case "peptides-func", "peptides-struct":
		return peptidesSpec(name), true, nil
	case "erdosrenyi":
		return &Spec{Name: name, NodeVocab: 1, EdgeConst: one, CLSNode: Row{Cat: []int32{1}}, LapQ: 8, Classes: DefaultErdosRenyi().Graphs}, true, nil
	}
	if rest, found := strings.CutPrefix(name, "neighborsmatch-"); found {
		depth, err := strconv.Atoi(rest)
		if err != nil || depth < 1 || depth > NeighborsMatchMaxDepth {
			return nil, false, fmt.Errorf("dataset %q: the NeighborsMatch depth must be a whole number in 1..%d (e.g. neighborsmatch-3)", name, NeighborsMatchMaxDepth)
		}
		L := int32(1) << depth
		// keys and values are 0..L; the CLS node gets the fresh id L+1 for both
		return &Spec{Name: name, NodeVocab: int(L) + 1, EdgeConst: one, CLSNode: Row{Cat: []int32{L + 1, L + 1}}, LapQ: 8, Directed: true,
			Classes: int(L) + 1}, true, nil
	}
	return nil, false, nil
}

// loadOther loads or generates one split of a dataset otherSpec describes.
func loadOther(dir string, spec *Spec, split string, seed uint64, limit int) ([]*Graph, error) {
	switch spec.Name {
	case "cluster":
		return generateSBM(ClusterConfig(), split, seed, limit)
	case "pattern":
		return generateSBM(PatternConfig(), split, seed, limit)
	case "pattern-v1":
		return generateSBM(PatternV1Config(), split, seed, limit)
	case "mnist":
		return LoadMNIST(dir, split, MNISTSuperpixels())
	case "cifar10":
		return LoadCIFAR10(dir, split, CIFAR10Superpixels())
	case "erdosrenyi":
		return ErdosRenyi(DefaultErdosRenyi(), seed)
	}
	depth, _ := strconv.Atoi(strings.TrimPrefix(spec.Name, "neighborsmatch-"))
	train, test, err := NeighborsMatch(depth, seed)
	if split == "test" {
		return test, err
	}
	return train, err
}
