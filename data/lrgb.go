package data

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/rewiregnn/rewiregnn/pyfile"
)

// The Long Range Graph Benchmark's peptide datasets (Dwivedi et al., 2022; docs/datasets.md
// §"Peptides-func and Peptides-struct"), read from the files PyTorch Geometric's LRGBDataset
// downloads: each archive unpacks to a folder (peptidesfunc/, peptidesstruct/) of train.pt,
// val.pt and test.pt, LRGB's splits.

// OGB's categorical atom and bond features (ogb/utils/features.py: get_atom_feature_dims,
// get_bond_feature_dims), the columns of the peptides' x and edge_attr, in their order.
var (
	ogbAtomColumns = []string{"atomic_num", "chirality", "degree", "formal_charge", "num_h", "num_rad_e", "hybridization", "is_aromatic", "is_in_ring"}
	ogbAtomVocabs  = []int{119, 5, 12, 12, 10, 6, 6, 2, 2}
	ogbBondColumns = []string{"bond_type", "bond_stereo", "is_conjugated"}
	ogbBondVocabs  = []int{5, 6, 2}
)

// OGBAtomVocabs returns OGB's atom feature vocabularies (get_atom_feature_dims).
func OGBAtomVocabs() []int { return append([]int(nil), ogbAtomVocabs...) }

// OGBBondVocabs returns OGB's bond feature vocabularies (get_bond_feature_dims).
func OGBBondVocabs() []int { return append([]int(nil), ogbBondVocabs...) }

// peptides are the two datasets: the folder their archive unpacks to, the width of y (labels
// or targets, as the registry's task says), and whether the data folder may hold them as JSON Lines (<data>/<name>/<split>.jsonl.gz,
// lrgb_jsonl.go). Peptides-struct has no JSON Lines files: its targets were not obtainable.
var peptides = map[string]struct {
	folder string
	width  int
	jsonl  bool
}{
	"peptides-func":   {folder: "peptidesfunc", width: 10, jsonl: true},
	"peptides-struct": {folder: "peptidesstruct", width: 11},
}

// peptidesSpec describes a peptide dataset. Each atom and bond column keeps OGB's vocabulary;
// the CLS node takes the fresh id vocab_c in every atom column, and the edges rewiring adds
// (C_e) the fresh id vocab_c in every bond column, so EdgeVocabs counts one more id per
// column than OGB. LapQ is 8, ZINC's (the molecule setting of the paper).
func peptidesSpec(name string) *Spec {
	p := peptides[name]
	spec := &Spec{
		Name: name, NodeVocabs: OGBAtomVocabs(), LapQ: 8,
		CLSNode: Row{Cat: freshIDs(ogbAtomVocabs)}, EdgeConst: Row{Cat: freshIDs(ogbBondVocabs)},
	}
	for _, v := range ogbBondVocabs {
		spec.EdgeVocabs = append(spec.EdgeVocabs, v+1)
	}
	if d, _, _ := LookupDataset(name); d.Task == GraphMultiLabel {
		spec.Classes = p.width
	} else {
		spec.Targets = p.width
	}
	return spec
}

// freshIDs is the row whose column c holds the id vocabs[c], one past the column's vocabulary.
func freshIDs(vocabs []int) []int32 {
	row := make([]int32, len(vocabs))
	for c, v := range vocabs {
		row[c] = int32(v)
	}
	return row
}

// peptidesFile is where one split of a peptide dataset lies under its pyg folder.
func peptidesFile(name string) func(split string) string {
	return func(split string) string { return filepath.Join(peptides[name].folder, split+".pt") }
}

// peptidesJSONLPath is where one split of a peptide dataset lies as JSON Lines in the data
// folder dir.
func peptidesJSONLPath(dir, name, split string) string {
	return filepath.Join(dir, name, split+".jsonl.gz")
}

// hasPeptidesJSONL reports whether dir holds a peptide dataset as JSON Lines: the dataset takes
// them and its training split is there.
func hasPeptidesJSONL(dir, name string) bool {
	if !peptides[name].jsonl {
		return false
	}
	_, err := os.Stat(peptidesJSONLPath(dir, name, "train"))
	return err == nil
}

// loadPeptidesJSONL reads one split of a peptide dataset's JSON Lines files, the first limit
// graphs only when limit > 0.
func loadPeptidesJSONL(dir string, spec *Spec, split string, limit int) ([]*Graph, error) {
	path := peptidesJSONLPath(dir, spec.Name, split)
	gs, err := readPeptidesJSONLFile(path, peptides[spec.Name].width, spec.Task == GraphMultiLabel, limit)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %s not found (%w), though %s is there (the JSON Lines files are read when the training split is present): %s",
			spec.Name, path, fs.ErrNotExist, peptidesJSONLPath(dir, spec.Name, "train"), refetch(dir, spec.Name))
	}
	return gs, err
}

// ReadPeptidesPT reads one split file of LRGB's Peptides-func or Peptides-struct (raw holds the
// file at path): a torch.save of a list of tuples (x, edge_attr, edge_index, y) with x the
// atoms' OGB features (integers, N×9), edge_attr the bonds' (integers, E×3), edge_index 2×E
// (each bond both ways) and y 1×width (width 10 for func, whose labels are 0, 1 or NaN for
// missing, when labels is set; 11 finite targets for struct). Every id is checked against its
// column's OGB vocabulary and every edge against the atoms; errors name the file, the graph and
// the field.
func ReadPeptidesPT(path string, raw []byte, width int, labels bool) ([]*Graph, error) {
	v, err := pyfile.LoadTorch(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	recs, err := pyfile.Items(v)
	if err != nil {
		return nil, fmt.Errorf("%s: want a list of graphs: %w", path, err)
	}
	gs := make([]*Graph, len(recs))
	for i, rec := range recs {
		g, err := peptideRecord(rec, width, labels)
		if err != nil {
			return nil, fmt.Errorf("%s: graph %d: %w", path, i, err)
		}
		gs[i] = g
	}
	return gs, nil
}

func peptideRecord(rec any, width int, labels bool) (*Graph, error) {
	items, err := pyfile.Items(rec)
	if err != nil || len(items) != 4 {
		return nil, fmt.Errorf("want a tuple (x, edge_attr, edge_index, y), got %s", pyfile.TypeName(rec))
	}
	x, err := idMatrix(items[0], "x", -1, ogbAtomColumns, ogbAtomVocabs)
	if err != nil {
		return nil, err
	}
	if len(x) == 0 {
		return nil, errNoAtoms
	}
	ei, err := pyfile.AsArray(items[2])
	if err != nil || len(ei.Shape) != 2 || ei.Shape[0] != 2 || (ei.IsFloat() && ei.Len() > 0) {
		return nil, fmt.Errorf("edge_index: want a 2×E integer tensor, got %s", pyfile.TypeName(items[2]))
	}
	e := ei.Shape[1]
	attr, err := idMatrix(items[1], "edge_attr", e, ogbBondColumns, ogbBondVocabs)
	if err != nil {
		return nil, err
	}
	src, dst, err := peptideEdges(ei.Int[:e], ei.Int[e:2*e], len(x)/len(ogbAtomVocabs))
	if err != nil {
		return nil, fmt.Errorf("edge_index: %w", err)
	}
	y, err := peptideTargets(items[3], width, labels)
	if err != nil {
		return nil, err
	}
	return newPeptide(x, attr, src, dst, y)
}

var errNoAtoms = errors.New("x: no atoms")

// newPeptide assembles a peptide graph from its checked parts (x: N rows of the atom columns,
// attr: E rows of the bond columns, the E edges, y) and validates it; both readers build their
// graphs here, so the two formats give identical graphs.
func newPeptide(x, attr, src, dst []int32, y []float32) (*Graph, error) {
	n := len(x) / len(ogbAtomVocabs)
	if n == 0 {
		return nil, errNoAtoms
	}
	g := &Graph{N: n, Node: Features{CatDim: len(ogbAtomVocabs), Cat: x}, Edge: Features{CatDim: len(ogbBondVocabs), Cat: attr},
		Src: src, Dst: dst, Y: y}
	return g, g.Validate()
}

// peptideEdges checks the edges src[k]→dst[k] against the n atoms and returns them as int32.
func peptideEdges(src, dst []int64, n int) ([]int32, []int32, error) {
	s32, d32 := make([]int32, len(src)), make([]int32, len(src))
	for k := range src {
		s, d := src[k], dst[k]
		if s < 0 || d < 0 || s >= int64(n) || d >= int64(n) {
			return nil, nil, fmt.Errorf("edge %d (%d→%d) outside the %d atoms", k, s, d, n)
		}
		s32[k], d32[k] = int32(s), int32(d)
	}
	return s32, d32, nil
}

// idMatrix reads a rows×len(vocabs) integer tensor of categorical ids (rows < 0: any number of
// rows), each column c within [0, vocabs[c]). An empty tensor may have any element type (the
// bond arrays of a molecule without bonds).
func idMatrix(v any, field string, rows int, columns []string, vocabs []int) ([]int32, error) {
	a, err := pyfile.AsArray(v)
	cols := len(vocabs)
	if err != nil || len(a.Shape) != 2 || a.Shape[1] != cols || (rows >= 0 && a.Shape[0] != rows) || (a.IsFloat() && a.Len() > 0) {
		want := fmt.Sprintf("N×%d", cols)
		if rows >= 0 {
			want = fmt.Sprintf("%d×%d", rows, cols)
		}
		return nil, fmt.Errorf("%s: want a %s integer tensor, got %s", field, want, pyfile.TypeName(v))
	}
	return ogbIDs(field, a.Int, columns, vocabs)
}

// ogbIDs checks row-major categorical ids, len(vocabs) per row, against their columns'
// vocabularies (column c takes ids 0..vocabs[c]-1) and returns them as int32; an error names the
// field, the row, the column and the vocabulary.
func ogbIDs(field string, vals []int64, columns []string, vocabs []int) ([]int32, error) {
	cols := len(vocabs)
	ids := make([]int32, len(vals))
	for i, id := range vals {
		c := i % cols
		if id < 0 || id >= int64(vocabs[c]) {
			return nil, fmt.Errorf("%s[%d][%d] = %d: %s takes ids 0..%d (OGB)", field, i/cols, c, id, columns[c], vocabs[c]-1)
		}
		ids[i] = int32(id)
	}
	return ids, nil
}

// peptideTargets reads y: width numbers as a 1×width (or flat) tensor, checked by
// peptideValues.
func peptideTargets(v any, width int, labels bool) ([]float32, error) {
	a, err := pyfile.AsArray(v)
	if err != nil || a.Len() != width || !(len(a.Shape) == 1 || (len(a.Shape) == 2 && a.Shape[0] == 1)) {
		return nil, fmt.Errorf("y: want a 1×%d tensor, got %s", width, pyfile.TypeName(v))
	}
	vals := make([]float64, width)
	for k := range vals {
		if a.IsFloat() {
			vals[k] = a.Float[k]
		} else {
			vals[k] = float64(a.Int[k])
		}
	}
	return peptideValues(vals, labels)
}

// peptideValues checks a graph's targets: binary labels (0, 1, or NaN for a missing label) when
// labels is set, finite numbers otherwise.
func peptideValues(vals []float64, labels bool) ([]float32, error) {
	y := make([]float32, len(vals))
	for k, f := range vals {
		switch {
		case labels && !(f == 0 || f == 1 || math.IsNaN(f)):
			return nil, fmt.Errorf("y[%d] = %g: want a label 0 or 1 (NaN or null: missing)", k, f)
		case !labels && (math.IsNaN(f) || math.IsInf(f, 0)):
			return nil, fmt.Errorf("y[%d] = %g: want a finite target", k, f)
		}
		y[k] = float32(f)
	}
	return y, nil
}
