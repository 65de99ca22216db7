package data

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// EnvDataDir names the environment variable that points to the benchmark data folder when no
// flag or config key does.
const EnvDataDir = "REWIREGNN_DATA"

// DefaultDataDir is where the benchmark data folder is looked for last: the shared folder beside
// a checkout of this repository.
const DefaultDataDir = "../shared/data"

// ResolveDataDir picks the data folder: dir if given, else $REWIREGNN_DATA, else
// DefaultDataDir. It fails with a message saying where the data was expected and how to point
// to it.
func ResolveDataDir(dir string) (string, error) {
	from := "the -data flag"
	if dir == "" {
		dir, from = os.Getenv(EnvDataDir), "$"+EnvDataDir
	}
	if dir == "" {
		dir, from = DefaultDataDir, "the default"
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return "", fmt.Errorf("data folder %q (from %s) not found: the benchmark files (zinc/, aqsol/, mnist/, and cifar10/, peptides-func/, peptides-struct/ if you use them) are expected there; "+
			"pass -data DIR or set %s to the folder that holds them, or fetch the public distributions into it with `go run ./cmd/data get -data DIR all`", dir, from, EnvDataDir)
	}
	return dir, nil
}

// Spec describes a dataset: its vocabularies and the constants rewiring gives to the edges it
// adds (C_e) and to the CLS node (C_v): docs/protocol.md §"Edge and CLS constants".
type Spec struct {
	Name      string
	NodeVocab int  // categorical node vocabulary without the CLS id, shared by every node column (0 when NodeVocabs gives one per column, or node features are floats)
	EdgeVocab int  // categorical edge vocabulary of the one edge column (0 when EdgeVocabs gives one per column, or edge features are floats)
	EdgeConst Row  // C_e: feature of every new r-hop, self-loop and CLS edge
	CLSNode   Row  // C_v: feature of the CLS node
	LapQ      int  // default number of Laplacian eigenvectors
	Directed  bool // edges are not stored in both directions
	Splits    []string
	Task      Task // what is predicted (docs/protocol.md §"Datasets")
	Classes   int  // number of classes (logits) of a classification task, or of binary labels of a multi-label one; 0 for regression
	Targets   int  // number of regression targets per graph (0 or 1: one)

	// Per-column categorical vocabularies (OGB's atom and bond features: each column its own
	// table, the embeddings summed; docs/protocol.md §"Input layer and encoders"). When set
	// they replace NodeVocab and EdgeVocab, one entry per column of CLSNode.Cat and
	// EdgeConst.Cat.
	NodeVocabs []int // each node column's vocabulary without the CLS id (CLSNode.Cat[c] is column c's fresh id)
	EdgeVocabs []int // each edge column's vocabulary, C_e's ids included
}

// NodeColumnVocabs returns the vocabulary of every categorical node column, without the CLS id:
// NodeVocabs, or NodeVocab for each column of the CLS node's feature row; nil when node
// features are floats.
func (s *Spec) NodeColumnVocabs() []int {
	if s.NodeVocabs != nil {
		return s.NodeVocabs
	}
	return SharedVocabs(s.NodeVocab, len(s.CLSNode.Cat))
}

// EdgeColumnVocabs returns the vocabulary of every categorical edge column (C_e's ids
// included): EdgeVocabs, or EdgeVocab for the one column; nil when edges carry float features
// or none.
func (s *Spec) EdgeColumnVocabs() []int {
	if s.EdgeVocabs != nil {
		return s.EdgeVocabs
	}
	return SharedVocabs(s.EdgeVocab, 1)
}

// SharedVocabs lists the vocabulary of cols categorical columns that share one of vocab ids (at
// least one column); nil when vocab ≤ 0 (no categorical columns). It is the per-column form of
// the shared one (NodeVocab and its columns, EdgeVocab), for the spec here and for nn.IO.
func SharedVocabs(vocab, cols int) []int {
	if vocab <= 0 {
		return nil
	}
	return slices.Repeat([]int{vocab}, max(cols, 1))
}

// Task is what a dataset asks a model to predict.
type Task string

// The tasks of the benchmark datasets.
const (
	GraphRegression Task = "graph_regression" // one value per graph, L1 loss (ZINC, AQSOL)
	GraphClass      Task = "graph_class"      // one class per graph, cross-entropy (MNIST, CIFAR10, Erdős–Rényi)
	NodeClass       Task = "node_class"       // one class per node, SBM weighted cross-entropy (CLUSTER, PATTERN)
	RootClass       Task = "root_class"       // one class per graph read at its root node 0 (NeighborsMatch)
	GraphMultiLabel Task = "graph_multilabel" // graph-level binary labels, Classes of them per graph in Y (NaN: missing), BCE with logits
)

// The molecule datasets: the dictionary file beside their JSON Lines files, and the vocabularies
// of the benchmark (which the public distribution's ids index).
var molecules = map[string]struct {
	dict      string
	atomKey   string // key of the atom dictionary inside dict ("" for a flat object)
	atomVocab int    // the benchmark's atom dictionary (what the public distribution's ids index)
	bondVocab int
	lapQ      int
}{
	"zinc":  {dict: "atom_types.json", atomVocab: 28, bondVocab: 4, lapQ: 8},
	"aqsol": {dict: "dicts.json", atomKey: "atom_dict", atomVocab: 65, bondVocab: 5, lapQ: 4},
}

// DefaultGenSeed is the seed LoadSplit uses for the generated datasets (CLUSTER, PATTERN,
// NeighborsMatch, Erdős–Rényi); LoadSplitSeed takes another.
const DefaultGenSeed uint64 = 41

// LoadSplit loads one split ("train", "val" or "test") of a dataset: molecules from their JSON
// Lines files in dir (or their public distribution), MNIST from dir/mnist and CIFAR-10 from
// dir/cifar10 (superpixel graphs computed on the fly; see the preprocessing cache), the LRGB
// peptides from dir/peptides-func/{train,val,test}.jsonl.gz when there (Peptides-func only; see
// SourceOf) or their public distribution in dir/peptides-func/pyg and dir/peptides-struct/pyg,
// CLUSTER, PATTERN, NeighborsMatch and Erdős–Rényi generated with DefaultGenSeed.
func LoadSplit(dir, name, split string) ([]*Graph, *Spec, error) {
	return LoadSplitSeed(dir, name, split, DefaultGenSeed)
}

// LoadSplitSeed is LoadSplit with the seed of the generated datasets given.
func LoadSplitSeed(dir, name, split string, seed uint64) ([]*Graph, *Spec, error) {
	return loadSplit(dir, name, split, seed, 0)
}

// LoadFirst returns the first n graphs of LoadSplit's split (all of them when n ≤ 0). CLUSTER
// and PATTERN generate only those n, each graph depending on its index alone, so a subset run
// does not generate (and hold) the whole split.
func LoadFirst(dir, name, split string, n int) ([]*Graph, *Spec, error) {
	gs, spec, err := loadSplit(dir, name, split, DefaultGenSeed, n)
	if err == nil && n > 0 && len(gs) > n {
		gs = gs[:n]
	}
	return gs, spec, err
}

func loadSplit(dir, name, split string, seed uint64, limit int) ([]*Graph, *Spec, error) {
	gs, spec, err := loadSplitFiles(dir, name, split, seed, limit)
	return gs, spec, readFailed(dir, name, err)
}

// loadSplitFiles is loadSplit without the way out of a damaged file.
func loadSplitFiles(dir, name, split string, seed uint64, limit int) ([]*Graph, *Spec, error) {
	spec, err := OpenSpec(dir, name)
	if err != nil {
		return nil, nil, err
	}
	if !contains(spec.Splits, split) {
		return nil, nil, fmt.Errorf("%s: unknown split %q (have %s)", name, split, strings.Join(spec.Splits, ", "))
	}
	if d, _, _ := LookupDataset(spec.Name); d.Load != nil {
		gs, err := d.Load(dir, spec, split, seed, limit)
		return gs, spec, err
	}
	switch src := SourceOf(dir, spec.Name); {
	case src == SourceJSONL && peptides[spec.Name].jsonl: // streamed: a subset reads its lines only
		gs, err := loadPeptidesJSONL(dir, spec, split, limit)
		if err != nil {
			return nil, nil, err
		}
		return gs, spec, nil
	case src == SourcePyG:
		gs, err := loadPyG(dir, spec, split)
		if err != nil {
			return nil, nil, err
		}
		return gs, spec, nil
	}
	if _, ok := molecules[spec.Name]; !ok {
		gs, err := loadOther(dir, spec, split, seed, limit)
		if err != nil {
			return nil, nil, err
		}
		return gs, spec, nil
	}
	name = spec.Name
	path := filepath.Join(dir, name, split+".jsonl.gz")
	gs, err := ReadMolecules(path, spec.NodeVocab, spec.EdgeVocab)
	if err != nil {
		return nil, nil, err
	}
	return gs, spec, nil
}

// OpenSpec reads a dataset's dictionaries from dir and returns its description, its task and
// splits the registry's.
func OpenSpec(dir, name string) (*Spec, error) {
	if d, _, ok := LookupDataset(strings.ToLower(name)); ok && d.Open != nil {
		return withFacts(d.Open(dir, strings.ToLower(name)))
	}
	return withFacts(openBuiltin(dir, name))
}

// openBuiltin describes a dataset whose loader is data's own.
func openBuiltin(dir, name string) (*Spec, error) {
	if spec, ok, err := otherSpec(name); ok || err != nil {
		return spec, err
	}
	m, ok := molecules[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("unknown dataset %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	name = strings.ToLower(name)
	vocab := m.atomVocab
	if SourceOf(dir, name) != SourcePyG {
		var err error
		if vocab, err = dictSize(filepath.Join(dir, name, m.dict), m.atomKey); err != nil {
			return nil, readFailed(dir, name, err)
		}
	}
	return &Spec{
		Name:      name,
		NodeVocab: vocab,
		EdgeVocab: m.bondVocab,
		EdgeConst: Row{Cat: []int32{0}},            // bond index 0, "no bond"
		CLSNode:   Row{Cat: []int32{int32(vocab)}}, // a fresh atom index
		LapQ:      m.lapQ,
	}, nil
}

// dictSize returns the number of entries of a JSON dictionary (or of its member key).
func dictSize(path, key string) (int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			dir, name := filepath.Split(filepath.Dir(path))
			return 0, fmt.Errorf("dictionary %s not found (%w): the data folder is incomplete; fetch the dataset's public distribution, read in place of its other files, with %s",
				path, fs.ErrNotExist, GetCommand(filepath.Clean(dir), name))
		}
		return 0, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return 0, fmt.Errorf("%s: malformed JSON: %w", path, err)
	}
	if key != "" {
		inner, ok := obj[key]
		if !ok {
			return 0, fmt.Errorf("%s: no key %q", path, key)
		}
		obj = nil
		if err := json.Unmarshal(inner, &obj); err != nil {
			return 0, fmt.Errorf("%s: key %q: malformed JSON object: %w", path, key, err)
		}
	}
	if len(obj) == 0 {
		return 0, fmt.Errorf("%s: empty dictionary", path)
	}
	return len(obj), nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
