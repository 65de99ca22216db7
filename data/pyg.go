package data

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rewiregnn/rewiregnn/pyfile"
)

// The public distributions (docs/datasets.md): the files PyTorch Geometric's ZINC, AQSOL,
// GNNBenchmarkDataset and LRGBDataset classes download, unpacked under <data>/<dataset>/pyg/
// (cmd/data fetches them). When present they are read instead of the folder's substitute files,
// except for Peptides-func, whose JSON Lines files come first (SourceOf); Peptides-struct has no
// other source.
const (
	SourcePyG       = "pyg"       // the public distribution's raw files, read natively
	SourceJSONL     = "jsonl"     // the JSON Lines files of the shared data folder (the molecules, Peptides-func)
	SourceSLIC      = "slic"      // superpixels computed here from the raw images
	SourceGenerated = "generated" // drawn from the dataset's recipe (CLUSTER, PATTERN, NeighborsMatch, Erdős–Rényi)
)

// pyg file layout under <data>/<dataset>/pyg
var pygFiles = map[string]func(split string) string{
	"zinc":    func(split string) string { return filepath.Join("molecules", split+".pickle") },
	"aqsol":   func(split string) string { return filepath.Join("asqol_graph_raw", split+".pickle") },
	"mnist":   func(string) string { return "MNIST_v2.pt" },
	"cifar10": func(string) string { return "CIFAR10_v2.pt" },

	"peptides-func":   peptidesFile("peptides-func"),
	"peptides-struct": peptidesFile("peptides-struct"),
}

// PyGDir is where a dataset's public distribution is unpacked inside the data folder.
func PyGDir(dir, name string) string { return filepath.Join(dir, strings.ToLower(name), "pyg") }

// SourceOf says which files LoadSplit reads for a dataset in dir: SourcePyG when the public
// distribution's training file is there, else the dataset's other source.
//
// Peptides-func is the exception: its JSON Lines files (SourceJSONL, <data>/peptides-func/
// train.jsonl.gz present) come first, before the public distribution. They are the files of the
// shared data folder, pinned by their SHA-256 sums (cmd/data list checks them), while the PyG
// archive has no published sum; so a folder that gains the archive later does not change the
// graphs its runs read. Without either it is SourcePyG (Peptides-struct always is), and
// LoadSplit's error names both places.
func SourceOf(dir, name string) string {
	name = strings.ToLower(name)
	if hasPeptidesJSONL(dir, name) {
		return SourceJSONL
	}
	if f, ok := pygFiles[name]; ok {
		if _, err := os.Stat(filepath.Join(PyGDir(dir, name), f("train"))); err == nil {
			return SourcePyG
		}
	}
	switch name {
	case "peptides-func", "peptides-struct":
		return SourcePyG
	case "zinc", "aqsol":
		return SourceJSONL
	case "mnist", "cifar10":
		return SourceSLIC
	}
	return SourceGenerated
}

// DescribeSource is a line for run logs: which files of dir a dataset is read from.
func DescribeSource(dir, name string) string {
	name = strings.ToLower(name)
	switch SourceOf(dir, name) {
	case SourcePyG:
		return fmt.Sprintf("%s from its public distribution in %s (exact)", name, PyGDir(dir, name))
	case SourceJSONL:
		if _, ok := peptides[name]; ok {
			return fmt.Sprintf("%s from the JSON Lines files in %s (built from LRGB's raw CSV and split with OGB's smiles2graph rules, RDKit 2022.09.3; read before the public distribution)", name, filepath.Join(dir, name))
		}
		return fmt.Sprintf("%s from the JSON Lines files in %s (see its README for which splits are exact)", name, filepath.Join(dir, name))
	case SourceSLIC:
		return fmt.Sprintf("%s superpixels computed here (SLIC) from the images in %s (approximate; `go run ./cmd/data get %s` fetches the exact graphs)", name, filepath.Join(dir, name), name)
	}
	return name + " generated from its recipe"
}

// LoadPublicSplit reads one split of a dataset's public distribution in dir/<name>/pyg, whatever
// SourceOf prefers (Peptides-func's JSON Lines files come first in LoadSplit): cmd/data checks
// the files it fetched with it, and the tests compare the two formats.
func LoadPublicSplit(dir, name, split string) ([]*Graph, *Spec, error) {
	spec, err := OpenSpec(dir, name)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := pygFiles[spec.Name]; !ok {
		return nil, nil, fmt.Errorf("%s has no public distribution", spec.Name)
	}
	if !contains(spec.Splits, split) {
		return nil, nil, fmt.Errorf("%s: unknown split %q (have %s)", spec.Name, split, strings.Join(spec.Splits, ", "))
	}
	gs, err := loadPyG(dir, spec, split)
	if err != nil {
		return nil, nil, err
	}
	return gs, spec, nil
}

// loadPyG reads one split of a dataset's public distribution.
func loadPyG(dir string, spec *Spec, split string) ([]*Graph, error) {
	path := filepath.Join(PyGDir(dir, spec.Name), pygFiles[spec.Name](split))
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if peptides[spec.Name].jsonl && !hasPeptidesJSONL(dir, spec.Name) {
			return nil, fmt.Errorf("%s: %s not found, nor the JSON Lines files (%s): copy them (train, val, test) into %s, or fetch the public distribution with `go run ./cmd/data get -data %s %s`",
				spec.Name, path, peptidesJSONLPath(dir, spec.Name, split), filepath.Join(dir, spec.Name), dir, spec.Name)
		}
		return nil, fmt.Errorf("%s: %s not found: fetch the public distribution with `go run ./cmd/data get -data %s %s`", spec.Name, path, dir, spec.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	switch spec.Name {
	case "peptides-func", "peptides-struct":
		return ReadPeptidesPT(path, raw, peptides[spec.Name].width, spec.Task == GraphMultiLabel)
	case "zinc":
		idx, err := readIndex(filepath.Join(PyGDir(dir, "zinc"), split+".index"))
		if err != nil {
			return nil, err
		}
		return ReadZINCPickle(path, raw, idx)
	case "aqsol":
		gs, _, err := ReadAQSOLPickle(path, raw)
		return gs, err
	}
	gs, err := ReadSuperpixelsPT(path, raw, split, len(spec.CLSNode.Float))
	if err != nil {
		return nil, err
	}
	for i, g := range gs {
		if int(g.Label) >= spec.Classes {
			return nil, fmt.Errorf("%s: %s graph %d: class %d outside the %d classes", path, split, i, g.Label, spec.Classes)
		}
	}
	return gs, nil
}

// readIndex reads a benchmarking-gnns subset index file: one line of comma-separated 0-based
// record numbers (the published files end in CRLF).
func readIndex(path string) ([]int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s not found: the ZINC subset needs the benchmark's index files (go run ./cmd/data get zinc)", path)
		}
		return nil, err
	}
	text := strings.TrimSpace(string(raw))
	if text == "" {
		return nil, fmt.Errorf("%s: empty index file", path)
	}
	fields := strings.Split(text, ",")
	idx := make([]int, len(fields))
	seen := make(map[int]bool, len(fields))
	for i, f := range fields {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s: entry %d %q is not a record number", path, i+1, f)
		}
		if seen[n] {
			return nil, fmt.Errorf("%s: entry %d repeats record %d", path, i+1, n)
		}
		seen[n] = true
		idx[i] = n
	}
	return idx, nil
}

// ReadZINCPickle reads benchmarking-gnns' ZINC molecule pickle (raw holds the file at path): a
// list of dicts with num_atom, atom_type (N atom type ids), bond_type (N×N bond types, 0 = no
// bond) and logP_SA_cycle_normalized (the target), as torch tensors. It keeps the records idx
// names, in idx's order (all of them for a nil idx). The edges are the nonzero entries of
// bond_type in row-major order, as PyG's ZINC class builds them. Errors name the file and record.
func ReadZINCPickle(path string, raw []byte, idx []int) ([]*Graph, error) {
	v, err := pyfile.Load(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	recs, err := pyfile.Items(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if idx == nil {
		idx = make([]int, len(recs))
		for i := range idx {
			idx[i] = i
		}
	}
	gs := make([]*Graph, len(idx))
	for k, i := range idx {
		if i >= len(recs) {
			return nil, fmt.Errorf("%s: the index names record %d, the file has %d", path, i, len(recs))
		}
		g, err := zincRecord(recs[i])
		if err != nil {
			return nil, fmt.Errorf("%s: record %d: %w", path, i, err)
		}
		gs[k] = g
	}
	return gs, nil
}

func zincRecord(rec any) (*Graph, error) {
	atoms, err := intField(rec, "atom_type")
	if err != nil {
		return nil, err
	}
	n := len(atoms.Int)
	if na, err := intField(rec, "num_atom"); err != nil || na.Len() != 1 || int(na.Int[0]) != n {
		return nil, fmt.Errorf("num_atom does not match the %d atom types (%v)", n, err)
	}
	bonds, err := intField(rec, "bond_type")
	if err != nil {
		return nil, err
	}
	if len(bonds.Shape) != 2 || bonds.Shape[0] != n || bonds.Shape[1] != n {
		return nil, fmt.Errorf("bond_type of shape %v, want [%d %d]", bonds.Shape, n, n)
	}
	yv, err := pyfile.Field(rec, "logP_SA_cycle_normalized")
	if err != nil {
		return nil, err
	}
	y, err := pyfile.AsFloat(yv)
	if err != nil {
		return nil, fmt.Errorf("logP_SA_cycle_normalized: %w", err)
	}
	g := &Graph{N: n, Node: Features{CatDim: 1}, Edge: Features{CatDim: 1}, Y: []float32{float32(y)}}
	vocab := molecules["zinc"]
	for i, t := range atoms.Int {
		if t < 0 || t >= int64(vocab.atomVocab) {
			return nil, fmt.Errorf("atom_type[%d] = %d outside the %d atom types", i, t, vocab.atomVocab)
		}
		g.Node.Cat = append(g.Node.Cat, int32(t))
	}
	for p, b := range bonds.Int {
		if b == 0 {
			continue
		}
		if b < 0 || b >= int64(vocab.bondVocab) {
			return nil, fmt.Errorf("bond_type[%d][%d] = %d outside the bond types 1..%d", p/n, p%n, b, vocab.bondVocab-1)
		}
		g.Src = append(g.Src, int32(p/n))
		g.Dst = append(g.Dst, int32(p%n))
		g.Edge.Cat = append(g.Edge.Cat, int32(b))
	}
	return g, g.Validate()
}

// AQSOLDropped counts the graphs ReadAQSOLPickle leaves out, by the benchmark loader's rules.
type AQSOLDropped struct {
	NoBonds       int // graphs without edges
	TrailingAtoms int // graphs whose last atoms are in no bond
}

// ReadAQSOLPickle reads benchmarking-gnns' AQSOL graph pickle: a list of tuples (x: atom ids,
// edge_attr: bond types, edge_index: 2×E, y: solubility) of numpy arrays. Like the benchmark's
// loader (and so with its 7831/996/996 graphs) it drops graphs without bonds and graphs whose
// highest bonded atom is not the last atom; PyG's AQSOL class drops only the former.
func ReadAQSOLPickle(path string, raw []byte) ([]*Graph, AQSOLDropped, error) {
	var dropped AQSOLDropped
	v, err := pyfile.Load(raw)
	if err != nil {
		return nil, dropped, fmt.Errorf("%s: %w", path, err)
	}
	recs, err := pyfile.Items(v)
	if err != nil {
		return nil, dropped, fmt.Errorf("%s: %w", path, err)
	}
	var gs []*Graph
	for i, rec := range recs {
		g, err := aqsolRecord(rec)
		if err != nil {
			return nil, dropped, fmt.Errorf("%s: record %d: %w", path, i, err)
		}
		switch {
		case g.NumEdges() == 0:
			dropped.NoBonds++
		case maxNode(g)+1 != g.N:
			dropped.TrailingAtoms++
		default:
			gs = append(gs, g)
		}
	}
	return gs, dropped, nil
}

func maxNode(g *Graph) int {
	m := -1
	for e := range g.Src {
		m = max(m, int(g.Src[e]), int(g.Dst[e]))
	}
	return m
}

func aqsolRecord(rec any) (*Graph, error) {
	items, err := pyfile.Items(rec)
	if err != nil || len(items) != 4 {
		return nil, fmt.Errorf("want a tuple (x, edge_attr, edge_index, y), got %s", pyfile.TypeName(rec))
	}
	x, err := pyfile.AsArray(items[0])
	if err != nil || x.IsFloat() || len(x.Shape) != 1 {
		return nil, fmt.Errorf("x: want a 1-d integer array, got %s", pyfile.TypeName(items[0]))
	}
	attr, err := pyfile.AsArray(items[1])
	if err != nil {
		return nil, fmt.Errorf("edge_attr: %w", err)
	}
	ei, err := pyfile.AsArray(items[2])
	if err != nil || len(ei.Shape) != 2 || ei.Shape[0] != 2 {
		return nil, fmt.Errorf("edge_index: want a 2×E array, got %s", pyfile.TypeName(items[2]))
	}
	y, err := pyfile.AsFloat(items[3])
	if err != nil {
		return nil, fmt.Errorf("y: %w", err)
	}
	e := ei.Shape[1]
	if attr.Len() != e || (e > 0 && (attr.IsFloat() || ei.IsFloat())) {
		return nil, fmt.Errorf("edge_attr %s and edge_index %s disagree or are not integers", pyfile.TypeName(items[1]), pyfile.TypeName(items[2]))
	}
	vocab := molecules["aqsol"]
	g := &Graph{N: len(x.Int), Node: Features{CatDim: 1}, Edge: Features{CatDim: 1}, Y: []float32{float32(y)}}
	for i, t := range x.Int {
		if t < 0 || t >= int64(vocab.atomVocab) {
			return nil, fmt.Errorf("x[%d] = %d outside the %d atom types", i, t, vocab.atomVocab)
		}
		g.Node.Cat = append(g.Node.Cat, int32(t))
	}
	for k := 0; k < e; k++ {
		s, d, b := ei.Int[k], ei.Int[e+k], attr.Int[k]
		if b < 0 || b >= int64(vocab.bondVocab) {
			return nil, fmt.Errorf("edge_attr[%d] = %d outside the %d bond types", k, b, vocab.bondVocab)
		}
		if s < 0 || d < 0 || s >= int64(g.N) || d >= int64(g.N) {
			return nil, fmt.Errorf("edge %d (%d→%d) outside the %d atoms", k, s, d, g.N)
		}
		g.Src = append(g.Src, int32(s))
		g.Dst = append(g.Dst, int32(d))
		g.Edge.Cat = append(g.Edge.Cat, int32(b))
	}
	return g, g.Validate()
}

// ReadSuperpixelsPT reads one split of PyG's MNIST_v2.pt or CIFAR10_v2.pt (raw holds the file at
// path): a torch.save of three lists (train, val, test) of dicts with x (mean intensity per
// channel), pos (centroid), edge_index (2×E, source first), edge_attr (kernel weight) and y (the
// class). Node features become (x…, pos…), nodeDim values per node, as the SLIC source builds
// them.
func ReadSuperpixelsPT(path string, raw []byte, split string, nodeDim int) ([]*Graph, error) {
	part := map[string]int{"train": 0, "val": 1, "test": 2}[split]
	v, err := pyfile.LoadTorch(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	splits, err := pyfile.Items(v)
	if err != nil || len(splits) != 3 {
		return nil, fmt.Errorf("%s: want three lists (train, val, test), got %s", path, pyfile.TypeName(v))
	}
	recs, err := pyfile.Items(splits[part])
	if err != nil {
		return nil, fmt.Errorf("%s: %s split: %w", path, split, err)
	}
	gs := make([]*Graph, len(recs))
	for i, rec := range recs {
		g, err := superpixelRecord(rec, nodeDim)
		if err != nil {
			return nil, fmt.Errorf("%s: %s graph %d: %w", path, split, i, err)
		}
		gs[i] = g
	}
	return gs, nil
}

func superpixelRecord(rec any, nodeDim int) (*Graph, error) {
	arr := func(key string) (*pyfile.Array, error) { return arrayField(rec, key) }
	x, err := arr("x")
	if err != nil {
		return nil, err
	}
	pos, err := arr("pos")
	if err != nil {
		return nil, err
	}
	n := 0
	if len(pos.Shape) == 2 && pos.Shape[1] == 2 {
		n = pos.Shape[0]
	}
	channels := nodeDim - 2
	if n == 0 || !pos.IsFloat() || !x.IsFloat() || x.Len() != n*channels {
		return nil, fmt.Errorf("x %v and pos %v: want %d channel values and 2 coordinates per node", x.Shape, pos.Shape, channels)
	}
	g := &Graph{N: n, Node: Features{FloatDim: nodeDim, Float: make([]float32, 0, n*nodeDim)}, Edge: Features{FloatDim: 1}}
	for i := 0; i < n; i++ {
		for c := 0; c < channels; c++ {
			g.Node.Float = append(g.Node.Float, float32(x.Float[i*channels+c]))
		}
		g.Node.Float = append(g.Node.Float, float32(pos.Float[2*i]), float32(pos.Float[2*i+1]))
	}
	ei, err := arr("edge_index")
	if err != nil {
		return nil, err
	}
	attr, err := arr("edge_attr")
	if err != nil {
		return nil, err
	}
	if len(ei.Shape) != 2 || ei.Shape[0] != 2 || ei.IsFloat() {
		return nil, fmt.Errorf("edge_index of shape %v, want 2×E integers", ei.Shape)
	}
	e := ei.Shape[1]
	if attr.Len() != e || !attr.IsFloat() {
		return nil, fmt.Errorf("edge_attr %v for %d edges", attr.Shape, e)
	}
	for k := 0; k < e; k++ {
		s, d := ei.Int[k], ei.Int[e+k]
		if s < 0 || d < 0 || s >= int64(n) || d >= int64(n) {
			return nil, fmt.Errorf("edge %d (%d→%d) outside the %d nodes", k, s, d, n)
		}
		g.Src = append(g.Src, int32(s))
		g.Dst = append(g.Dst, int32(d))
		g.Edge.Float = append(g.Edge.Float, float32(attr.Float[k]))
	}
	y, err := arr("y")
	if err != nil {
		return nil, err
	}
	if y.Len() != 1 || y.IsFloat() || y.Int[0] < 0 || y.Int[0] > math.MaxInt32 {
		return nil, fmt.Errorf("y: want one class id, got %v", y.Shape)
	}
	g.Label = int32(y.Int[0])
	return g, g.Validate()
}

// arrayField is the array under a record's key.
func arrayField(rec any, key string) (*pyfile.Array, error) {
	v, err := pyfile.Field(rec, key)
	if err != nil {
		return nil, err
	}
	a, err := pyfile.AsArray(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return a, nil
}

// intField is the integer array under a record's key.
func intField(rec any, key string) (*pyfile.Array, error) {
	a, err := arrayField(rec, key)
	if err != nil {
		return nil, err
	}
	if a.IsFloat() {
		return nil, fmt.Errorf("%s: %s values, want integers", key, a.DType)
	}
	return a, nil
}
